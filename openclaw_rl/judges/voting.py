"""Majority voting over PRM judge votes.

Each judge vote is ``1``, ``-1``, ``0`` or ``None`` (an invalid vote: the judge's answer could not
be parsed). :func:`majority_vote` turns the votes of one turn into a single verdict.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Iterable

__all__ = ["VoteResult", "majority_vote", "env_vote_n", "env_vote_threshold",
           "DEFAULT_VOTE_N", "DEFAULT_VOTE_THRESHOLD"]

#: Votes per turn when neither an argument nor ``MAJORITY_VOTE_N`` says otherwise.
DEFAULT_VOTE_N = 3
#: Fraction of valid votes the winner needs when ``MAJORITY_VOTE_THRESHOLD`` is unset.
DEFAULT_VOTE_THRESHOLD = 0.5


@dataclass(frozen=True)
class VoteResult:
    """Outcome of one vote.

    Attributes:
        verdict: ``1``, ``-1`` or ``0``.
        counts: ``{1: n, -1: n, 0: n}`` over the valid votes.
        n_valid: number of valid votes.
        n_invalid: number of ``None`` votes.
    """

    verdict: int
    counts: dict[int, int] = field(default_factory=dict)
    n_valid: int = 0
    n_invalid: int = 0


def majority_vote(votes: Iterable[int | None], threshold: float = DEFAULT_VOTE_THRESHOLD) -> VoteResult:
    """Reduce votes to one verdict.

    The verdict with the most valid votes wins if it is the only one with that count (no tie)
    and holds at least ``threshold`` of the valid votes; otherwise the verdict is ``0``. With no
    valid vote at all the verdict is ``0``. Invalid (``None``) votes are counted in
    ``n_invalid`` and do not dilute the fraction.

    Args:
        votes: each ``1``, ``-1``, ``0`` or ``None``.
        threshold: required fraction of the valid votes, in ``[0, 1]``.

    Returns:
        A :class:`VoteResult`.

    Raises:
        ValueError: ``threshold`` outside ``[0, 1]`` or a vote that is not -1/0/1/None.
    """
    if not 0.0 <= threshold <= 1.0:
        raise ValueError(f"threshold must be in [0, 1], got {threshold!r}")
    counts = {1: 0, -1: 0, 0: 0}
    invalid = 0
    for v in votes:
        if v is None:
            invalid += 1
        elif not isinstance(v, bool) and v in counts:
            counts[int(v)] += 1
        else:
            raise ValueError(f"a vote must be 1, -1, 0 or None, got {v!r}")
    n_valid = sum(counts.values())
    verdict = 0
    if n_valid:
        top = max(counts.values())
        winners = [k for k, c in counts.items() if c == top]
        if len(winners) == 1 and top / n_valid >= threshold:
            verdict = winners[0]
    return VoteResult(verdict=verdict, counts=counts, n_valid=n_valid, n_invalid=invalid)


def env_vote_n(value: int | None = None) -> int:
    """``value``, else ``$MAJORITY_VOTE_N``, else :data:`DEFAULT_VOTE_N`.

    Raises:
        ValueError: not a positive integer.
    """
    raw = value if value is not None else os.environ.get("MAJORITY_VOTE_N", DEFAULT_VOTE_N)
    try:
        n = int(raw)
    except (TypeError, ValueError):
        raise ValueError(f"MAJORITY_VOTE_N must be a positive integer, got {raw!r}") from None
    if n < 1:
        raise ValueError(f"MAJORITY_VOTE_N must be a positive integer, got {raw!r}")
    return n


def env_vote_threshold(value: float | None = None) -> float:
    """``value``, else ``$MAJORITY_VOTE_THRESHOLD``, else :data:`DEFAULT_VOTE_THRESHOLD`.

    Raises:
        ValueError: not a number in ``[0, 1]``.
    """
    raw = value if value is not None else os.environ.get("MAJORITY_VOTE_THRESHOLD",
                                                          DEFAULT_VOTE_THRESHOLD)
    try:
        t = float(raw)
    except (TypeError, ValueError):
        raise ValueError(f"MAJORITY_VOTE_THRESHOLD must be a number in [0, 1], got {raw!r}") from None
    if not 0.0 <= t <= 1.0:
        raise ValueError(f"MAJORITY_VOTE_THRESHOLD must be a number in [0, 1], got {raw!r}")
    return t
