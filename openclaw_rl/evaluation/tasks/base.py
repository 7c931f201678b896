"""The task interface the runner drives."""

from __future__ import annotations

from abc import ABC, abstractmethod


def interleave(*groups: list) -> list:
    """Round-robin merge (``a0, b0, c0, a1, b1, ...``), so the first N items cover every group."""
    out, i = [], 0
    while any(i < len(g) for g in groups):
        out.extend(g[i] for g in groups if i < len(g))
        i += 1
    return out


class Task(ABC):
    """A benchmark: a fixed, ordered item list and a scorer that talks to the served model.

    ``name``: task name. ``metric``: what the score means (e.g. ``pass@1``). ``kind``:
    ``"proportion"`` (0/1 scores, Wilson interval) or ``"mean"`` (t interval, clipped to
    ``bounds``, the scale's range). ``max_tokens``:
    completion budget per request. ``settings()``: what must match for a resumed run to reuse
    recorded items.
    """

    name: str = ""
    metric: str = ""
    kind: str = "proportion"
    bounds: tuple[float, float] = (0.0, 1.0)
    max_tokens: int = 256

    @abstractmethod
    def items(self) -> list[dict]:
        """All items, in a fixed order; each has a unique ``"id"`` and a ``"group"`` (setting/category)."""

    @abstractmethod
    def run(self, item: dict, client) -> dict:
        """Score one item through ``client`` (an :class:`~openclaw_rl.evaluation.client.EvalClient`).

        Returns:
            ``{"score": float, "detail": {...}}``.

        Raises:
            Whatever the client raises for a failed request (the runner records 4xx as item errors).
        """

    def settings(self) -> dict:
        """Task settings that a resumed run must share (default: ``max_tokens``)."""
        return {"max_tokens": self.max_tokens}
