"""Sessions to stable: the reference paper's personalization metric.

A persona's run is a pass sequence: for each session, in order, whether its first reply met the
rule. The preference is *stable* from the first session index ``k`` (1-based) such that sessions
``k, k+1, ..., k+streak-1`` all passed (the paper: three consecutive sessions); the number is
``k + streak - 1``, the session after which the rule had held ``streak`` times in a row, so lower is
better and a model that passes from the very first session scores ``streak``. A later miss (a
relapse) does not undo it; the report gives the final pass rate beside it. A run that never gets
there within its ``N`` sessions counts as ``N`` and says so (``reached`` False).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["STREAK", "Stability", "sessions_to_stable"]

#: consecutive passing sessions that make a preference stable (the paper's three)
STREAK = 3


@dataclass(frozen=True)
class Stability:
    """``sessions``: the metric (``N`` when not reached); ``reached``: whether the streak happened;
    ``n``: sessions in the sequence; ``relapses``: misses after the streak first completed."""

    sessions: int
    reached: bool
    n: int
    relapses: int

    def text(self) -> str:
        """``"7"``, or ``"not reached within 30 (counted 30)"``."""
        return str(self.sessions) if self.reached else f"not reached within {self.n} (counted {self.n})"


def sessions_to_stable(passes: Sequence[bool], streak: int = STREAK) -> Stability:
    """The metric of a pass sequence (module docstring).

    Args:
        passes: per session, in order, whether its first reply met the rule.
        streak: consecutive passes needed (default :data:`STREAK`).

    Returns:
        A :class:`Stability`.

    Raises:
        ValueError: an empty sequence or ``streak < 1``.
    """
    if streak < 1:
        raise ValueError("streak must be >= 1")
    if not passes:
        raise ValueError("no sessions: sessions to stable needs at least one")
    run = 0
    for i, ok in enumerate(passes):
        run = run + 1 if ok else 0
        if run == streak:
            relapses = sum(not p for p in passes[i + 1:])
            return Stability(i + 1, True, len(passes), relapses)
    return Stability(len(passes), False, len(passes), 0)
