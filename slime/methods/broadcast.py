"""Broadcast: each sample's own reward is the advantage of every trained response token.

Group size 1 and no normalisation; the building block of Binary RL (a judge's +1 / -1 for a
turn becomes the turn's advantage).
"""

from __future__ import annotations

from collections.abc import Sequence

from slime.algorithms.advantages import broadcast_reward
from slime.methods.base import Method
from slime.record.sample import Sample

__all__ = ["BroadcastMethod"]


class BroadcastMethod(Method):
    """``--advantage-estimator broadcast`` without a method package: reward on every token."""

    name = "broadcast"

    def compute_advantages(self, samples: Sequence[Sample]) -> tuple[list[Sample], dict[str, float]]:
        """Broadcast rewards; no metrics. Raises ``ValueError`` for a sample without reward."""
        return broadcast_reward(samples), {}
