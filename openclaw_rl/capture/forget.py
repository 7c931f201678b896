"""Forgetting conversations: delete them from the store and their bytes from the disk.

:func:`forget` deletes the chosen sessions' turns, judgements, hints (the judgements' details),
lessons made from their hints, explicit feedback and continuation fingerprints in one
transaction. The store runs with ``PRAGMA secure_delete=ON`` (deleted cells are overwritten with
zeros); afterwards the write-ahead log is checkpointed and truncated, the database is rebuilt
(``VACUUM``) and the log truncated again, so no page of the old rows is left in
``trajectories.sqlite`` or its ``-wal`` file. Any other file under the buffer folder (exports,
JSON Lines, logs) has the lines of the forgotten sessions removed: a JSON line with a
``session_id`` (an export) when it is one of theirs, any other line when it holds one of their
ids, completion ids or texts (system prompts excepted: many sessions share them); a binary file
that holds one is reported as not scrubbed.

The run's log folders (``log_dirs``: the server's ``--run-log-dir``, by default its
``--metrics-dir``, the training job's ``--log-dir``) get the same treatment for their log files
(:data:`LOG_SUFFIXES`, searched recursively): the trainer's lines name turns by their session id
(``user-54:1: degenerate reply (over_application: 'blue')``) and quote words of replies, and the
server's access log names turns in ``/v1/feedback/<turn id>``. Those files are open for appending
by the processes writing them (``run.log``, ``server-<port>.log``), so they are rewritten in
place: the kept lines written from the start, the old bytes after them overwritten with zeros,
then the file truncated; a writer that opened it for appending goes on writing at its new end.

Turns still waiting to be trained are simply gone (pending samples dropped); turns in the train
step running now (``claimed``) may still reach the next version (``in_training``). The report
names the published weight versions trained on the forgotten turns: every version served at or
after the first time one of them was trained (each later version descends from those weights),
and ``rollback_to``, the newest version served before that, where serving (and, through the
existing rollback, training: :meth:`slime.orchestration.publish.Publisher.before_step`) can go back.

A request of a forgotten session still running is not recorded when it ends (the ``forgotten``
table keeps the SHA-256 of the session id and when, never the id: :mod:`openclaw_rl.capture.store`).
A client that later sends the whole forgotten history again starts a new conversation with it.

``openclaw-rl forget --session ID | --before DATE | --all`` and ``POST /admin/forget`` call it.
"""

from __future__ import annotations

import datetime as _dt
import json
import logging
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from openclaw_rl.capture.records import CLAIMED, TRAINED
from openclaw_rl.capture.store import session_key

__all__ = ["LOG_SUFFIXES", "ForgetReport", "forget", "parse_before", "select_sessions"]

log = logging.getLogger(__name__)

_DB_SUFFIXES = ("", "-wal", "-shm", "-journal")
#: shortest text of a forgotten turn searched for in the other files of the buffer folder
_MIN_NEEDLE = 12
#: the files of a run's log folder that forget reads (checkpoints and event files are never read)
LOG_SUFFIXES = (".log", ".out", ".err", ".txt", ".jsonl")


@dataclass
class ForgetReport:
    """What :func:`forget` did.

    Attributes:
        sessions: how many sessions were forgotten. turns, judgements, feedback, lessons: rows
        deleted. pending_dropped: turns not trained yet (they never will be). in_training: turns
        in the train step running now. trained: turns already trained. versions_trained_on:
        published versions (newest first) that may contain them. rollback_to: the newest version
        served before the first of those (None when none was trained or no version precedes).
        files_rewritten / files_not_scrubbed: other files of the buffer folder (relative paths).
        logs_rewritten: log files of the run's log folders (absolute paths).
        scrubbed: the database and its log were rebuilt and truncated (False: another connection
        kept the log busy; the rows are deleted and overwritten all the same).
    """

    sessions: int = 0
    turns: int = 0
    judgements: int = 0
    feedback: int = 0
    lessons: int = 0
    pending_dropped: int = 0
    in_training: int = 0
    trained: int = 0
    versions_trained_on: list[int] = field(default_factory=list)
    rollback_to: int | None = None
    files_rewritten: list[str] = field(default_factory=list)
    files_not_scrubbed: list[str] = field(default_factory=list)
    logs_rewritten: list[str] = field(default_factory=list)
    scrubbed: bool = False
    rolled_back: int | None = None

    def to_json(self) -> dict:
        """The report as a JSON object (``"object": "forget_report"``)."""
        return {"object": "forget_report", **asdict(self)}

    def lines(self) -> list[str]:
        """A few plain lines for the command line."""
        out = [f"forgot {self.sessions} session(s): {self.turns} turn(s), {self.judgements} judgement(s), "
               f"{self.feedback} rating(s), {self.lessons} lesson(s); {self.pending_dropped} pending turn(s) dropped"]
        if self.trained or self.in_training:
            versions = ", ".join(map(str, self.versions_trained_on)) or "none published yet"
            out.append(f"{self.trained} turn(s) were already trained (+{self.in_training} in the step running now); "
                       f"weight versions trained on them: {versions}")
            if self.rolled_back is not None:
                out.append(f"rolled back: serving weight version {self.rolled_back}")
            elif self.rollback_to is not None and self.versions_trained_on:
                out.append(f"the last version trained before them: {self.rollback_to} (--rollback serves it again)")
        if self.files_rewritten:
            out.append(f"rewrote {len(self.files_rewritten)} file(s): {', '.join(self.files_rewritten)}")
        if self.logs_rewritten:
            out.append(f"removed their lines from {len(self.logs_rewritten)} log file(s): "
                       f"{', '.join(self.logs_rewritten)}")
        if self.files_not_scrubbed:
            out.append(f"WARNING: binary file(s) still mention them: {', '.join(self.files_not_scrubbed)}")
        if not self.scrubbed:
            out.append("WARNING: the database log was busy; run forget again to rebuild it")
        return out


def parse_before(text: str) -> float:
    """UNIX seconds of an ISO date or date-time (``2026-12-01``, ``2026-12-01T10:00``; UTC unless
    it names a zone).

    Raises:
        ValueError: not an ISO date.
    """
    try:
        when = _dt.datetime.fromisoformat(text.strip())
    except ValueError:
        raise ValueError(f"--before {text!r} is not an ISO date (e.g. 2026-12-01 or 2026-12-01T10:00)") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=_dt.timezone.utc)
    return when.timestamp()


def select_sessions(store, session: str | None = None, before: float | None = None, everything: bool = False) -> list[str]:
    """The session ids to forget: one ``session``, those started before ``before`` (UNIX seconds),
    or ``everything``; exactly one must be given.

    Raises:
        ValueError: none or several of them. LookupError: ``session`` is not in the store.
    """
    if sum(x is not None and x is not False for x in (session, before, everything)) != 1:
        raise ValueError("give exactly one of --session ID, --before DATE, --all")
    if session is not None:
        rows = store.read("SELECT session_id FROM sessions WHERE session_id=?", (session,))
        if not rows:
            raise LookupError(f"no session {session!r} in the store (never recorded, or already forgotten)")
        return [session]
    if before is not None:
        return [r[0] for r in store.read("SELECT session_id FROM sessions WHERE created_at < ? ORDER BY created_at",
                                         (before,))]
    return [r[0] for r in store.read("SELECT session_id FROM sessions ORDER BY created_at")]


def _needles(store, sessions: list[str]) -> list[bytes]:
    """Byte strings that identify the sessions' content: ids, completion ids, reply and message texts."""
    out = {s.encode() for s in sessions if len(s) >= 4}
    for sid in sessions:
        for r in store.read("SELECT completion_id, response_text, messages_json FROM turns WHERE session_id=?", (sid,)):
            if r[0]:
                out.add(r[0].encode())
            if r[1] and len(r[1].strip()) >= _MIN_NEEDLE:
                out.add(r[1].strip().encode())
            for m in json.loads(r[2] or "[]"):
                content = m.get("content") if m.get("role") != "system" else None  # shared by many sessions
                if isinstance(content, str) and len(content.strip()) >= _MIN_NEEDLE:
                    out.add(content.strip().encode())
    return sorted(out, key=len)


def _chunks(ids: list, n: int = 500):
    for i in range(0, len(ids), n):
        yield ids[i:i + n]


def _delete(store, sessions: list[str], report: ForgetReport) -> None:
    now = time.time()
    with store.transaction() as db:
        for chunk in _chunks(sessions):
            marks = ",".join("?" for _ in chunk)
            ids = [r[0] for r in db.execute(f"SELECT id FROM turns WHERE session_id IN ({marks})", chunk)]
            for ids_chunk in _chunks(ids):
                im = ",".join("?" for _ in ids_chunk)
                lessons = [r[0] for r in db.execute(f"SELECT DISTINCT lesson_id FROM lesson_sources WHERE turn_id IN ({im})",
                                                    ids_chunk)]
                if lessons:
                    lm = ",".join("?" for _ in lessons)
                    db.execute(f"DELETE FROM lesson_sources WHERE lesson_id IN ({lm})", lessons)
                    report.lessons += db.execute(f"DELETE FROM lessons WHERE id IN ({lm})", lessons).rowcount
                report.feedback += db.execute(f"DELETE FROM feedback WHERE turn_id IN ({im})", ids_chunk).rowcount
                report.judgements += db.execute(f"DELETE FROM judgements WHERE turn_id IN ({im})", ids_chunk).rowcount
            db.execute(f"DELETE FROM continuations WHERE session_id IN ({marks})", chunk)
            report.turns += db.execute(f"DELETE FROM turns WHERE session_id IN ({marks})", chunk).rowcount
            report.sessions += db.execute(f"DELETE FROM sessions WHERE session_id IN ({marks})", chunk).rowcount
            db.executemany("INSERT OR REPLACE INTO forgotten VALUES (?, ?)", [(session_key(s), now) for s in chunk])


def _trained_versions(store, sessions: list[str], report: ForgetReport) -> None:
    first: float | None = None
    for chunk in _chunks(sessions):
        marks = ",".join("?" for _ in chunk)
        for status, trained_at, created_at in store.read(
                f"SELECT status, trained_at, created_at FROM turns WHERE session_id IN ({marks}) AND turn_type='main'",
                chunk):
            if status == TRAINED:
                report.trained += 1
                when = trained_at if trained_at is not None else created_at  # older stores: as early as possible
                first = when if first is None else min(first, when)
            elif status == CLAIMED:
                report.in_training += 1
            elif status not in ("held_out", "skipped"):
                report.pending_dropped += 1
    if first is None:
        return
    versions = store.versions()
    report.versions_trained_on = [r["version"] for r in versions if r["version"] > 0 and r["served_at"] >= first]
    before = [r["version"] for r in versions if r["version"] == 0 or r["served_at"] < first]
    report.rollback_to = max(before) if before else None


def _forgotten_line(line: bytes, sessions: set[str], needles: list[bytes]) -> bool:
    """Whether a line of another file belongs to the forgotten sessions: a JSON object with a
    ``session_id`` is judged by it; any other line by the forgotten texts it contains."""
    try:
        obj = json.loads(line)
    except ValueError:
        obj = None
    if isinstance(obj, dict) and isinstance(obj.get("session_id"), str):
        return obj["session_id"] in sessions
    return any(n in line for n in needles)


def _kept(data: bytes, sessions: set[str], needles: list[bytes]) -> bytes:
    """``data`` without the lines of the forgotten sessions."""
    return b"".join(line for line in data.splitlines(keepends=True) if not _forgotten_line(line, sessions, needles))


def _scrub_files(folder: Path, db_path: Path, sessions: list[str], needles: list[bytes],
                 report: ForgetReport) -> None:
    skip = {Path(str(db_path) + s).resolve() for s in _DB_SUFFIXES}
    wanted = set(sessions)
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and not p.is_symlink()):
        if path.resolve() in skip:
            continue
        try:
            data = path.read_bytes()
        except OSError:
            continue
        if not any(n in data for n in needles):
            continue
        rel = str(path.relative_to(folder))
        if b"\0" in data[:8192]:
            report.files_not_scrubbed.append(rel)
            continue
        kept = _kept(data, wanted, needles)
        if len(kept) == len(data):
            continue
        tmp = path.with_name(path.name + ".forget-tmp")
        tmp.write_bytes(kept)
        tmp.replace(path)
        report.files_rewritten.append(rel)


def _scrub_logs(log_dirs, buffer_dir: Path, sessions: list[str], needles: list[bytes], report: ForgetReport) -> None:
    """Remove the forgotten sessions' lines from the log files of ``log_dirs`` in place (module
    docstring); the buffer folder, done already, is skipped."""
    wanted, inside = set(sessions), Path(buffer_dir).resolve()
    seen: set[Path] = set()
    for folder in log_dirs:
        folder = Path(folder)
        if not folder.is_dir():
            continue
        for path in sorted(p for p in folder.rglob("*") if p.suffix in LOG_SUFFIXES and p.is_file()
                           and not p.is_symlink()):
            real = path.resolve()
            if real in seen or real.is_relative_to(inside):
                continue
            seen.add(real)
            try:
                with open(real, "r+b") as f:
                    data = f.read()
                    if not any(n in data for n in needles):
                        continue
                    kept = _kept(data, wanted, needles)
                    if len(kept) == len(data):
                        continue
                    f.seek(0)
                    f.write(kept + b"\0" * (len(data) - len(kept)))  # the old bytes overwritten, not only freed
                    f.flush()
                    os.fsync(f.fileno())
                    f.truncate(len(kept))
            except OSError as exc:
                log.warning("forget: could not rewrite %s: %s", real, exc)
                continue
            report.logs_rewritten.append(str(real))


def forget(store, sessions: list[str], log_dirs=()) -> ForgetReport:
    """Forget ``sessions`` (module docstring); returns the :class:`ForgetReport`.

    Args:
        store: the trajectory store. sessions: the session ids (:func:`select_sessions`).
        log_dirs: the run's log folders, whose log files lose the sessions' lines too.

    Raises:
        sqlite3.Error / OSError: the store could not be written (nothing is deleted then).
    """
    report = ForgetReport()
    if not sessions:
        report.scrubbed = True
        return report
    needles = _needles(store, sessions)
    _trained_versions(store, sessions, report)
    _delete(store, sessions, report)
    report.scrubbed = store.compact()
    _scrub_files(store.dir, store.path, sessions, needles, report)
    _scrub_logs(log_dirs, store.dir, sessions, needles, report)
    log.warning("forgot %d session(s) (%d turns); versions trained on them: %s", report.sessions, report.turns,
                report.versions_trained_on or "none")
    return report
