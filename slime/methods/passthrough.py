"""Pass-through: the rollout already set each sample's advantages (Track-2 environments with
their own credit assignment, a rollout plugin that computes returns); the trainer checks them
and trains on them unchanged."""

from __future__ import annotations

from collections.abc import Sequence

from slime.methods.base import Method
from slime.record.sample import Sample, SampleStatus

__all__ = ["PassThroughMethod"]


class PassThroughMethod(Method):
    """``--advantage-estimator passthrough``: advantages come with the samples."""

    name = "passthrough"

    def compute_advantages(self, samples: Sequence[Sample]) -> tuple[list[Sample], dict[str, float]]:
        """Check that every sample that trains carries advantages; returns them unchanged with
        ``passthrough/adv_abs_mean`` (mean ``|A_t|`` over loss tokens).

        Raises:
            ValueError: a trainable sample without ``advantages`` (names its position).
        """
        missing = [i for i, s in enumerate(samples)
                   if s.advantages is None and s.num_loss_tokens > 0 and s.status != SampleStatus.FAILED]
        if missing:
            raise ValueError(f"--advantage-estimator passthrough: samples {missing[:5]} have no advantages; "
                             "the rollout must set Sample.advantages")
        total = n = 0.0
        for s in samples:
            if s.advantages is None:
                s.advantages = [0.0] * s.response_length
            for a, m in zip(s.advantages, s.loss_mask):  # type: ignore[arg-type]
                if m:
                    total, n = total + abs(a), n + 1
        return list(samples), {"passthrough/adv_abs_mean": total / n if n else 0.0}
