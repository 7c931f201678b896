"""The Binary RL process reward model (PRM) judge: votes per turn, majority, concurrency.

:class:`PRMJudge` asks a :class:`~openclaw_rl.judges.backends.JudgeBackend` for
``majority_vote_n`` votes on one served turn (its output and its next state) and reduces them
with :func:`~openclaw_rl.judges.voting.majority_vote` into a :class:`Judgement` whose ``verdict``
(``1``, ``-1`` or ``0``) is the Binary RL reward of that turn.

Turns without a next state (the session has not continued yet) cannot be judged:
:meth:`PRMJudge.judge_turn` raises :class:`ValueError` for them (use
:func:`~openclaw_rl.judges.prompts.has_next_state` to filter first).
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import asdict, dataclass, field
from typing import Any, Iterable

from openclaw_rl.judges.backends import JudgeBackend
from openclaw_rl.judges.prompts import JudgeInput, judge_input_for_turn
from openclaw_rl.judges.voting import env_vote_n, env_vote_threshold, majority_vote

__all__ = ["Judgement", "PRMJudge"]


@dataclass
class Judgement:
    """The PRM's decision on one turn.

    Attributes:
        verdict: ``1`` (progress), ``-1`` (redo / correction / tool error) or ``0``.
        votes: the individual votes (``None`` = invalid answer).
        counts: ``{1: n, -1: n, 0: n}`` over the valid votes.
        invalid: number of invalid votes.
        probs: ``{1: p, -1: p, 0: p}`` from a log-prob backend, else None.
        texts: raw judge answers (for inspection).
        backend: the backend's name.
        mode: the judge mode that ran (``lexical``, ``hybrid``, ``prototype``, ``channel``,
            ``logprob``, ``generate`` or ``endpoint``); stored as ``prm_mode`` in the metadata.
    """

    verdict: int
    votes: list[int | None]
    counts: dict[int, int]
    invalid: int
    probs: dict[int, float] | None = None
    texts: list[str] = field(default_factory=list)
    backend: str = ""
    mode: str = ""

    def to_metadata(self) -> dict[str, Any]:
        """A JSON-safe dict for ``Sample.metadata`` (string keys, texts left out; ``mode`` as ``prm_mode``)."""
        d = asdict(self)
        d.pop("texts")
        d["prm_mode"] = d.pop("mode")
        d["counts"] = {str(k): v for k, v in self.counts.items()}
        d["probs"] = None if self.probs is None else {str(k): v for k, v in self.probs.items()}
        return d


class PRMJudge:
    """Judge turns with majority voting over a backend's votes.

    Args:
        backend: where the votes come from.
        majority_vote_n: votes per turn; default ``$MAJORITY_VOTE_N`` or 3.
        threshold: fraction of the valid votes the winner needs; default
            ``$MAJORITY_VOTE_THRESHOLD`` or 0.5.
        num_workers: turns judged at once by :meth:`judge_many` and concurrent
            :meth:`judge_turn` calls (an ``asyncio.Semaphore``); default ``$PRM_NUM_WORKERS`` or 4.

    Raises:
        ValueError: a non-positive ``majority_vote_n`` / ``num_workers`` or a threshold outside
            ``[0, 1]`` (from the arguments or the environment).
    """

    def __init__(self, backend: JudgeBackend, majority_vote_n: int | None = None,
                 threshold: float | None = None, num_workers: int | None = None):
        self.backend = backend
        self.n = env_vote_n(majority_vote_n)
        self.threshold = env_vote_threshold(threshold)
        workers = num_workers if num_workers is not None else os.environ.get("PRM_NUM_WORKERS", 4)
        try:
            self.num_workers = int(workers)
        except (TypeError, ValueError):
            raise ValueError(f"num_workers must be a positive integer, got {workers!r}") from None
        if self.num_workers < 1:
            raise ValueError(f"num_workers must be a positive integer, got {workers!r}")
        self._sem: asyncio.Semaphore | None = None
        self._sem_loop = None

    def _semaphore(self) -> asyncio.Semaphore:
        loop = asyncio.get_running_loop()
        if self._sem is None or self._sem_loop is not loop:  # one semaphore per event loop
            self._sem, self._sem_loop = asyncio.Semaphore(self.num_workers), loop
        return self._sem

    def _judgement(self, res) -> Judgement:
        vote = majority_vote(res.votes, self.threshold)
        return Judgement(verdict=vote.verdict, votes=list(res.votes), counts=vote.counts,
                         invalid=vote.n_invalid, probs=res.probs, texts=list(res.texts),
                         backend=getattr(self.backend, "name", type(self.backend).__name__),
                         mode=getattr(self.backend, "mode", ""))

    async def judge_messages(self, messages: list[dict]) -> Judgement:
        """Judge ready-made judge messages (see :func:`~openclaw_rl.judges.prompts.build_judge_messages`).

        Raises:
            ValueError: the backend reads turns, not messages (``lexical``, ``hybrid``,
                ``prototype``, ``channel``): use :meth:`judge_input`.
        """
        async with self._semaphore():
            res = await self.backend.score(messages, self.n)
        return self._judgement(res)

    async def judge_input(self, inp: JudgeInput) -> Judgement:
        """Judge one :class:`~openclaw_rl.judges.prompts.JudgeInput` (every mode).

        Raises:
            openai.APIError: an endpoint backend's request failed.
        """
        async with self._semaphore():
            res = await self.backend.score_input(inp, self.n)
        return self._judgement(res)

    async def judge_turn(self, turn: Any) -> Judgement:
        """Judge one TurnRecord-like turn from its next state.

        Args:
            turn: has ``response_text``, ``next_state``, ``next_state_role`` and optionally
                ``tool_calls`` and ``messages`` (see
                :func:`~openclaw_rl.judges.prompts.judge_input_for_turn`).

        Returns:
            A :class:`Judgement`.

        Raises:
            ValueError: the turn has no next state.
            openai.APIError: an endpoint backend's request failed.
        """
        return await self.judge_input(judge_input_for_turn(turn))

    async def judge_many(self, turns: Iterable[Any]) -> list[Judgement]:
        """Judge several turns, at most ``num_workers`` at a time; results keep the input order.

        Raises:
            ValueError: some turn has no next state (checked before any judging starts).
        """
        batch = [judge_input_for_turn(t) for t in turns]  # validates every turn first
        return list(await asyncio.gather(*(self.judge_input(i) for i in batch)))

    async def aclose(self) -> None:
        """Close the backend."""
        await self.backend.aclose()
