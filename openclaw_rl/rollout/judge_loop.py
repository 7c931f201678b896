"""The judging loop: runs behind serving, turning ready turns into durable judgements.

A background thread with its own event loop claims ``ready`` main turns from the store
(``ready -> judging``), scores up to ``num_workers`` of them concurrently with a
:class:`TurnJudge`, and saves each judgement (``judged`` when trainable, ``skipped`` otherwise).
Serving never waits for it: the server only writes turns, the judge only reads and updates them.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import traceback
from collections import Counter
from dataclasses import dataclass, field
from typing import Protocol

from openclaw_rl.capture.store import TrajectoryStore, TurnRecord
from slime.errors import error_line

log = logging.getLogger(__name__)


@dataclass
class JudgeResult:
    """A turn's judgement: ``reward`` (None when there is none), whether it is ``trainable``, and
    ``details`` stored as JSON (PRM: ``verdict`` in {+1, -1, 0}, ``votes``, ``invalid`` votes)."""

    reward: float | None
    trainable: bool
    details: dict = field(default_factory=dict)


class TurnJudge(Protocol):
    """Anything that scores one turn: ``await judge(turn) -> JudgeResult``. ``method`` names it."""

    method: str

    async def judge(self, turn: TurnRecord) -> JudgeResult: ...


class JudgeLoop:
    """Background judging of a store's ready turns.

    Args:
        store: the trajectory store.
        judge: the :class:`TurnJudge`.
        num_workers: concurrent judgements (``--num-judge-workers``).
        poll_s: sleep between polls when nothing is ready.
        failure_budget: a :class:`slime.plugins.failures.FailureBudget` that counts every judgement
            and its failure (the data source checks it per step).
        prepare: optional callable run on each claimed batch before judging (returns the turns).

    A judge with ``judge_batch(turns) -> list[JudgeResult | Exception]`` (a batched reward plugin)
    gets each claimed batch in one call.
    """

    def __init__(self, store: TrajectoryStore, judge: TurnJudge, num_workers: int = 2, poll_s: float = 0.2,
                 failure_budget=None, prepare=None):
        self.store, self.judge, self.num_workers, self.poll_s = store, judge, max(1, num_workers), poll_s
        self.prepare = prepare
        self.failure_budget = failure_budget
        self.stats: Counter = Counter()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> "JudgeLoop":
        """Start the background thread (idempotent)."""
        if self._thread is None:
            self._thread = threading.Thread(target=lambda: asyncio.run(self._run()), name="judge-loop", daemon=True)
            self._thread.start()
        return self

    def stop(self, timeout: float = 30) -> None:
        """Stop after the judgements in flight; unfinished claims are recovered on next start."""
        self._stop.set()
        if self._thread:
            self._thread.join(timeout)

    async def judge_once(self, limit: int | None = None) -> int:
        """Claim and judge one batch now; returns how many turns were judged."""
        turns = await asyncio.to_thread(self.store.claim_for_judging, limit or self.num_workers * 2)
        if turns and self.prepare is not None:  # e.g. ids and rendered prompt of turns imported as text
            turns = await asyncio.to_thread(self.prepare, turns)
        sem = asyncio.Semaphore(self.num_workers)
        batched: dict = {}
        if turns and hasattr(self.judge, "judge_batch"):
            try:
                batched = dict(zip((t.id for t in turns), await self.judge.judge_batch(turns)))
            except Exception as exc:
                batched = {t.id: exc for t in turns}

        async def one(turn: TurnRecord) -> None:
            async with sem:
                failed = False
                try:
                    res = batched[turn.id] if turn.id in batched else await self.judge.judge(turn)
                    if isinstance(res, BaseException):
                        raise res
                except Exception as exc:  # a failing judgement is recorded, never fatal
                    tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__, limit=8))
                    log.error("judge %s failed on turn %s; stored as not trainable:\n%s",
                              getattr(self.judge, "name", self.judge.method), turn.turn_uid, tb)
                    res = JudgeResult(None, False, {"error": error_line(exc), "traceback": tb})
                    self.stats["failed"] += 1
                    failed = True
                if self.failure_budget is not None:
                    self.failure_budget.record(failed, res.details.get("error"))
                await asyncio.to_thread(self.store.save_judgement, turn.id, self.judge.method,
                                        res.reward, res.trainable, res.details)
                self.stats["judged"] += 1
                self.stats["trainable" if res.trainable else "not_trainable"] += 1
                verdict = res.details.get("verdict")
                if verdict is not None:
                    self.stats[{1: "verdict_pos", -1: "verdict_neg"}.get(int(verdict), "verdict_zero")] += 1
                self.stats["invalid_votes"] += int(res.details.get("invalid", 0) or 0)
                if "hint_accepted" in res.details:  # OPD / Combine: the acceptance rate
                    self.stats["hint_accepted" if res.details["hint_accepted"] else "hint_rejected"] += 1
                    judged = self.stats["hint_accepted"] + self.stats["hint_rejected"]
                    self.stats["hint_acceptance_rate"] = self.stats["hint_accepted"] / judged
                if res.details.get("branch"):
                    self.stats[f"branch_{res.details['branch']}"] += 1

        await asyncio.gather(*(one(t) for t in turns))
        return len(turns)

    async def _run(self) -> None:
        while not self._stop.is_set():
            try:
                n = await self.judge_once()
            except Exception:
                log.exception("judge loop iteration failed")
                n = 0
            if n == 0:
                await asyncio.sleep(self.poll_s)
