"""Explicit feedback: a person's rating (+1 / -1) of a main turn, with an optional correction.

A rating names the turn by the chat completion ``id`` the client received (``chatcmpl-...``,
stored with the turn) or by its turn id (``<session>:<index>``). It is stored in the table
``feedback`` and, when the turn is trained, overrides the judge's vote: the sample's reward is
the rating, and a correction becomes the turn's hint for on-policy distillation (the data source
applies both, :mod:`openclaw_rl.rollout.feedback`). The judge's own judgement stays as it was,
so its agreement with the ratings can be measured (:meth:`FeedbackBook.summary`).

What a rating does depends on where the turn is (``status_at_rating``):

* not trained yet (``awaiting_next`` / ``ready`` / ``judging`` / ``judged``): it is applied when
  the turn is trained; a turn the judge ``skipped`` (verdict 0, no next state) becomes trainable;
* ``claimed`` (in the train step running now), ``trained`` or ``held_out`` (the promotion gate's):
  stored and counted (``after_training``), never trained again silently;
* a side turn cannot be rated (:class:`NotRateable`), nor a turn the data source dropped
  (stale, no token ids).

Undoing a rating (:meth:`FeedbackBook.undo`) deletes it; a skipped turn that only the rating made
trainable goes back to ``skipped``. A rating already applied in a train step stays in the weights
(the answer says so).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass

from openclaw_rl.capture.records import (CLAIMED, HELD_OUT, JUDGED, SIDE, SKIPPED, TRAINED, TurnRecord,
                                         row_to_record)

__all__ = ["Feedback", "FeedbackBook", "FeedbackNotFound", "NotRateable", "TurnNotFound", "judge_vote"]

#: statuses at which a rating can no longer change the turn's training
_TOO_LATE = {CLAIMED: "the turn is in the train step running now", TRAINED: "the turn was already trained",
             HELD_OUT: "the turn is held out for the promotion gate (never trained)"}


class TurnNotFound(LookupError):
    """No recorded turn has that completion id or turn id."""


class FeedbackNotFound(LookupError):
    """The turn has no rating (never rated, or already undone)."""


class NotRateable(ValueError):
    """The turn cannot be rated: a side turn, or one the data source dropped."""


@dataclass
class Feedback:
    """One stored rating: the turn (row ``turn_id``, ``turn_uid``, ``completion_id``), ``rating``
    (+1 / -1), ``correction`` (None or text), ``created_at`` (UNIX seconds), ``status_at_rating``
    (the turn's status then), ``applied_step`` (the train step that used it, else None)."""

    turn_id: int
    turn_uid: str
    completion_id: str | None
    session_id: str
    rating: int
    correction: str | None
    created_at: float
    status_at_rating: str
    applied_step: int | None = None

    @property
    def after_training(self) -> bool:
        """The rating came when the turn could no longer be trained with it."""
        return self.status_at_rating in _TOO_LATE

    def to_json(self, judge: int | None = None, note: str | None = None) -> dict:
        """The JSON object of the API (``"object": "feedback"``); ``judge``: the judge's vote,
        ``note``: why the rating does not change training, when it does not."""
        return {"object": "feedback", "id": self.completion_id, "turn_id": self.turn_uid,
                "session_id": self.session_id, "rating": self.rating, "correction": self.correction,
                "created_at": self.created_at, "status_at_rating": self.status_at_rating,
                "applied_step": self.applied_step, "after_training": self.after_training,
                "judge_vote": judge, "note": note}


def judge_vote(judgement: dict | None) -> int | None:
    """The judge's vote on a turn (+1 / -1), from a judgement row's ``reward`` and ``details``
    (the PRM's ``verdict`` when it gave one, else the sign of the reward); None when it
    abstained (verdict 0), gave no reward (OPD alone) or the turn is not judged."""
    if not judgement:
        return None
    details = judgement.get("details") or {}
    verdict = details.get("verdict")
    if verdict is not None:
        return int(verdict) if int(verdict) in (-1, 1) else None
    reward = judgement.get("reward")
    if reward is None or reward == 0:
        return None
    return 1 if reward > 0 else -1


def _judgement(row) -> dict | None:
    if row is None or row["method"] is None:
        return None
    return {"method": row["method"], "reward": row["reward"], "trainable": bool(row["trainable"]),
            "details": json.loads(row["details_json"]) if row["details_json"] else None}


_SELECT = ("SELECT f.*, t.turn_uid, t.completion_id, t.session_id FROM feedback f JOIN turns t ON t.id = f.turn_id")


def _feedback(row) -> Feedback:
    return Feedback(row["turn_id"], row["turn_uid"], row["completion_id"], row["session_id"], int(row["rating"]),
                    row["correction"], row["created_at"], row["status_at_rating"], row["applied_step"])


class FeedbackBook:
    """Ratings of the turns of a :class:`openclaw_rl.capture.store.TrajectoryStore` (module docstring).

    Args:
        store: the trajectory store (its ``transaction()`` and ``read()``).
    """

    def __init__(self, store):
        self.store = store

    def find_turn(self, ref: str) -> TurnRecord:
        """The turn named by a chat completion id (``chatcmpl-...``) or a turn id (``session:index``).

        Raises:
            TurnNotFound: no such turn.
        """
        ref = str(ref).strip()
        rows = self.store.read("SELECT * FROM turns WHERE completion_id=? OR turn_uid=? ORDER BY id LIMIT 1",
                               (ref, ref)) if ref else []
        if not rows:
            raise TurnNotFound(f"no recorded turn has the id {ref!r} (a chat completion id 'chatcmpl-...' or a "
                               "turn id 'session:index'; forgotten turns are gone)")
        return row_to_record(rows[0])

    def rate(self, ref: str, rating: int, correction: str | None = None) -> tuple[Feedback, str | None]:
        """Rate a turn (a second rating of the same turn replaces the first).

        Args:
            ref: the chat completion id or turn id.
            rating: +1 or -1.
            correction: what the reply should have been / done (the turn's hint), or None.

        Returns:
            ``(feedback, note)``: ``note`` says why the rating will not change training (the
            turn was trained, is being trained or is held out), else None.

        Raises:
            ValueError: rating not +1 / -1. TurnNotFound. NotRateable: a side turn or a dropped one.
        """
        if isinstance(rating, bool) or rating not in (1, -1):
            raise ValueError(f"rating must be 1 or -1, got {rating!r}")
        correction = correction.strip() if correction and correction.strip() else None
        turn = self.find_turn(ref)
        if turn.status == SIDE:
            why = turn.side_reason or "not the agent answering its user"
            raise NotRateable(f"turn {turn.turn_uid} is a side turn ({why}): side turns are never trained, so they "
                              "cannot be rated")
        with self.store.transaction() as db:
            row = db.execute("SELECT t.status, j.method FROM turns t LEFT JOIN judgements j ON j.turn_id = t.id "
                             "WHERE t.id=?", (turn.id,)).fetchone()
            if row is None:
                raise TurnNotFound(f"turn {turn.turn_uid} was forgotten")
            status, method = row[0], row[1]
            if status == SKIPPED and method and method.startswith("dropped:"):
                raise NotRateable(f"turn {turn.turn_uid} was dropped from training ({method[8:]}); it cannot be rated")
            db.execute("INSERT INTO feedback(turn_id, rating, correction, created_at, status_at_rating) VALUES "
                       "(?, ?, ?, ?, ?) ON CONFLICT(turn_id) DO UPDATE SET rating=excluded.rating, "
                       "correction=excluded.correction, created_at=excluded.created_at, "
                       "status_at_rating=excluded.status_at_rating",  # applied_step stays: it was trained
                       (turn.id, int(rating), correction, time.time(), status))
            if status == SKIPPED:  # the judge abstained: the person's rating makes it trainable
                db.execute("UPDATE turns SET status=? WHERE id=? AND status=?", (JUDGED, turn.id, SKIPPED))
        fb = self.get(turn.id)
        return fb, _TOO_LATE.get(fb.status_at_rating)

    def get(self, turn_id: int) -> Feedback:
        """The rating of a turn (by store row id).

        Raises:
            FeedbackNotFound: the turn has none.
        """
        rows = self.store.read(_SELECT + " WHERE f.turn_id=?", (int(turn_id),))
        if not rows:
            raise FeedbackNotFound(f"turn {turn_id} has no rating")
        return _feedback(rows[0])

    def for_turn(self, turn_id: int) -> Feedback | None:
        """The rating of a turn, or None."""
        try:
            return self.get(turn_id)
        except FeedbackNotFound:
            return None

    def undo(self, ref: str) -> Feedback:
        """Delete a turn's rating; returns what was deleted.

        Raises:
            TurnNotFound. FeedbackNotFound: no rating to undo (a second undo, too).
        """
        turn = self.find_turn(ref)
        old = self.for_turn(turn.id)
        if old is None:
            raise FeedbackNotFound(f"turn {turn.turn_uid} has no rating to undo (never rated, or already undone)")
        with self.store.transaction() as db:
            if db.execute("DELETE FROM feedback WHERE turn_id=?", (turn.id,)).rowcount != 1:
                raise FeedbackNotFound(f"turn {turn.turn_uid} has no rating to undo (already undone)")
            # trainable only because of the rating: back to skipped
            db.execute("UPDATE turns SET status=? WHERE id=? AND status=? AND EXISTS (SELECT 1 FROM judgements j "
                       "WHERE j.turn_id = turns.id AND j.trainable = 0)", (SKIPPED, turn.id, JUDGED))
        return old

    def mark_applied(self, turn_ids: list[int], step: int | None) -> None:
        """The ratings of these turns were used in train step ``step``."""
        with self.store.transaction() as db:
            db.executemany("UPDATE feedback SET applied_step=? WHERE turn_id=?", [(step, int(i)) for i in turn_ids])

    def list(self, limit: int = 100) -> list[tuple[Feedback, int | None]]:
        """The newest ``limit`` ratings with the judge's vote on each turn: ``[(feedback, vote)]``."""
        rows = self.store.read(_SELECT.replace("FROM feedback f", ", j.method, j.reward, j.trainable, j.details_json "
                                               "FROM feedback f LEFT JOIN judgements j ON j.turn_id = f.turn_id")
                               + " ORDER BY f.created_at DESC LIMIT ?", (int(limit),))
        return [(_feedback(r), judge_vote(_judgement(r))) for r in rows]

    def summary(self, reopen: bool = True) -> dict[str, float]:
        """Counts of the ratings and the judge's agreement with them (``reopen``: see
        :meth:`openclaw_rl.capture.store.TrajectoryStore.read`).

        Returns:
            ``total``, ``positive``, ``negative``, ``corrections``, ``applied`` (used in a train
            step), ``after_training`` (came too late to change training), and over the rated
            turns the judge voted on: ``judge_agree``, ``judge_disagree``, ``judge_abstained``
            (no vote: verdict 0, not judged yet, or a judge without votes) and
            ``judge_agreement`` (agree / (agree + disagree); -1 when there is no such turn).
        """
        rows = self.store.read("SELECT f.rating, f.correction, f.applied_step, f.status_at_rating, j.method, j.reward, "
                               "j.trainable, j.details_json FROM feedback f LEFT JOIN judgements j "
                               "ON j.turn_id = f.turn_id", (), reopen)
        out = {k: 0 for k in ("total", "positive", "negative", "corrections", "applied", "after_training",
                              "judge_agree", "judge_disagree", "judge_abstained")}
        for r in rows:
            out["total"] += 1
            out["positive" if r["rating"] > 0 else "negative"] += 1
            out["corrections"] += r["correction"] is not None
            out["applied"] += r["applied_step"] is not None
            out["after_training"] += r["status_at_rating"] in _TOO_LATE
            vote = judge_vote(_judgement(r))
            out["judge_abstained" if vote is None else ("judge_agree" if vote == r["rating"]
                                                        else "judge_disagree")] += 1
        voted = out["judge_agree"] + out["judge_disagree"]
        return {**out, "judge_agreement": out["judge_agree"] / voted if voted else -1.0}
