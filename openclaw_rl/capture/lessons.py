"""Lessons: the accepted hindsight hints of the store, de-duplicated, each with the turns it came from.

When the hint judge (OPD, Combine) accepts a hint for a turn, the store files it here in the
same transaction as the judgement (:func:`add_hint`). Two hints that differ only in case,
spacing or trailing punctuation are one lesson (:func:`lesson_key`); each lesson keeps its source
turns (table ``lesson_sources``). A person can list, edit and delete lessons
(:class:`LessonBook`: ``GET/PATCH/DELETE /admin/lessons``, ``openclaw-rl lessons``):

* an edited lesson's text is the hint of its source turns when they are trained (the teacher
  prompt is rendered again from it, :mod:`openclaw_rl.rollout.feedback`);
* a deleted lesson is no longer a hint: its source turns train without it (OPD: no teacher, so no
  gradient; Combine: the RL branch only). Its row stays, text emptied, so the same hint arriving
  again stays deleted (its key is a SHA-256, not the text).

``--inject-lessons N`` (server) adds the top N lessons (most source turns first) to the system
prompt of served requests (:class:`LessonPrompt`), so a lesson takes effect before the weights
learn it. The recorded turn holds the prompt as served (lessons included: token in, token out);
when the list changes mid-conversation the next turn's prefix differs there (``prefix_ok``).
"""

from __future__ import annotations

import hashlib
import logging
import re
import sqlite3
import threading
import time
from dataclasses import dataclass, field

__all__ = ["LESSONS_HEADER", "LESSONS_REFRESH_S", "Lesson", "LessonBook", "LessonNotFound", "LessonPrompt", "add_hint", "lesson_key"]

#: the line that introduces the injected lessons in the system prompt
LESSONS_HEADER = "Lessons from earlier conversations with this user:"


log = logging.getLogger(__name__)


class LessonNotFound(LookupError):
    """No lesson with that id (never made, deleted or forgotten)."""


@dataclass
class Lesson:
    """One lesson: ``id``, ``text``, the source ``turn_ids`` (store row ids) and their ``turn_uids``,
    ``created_at`` / ``updated_at`` (UNIX seconds), ``edited`` (a person changed the text)."""

    id: int
    text: str
    created_at: float
    updated_at: float
    edited: bool = False
    turn_ids: list[int] = field(default_factory=list)
    turn_uids: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        """The JSON object of the API (``"object": "lesson"``)."""
        return {"object": "lesson", "id": self.id, "text": self.text, "created_at": self.created_at,
                "updated_at": self.updated_at, "edited": self.edited, "sources": len(self.turn_ids),
                "turn_ids": self.turn_uids}


def lesson_key(text: str) -> str:
    """The de-duplication key of a hint: SHA-256 of its text lower-cased, whitespace collapsed,
    trailing punctuation and surrounding quotes removed."""
    norm = re.sub(r"\s+", " ", text.strip().lower()).strip(" \"'`").rstrip(" .!;:")
    return hashlib.sha256(norm.encode("utf-8")).hexdigest()


def add_hint(db: sqlite3.Connection, turn_id: int, hint: str) -> int | None:
    """File an accepted hint of ``turn_id`` as a lesson, inside the caller's transaction ``db``.

    Returns:
        The lesson id (new, or the existing lesson with the same key), or None for an empty hint.
    """
    if not hint.strip():
        return None
    now = time.time()
    key = lesson_key(hint)
    db.execute("INSERT INTO lessons(key, text, created_at, updated_at) VALUES (?, ?, ?, ?) "
               "ON CONFLICT(key) DO NOTHING", (key, hint.strip(), now, now))
    (lesson_id,) = db.execute("SELECT id FROM lessons WHERE key=?", (key,)).fetchone()
    db.execute("INSERT OR IGNORE INTO lesson_sources(lesson_id, turn_id) VALUES (?, ?)", (lesson_id, turn_id))
    return int(lesson_id)


class LessonBook:
    """List, edit and delete the lessons of a :class:`openclaw_rl.capture.store.TrajectoryStore`.

    Args:
        store: the trajectory store (its ``transaction()`` and ``read()``).
    """

    def __init__(self, store):
        self.store = store

    def _sources(self, lesson_ids: list[int]) -> dict[int, list[tuple[int, str]]]:
        if not lesson_ids:
            return {}
        marks = ",".join("?" for _ in lesson_ids)
        rows = self.store.read(f"SELECT s.lesson_id, s.turn_id, t.turn_uid FROM lesson_sources s JOIN turns t "
                               f"ON t.id = s.turn_id WHERE s.lesson_id IN ({marks}) ORDER BY s.turn_id", lesson_ids)
        out: dict[int, list[tuple[int, str]]] = {}
        for r in rows:
            out.setdefault(r[0], []).append((r[1], r[2]))
        return out

    def list(self, limit: int | None = None) -> list[Lesson]:
        """The live (not deleted) lessons, most source turns first, then newest; at most ``limit``."""
        rows = self.store.read("SELECT l.*, (SELECT COUNT(*) FROM lesson_sources s WHERE s.lesson_id = l.id) AS n "
                               "FROM lessons l WHERE l.deleted = 0 ORDER BY n DESC, l.id DESC"
                               + (" LIMIT ?" if limit else ""), (limit,) if limit else ())
        sources = self._sources([r["id"] for r in rows])
        return [Lesson(r["id"], r["text"], r["created_at"], r["updated_at"], bool(r["edited"]),
                       [s[0] for s in sources.get(r["id"], [])], [s[1] for s in sources.get(r["id"], [])])
                for r in rows]

    def get(self, lesson_id: int) -> Lesson:
        """One live lesson.

        Raises:
            LessonNotFound: no such lesson, or it was deleted.
        """
        found = [x for x in self.list() if x.id == int(lesson_id)]
        if not found:
            raise LessonNotFound(f"no lesson {lesson_id} (never made, deleted or forgotten)")
        return found[0]

    def edit(self, lesson_id: int, text: str) -> Lesson:
        """Replace a lesson's text (its source turns are hinted with it from now on).

        Raises:
            ValueError: empty text. LessonNotFound: no live lesson ``lesson_id``.
        """
        if not text or not text.strip():
            raise ValueError("a lesson's text must not be empty (delete the lesson instead)")
        with self.store.transaction() as db:
            cur = db.execute("UPDATE lessons SET text=?, updated_at=?, edited=1 WHERE id=? AND deleted=0",
                             (text.strip(), time.time(), int(lesson_id)))
            if cur.rowcount != 1:
                raise LessonNotFound(f"no lesson {lesson_id} (never made, deleted or forgotten)")
        return self.get(lesson_id)

    def delete(self, lesson_id: int) -> None:
        """Delete a lesson: no longer a hint for its source turns (module docstring).

        Raises:
            LessonNotFound: no live lesson ``lesson_id`` (a second delete of the same one, too).
        """
        with self.store.transaction() as db:
            cur = db.execute("UPDATE lessons SET text='', updated_at=?, deleted=1 WHERE id=? AND deleted=0",
                             (time.time(), int(lesson_id)))
            if cur.rowcount != 1:
                raise LessonNotFound(f"no lesson {lesson_id} (never made, already deleted or forgotten)")

    def hint_of_turn(self, turn_id: int) -> tuple[bool, str | None]:
        """The lesson state of a turn's hint: ``(filed, text)``. ``filed`` False: the turn's hint
        was never filed as a lesson (use the judge's hint as it is); ``text`` None: its lesson
        was deleted (no hint); else the lesson's current text."""
        rows = self.store.read("SELECT l.text, l.deleted FROM lesson_sources s JOIN lessons l ON l.id = s.lesson_id "
                               "WHERE s.turn_id=? ORDER BY l.id", (int(turn_id),))
        if not rows:
            return False, None
        live = [r[0] for r in rows if not r[1]]
        return True, (live[0] if live else None)

    def top_texts(self, n: int) -> list[str]:
        """The texts of the top ``n`` live lessons (most source turns first)."""
        return [x.text for x in self.list(limit=n)] if n > 0 else []


#: seconds a served prompt may use a lesson list read earlier (lessons written by another process,
#: such as the trainer's judge, take effect within this)
LESSONS_REFRESH_S = 5.0


class LessonPrompt:
    """``--inject-lessons N``: the top ``n`` lessons added to a request's system prompt.

    Args:
        book: the :class:`LessonBook`. n: how many lessons (0: none, nothing is read).
        refresh_s: the list is read from the store at most this often (a failing store keeps the
            last list: serving never fails for it).
    """

    def __init__(self, book: LessonBook, n: int, refresh_s: float = LESSONS_REFRESH_S):
        self.book, self.n, self.refresh_s = book, int(n), refresh_s
        self._texts: list[str] = []
        self._read_at = -float("inf")
        self._lock = threading.Lock()

    def texts(self) -> list[str]:
        """The current top lessons (cached for ``refresh_s``)."""
        if self.n <= 0:
            return []
        with self._lock:
            if time.monotonic() - self._read_at >= self.refresh_s:
                try:
                    self._texts = self.book.top_texts(self.n)
                except (sqlite3.Error, OSError) as exc:
                    log.warning("lessons: the store failed (%s); keeping the last list", exc)
                self._read_at = time.monotonic()
            return list(self._texts)

    def refresh(self) -> None:
        """Read the list again on the next request (a lesson was edited or deleted here)."""
        with self._lock:
            self._read_at = -float("inf")

    def apply(self, messages: list[dict]) -> list[dict]:
        """``messages`` (chat-template dicts) with the lessons appended to the first system
        message, or in a new system message first; unchanged without lessons."""
        texts = self.texts()
        if not texts:
            return messages
        block = LESSONS_HEADER + "\n" + "\n".join(f"- {t}" for t in texts)
        out = [dict(m) for m in messages]
        if out and out[0].get("role") == "system" and isinstance(out[0].get("content"), str):
            out[0]["content"] = f"{out[0]['content']}\n\n{block}"
        else:
            out.insert(0, {"role": "system", "content": block})
        return out
