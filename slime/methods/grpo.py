"""GRPO: group-relative outcome advantages (Shao et al. 2024, "DeepSeekMath").

Each sample's reward minus its group's mean (divided by the group's std unless
``--disable-grpo-std-normalization``), broadcast over its response tokens; groups are the
``--n-samples-per-prompt`` consecutive samples of one prompt. With
``--disable-rewards-normalization`` the raw rewards are broadcast instead.

Under ``--dynamic-history`` (one sample per agent step) the groups are the trajectories of one
prompt (``Sample.trajectory.group_index``), each trajectory's outcome counted once, not once per
step-sample; the normalised outcome is broadcast to every step-sample of the trajectory
(:func:`slime.algorithms.advantages.grpo_trajectories`). The same holds without ``--dynamic-history`` when an
agent trajectory was split into several samples at a chat-template prefix break (samples sharing
``Sample.trajectory.id``): the batch then has more samples than ``groups x
n_samples_per_prompt``, and counting the split trajectory once per piece would bias its group.
"""

from __future__ import annotations

from collections.abc import Sequence

from slime.algorithms.advantages import broadcast_reward, grpo, grpo_trajectories
from slime.config.flags import ConfigError
from slime.methods.base import Method
from slime.record.sample import Sample

__all__ = ["GRPOMethod"]


class GRPOMethod(Method):
    """``--advantage-estimator grpo`` (the default with ``--n-samples-per-prompt >= 2``): prompt
    rollouts with groups of samples."""

    name = "grpo"

    def validate(self) -> None:
        """Refuse group size 1 (the advantage would be 0 everywhere) unless rewards are raw."""
        if self.cfg.n_samples_per_prompt < 2 and not self.cfg.disable_rewards_normalization:
            raise ConfigError("--advantage-estimator grpo needs --n-samples-per-prompt >= 2 (or "
                              "--disable-rewards-normalization); live turns are single samples: use "
                              "--advantage-estimator broadcast (Binary RL, the default for single samples), opd or "
                              "combine")

    def needs_groups(self) -> bool:
        """True unless ``--disable-rewards-normalization`` (then no group statistics are used)."""
        return not self.cfg.disable_rewards_normalization

    def compute_advantages(self, samples: Sequence[Sample]) -> tuple[list[Sample], dict[str, float]]:
        """GRPO advantages (module docstring); no metrics. Raises ``ValueError`` for a sample
        without reward or a batch that does not split into groups."""
        if self.cfg.disable_rewards_normalization:
            return broadcast_reward(samples), {}
        if self.cfg.dynamic_history or _has_split_trajectories(samples):
            return grpo_trajectories(samples, normalize_std=not self.cfg.disable_grpo_std_normalization), {}
        return grpo(samples, self.cfg.n_samples_per_prompt,
                    normalize_std=not self.cfg.disable_grpo_std_normalization), {}


def _has_split_trajectories(samples: Sequence[Sample]) -> bool:
    """True when two samples share a trajectory (the same ``Sample.trajectory`` group index and
    id): one agent trajectory split at a chat-template prefix break by the rollout that built it."""
    seen = set()
    for s in samples:
        traj = s.trajectory
        if traj is None or traj.group_index is None:
            continue
        key = (traj.group_index, traj.id)
        if key in seen:
            return True
        seen.add(key)
    return False
