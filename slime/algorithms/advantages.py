"""Advantage estimators: turn judged rewards into per-response-token advantages.

* :func:`grpo_advantages` / :func:`grpo`: group-relative outcome advantages (Shao et al. 2024,
  "DeepSeekMath", GRPO): each sample's reward minus its group's mean, optionally divided by the
  group's standard deviation (unbiased, ``+ 1e-6``, as slime/TRL compute it); the scalar is
  broadcast to every response token. Groups are ``group_size`` consecutive samples (slime's
  ``n_samples_per_prompt`` layout).
* :func:`grpo_trajectories`: GRPO under ``--dynamic-history`` (one sample per agent step): one
  outcome per trajectory, normalised within its group over trajectories, broadcast to every
  step-sample of the trajectory.
* :func:`broadcast_reward`: group size 1 and no normalisation; each turn's reward becomes the
  advantage of all its response tokens. Binary RL (OpenClaw-RL) uses this: the judge's +1/-1/0
  for a turn is the turn's advantage.

Advantages are written into ``Sample.advantages`` (length ``response_length``); tokens with
``loss_mask == 0`` get 0 so the list is self-describing.

The statistics are a handful of float64 scalars per group, computed in Python
(:func:`group_normalised`), so this module does not import torch: the core methods import it at
their top, and every launch script imports the methods to read their flags (``python -m
slime.config.run_args --runtime-env``). :func:`grpo_advantages` takes and returns tensors through
the tensor's own methods.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from slime.record.sample import Sample, SampleStatus

if TYPE_CHECKING:
    import torch

__all__ = [
    "broadcast_reward",
    "broadcast_to_tokens",
    "compute_advantages",
    "group_normalised",
    "grpo",
    "grpo_advantages",
    "grpo_trajectories",
]


def group_normalised(rewards_K: Sequence[float], *, normalize_std: bool = True, eps: float = 1e-6) -> list[float]:
    """One group's GRPO advantages: ``r - mean`` and, with ``normalize_std``, divided by the group's
    unbiased standard deviation plus ``eps`` (a group of one then gets 0, having no spread).

    Args:
        rewards_K: the ``K`` rewards of one group (K >= 1).

    Returns:
        ``K`` float advantages (float64 arithmetic; the mean and variance sums are exactly rounded,
        ``math.fsum``).
    """
    k = len(rewards_K)
    mean = math.fsum(rewards_K) / k
    centred_K = [float(r) - mean for r in rewards_K]
    if not normalize_std:
        return centred_K
    if k < 2:
        return [0.0] * k
    std = math.sqrt(math.fsum(c * c for c in centred_K) / (k - 1))
    return [c / (std + eps) for c in centred_K]


def _grpo(rewards_N: list[float], group_size: int, normalize_std: bool, eps: float) -> list[float]:
    """:func:`group_normalised` over consecutive groups of ``group_size``; raises as :func:`grpo_advantages`."""
    if group_size < 2:
        raise ValueError(f"grpo needs group_size >= 2, got {group_size}; use broadcast_reward for single samples")
    if len(rewards_N) % group_size != 0:
        raise ValueError(f"{len(rewards_N)} rewards are not divisible into groups of {group_size}")
    return [a for g in range(0, len(rewards_N), group_size)
            for a in group_normalised(rewards_N[g:g + group_size], normalize_std=normalize_std, eps=eps)]


def grpo_advantages(
    rewards_N: torch.Tensor, group_size: int, *, normalize_std: bool = True, eps: float = 1e-6
) -> torch.Tensor:
    """Group-normalised scalar advantages (:func:`group_normalised` on each group).

    Args:
        rewards_N: ``[N]`` rewards, groups of ``group_size`` consecutive samples.
        group_size: samples per prompt (>= 2).
        normalize_std: divide by the group's unbiased standard deviation plus ``eps``.
        eps: added to the std.

    Returns:
        ``[N]`` advantages ``(r - mean_g) / (std_g + eps)`` (or ``r - mean_g``), on the rewards'
        device, in their dtype (float32 for integer rewards).

    Raises:
        ValueError: ``group_size < 2`` (the advantage would be identically 0; use
            :func:`broadcast_reward`), ``N`` not divisible by ``group_size``, or ``rewards_N``
            not 1-D.
    """
    if rewards_N.dim() != 1:
        raise ValueError(f"rewards must be 1-D [N], got {tuple(rewards_N.shape)}")
    rewards64_N = rewards_N.double()
    adv_N = rewards64_N.new_tensor(_grpo(rewards64_N.tolist(), group_size, normalize_std, eps))
    return adv_N.to(rewards_N.dtype) if rewards_N.is_floating_point() else adv_N.float()


def broadcast_to_tokens(sample: Sample, advantage: float) -> list[float]:
    """Return ``[advantage * loss_mask[t] for t in range(response_length)]`` (length ``R``)."""
    return [float(advantage) if m else 0.0 for m in sample.loss_mask]  # type: ignore[union-attr]


def _rewards(samples: Sequence[Sample]) -> list[float]:
    missing = [i for i, s in enumerate(samples) if s.reward is None]
    if missing:
        raise ValueError(f"samples {missing[:5]} have no reward; judge them before computing advantages")
    return [float(s.reward) for s in samples]


def grpo(samples: Sequence[Sample], group_size: int, *, normalize_std: bool = True) -> list[Sample]:
    """Set ``sample.advantages`` to its GRPO advantage broadcast over response tokens.

    Args:
        samples: judged samples, groups of ``group_size`` consecutive samples.
        group_size: samples per prompt (>= 2).
        normalize_std: divide by the group std (``False``: Dr. GRPO, mean-centring only).

    Returns:
        The same sample objects (mutated in place), for chaining.

    Raises:
        ValueError: a sample has ``reward is None``, or as :func:`grpo_advantages`.
    """
    for s, a in zip(samples, _grpo(_rewards(samples), group_size, normalize_std, 1e-6)):
        s.advantages = broadcast_to_tokens(s, a)
    return list(samples)


def grpo_trajectories(samples: Sequence[Sample], *, normalize_std: bool = True, eps: float = 1e-6) -> list[Sample]:
    """GRPO under ``--dynamic-history``: one outcome per trajectory, normalised within its group.

    Each step-sample carries a :class:`~slime.record.sample.Trajectory` with an id and a group index; the
    trajectory's outcome is its (shared) ``reward``. Within a group the trajectories' outcomes
    (each counted once, however many step-samples it has) become ``(r - mean) / (std + eps)``
    with the unbiased std as :func:`grpo_advantages` (a group of one trajectory: 0), and that value
    is broadcast over every step-sample of the trajectory (upstream OpenClaw-RL's
    ``_post_process_rewards`` for dynamic history). Failed samples (their reward overwritten by
    :func:`slime.plugins.failures.mark_failed`) are left out of the statistics and get 0.

    Returns:
        The same (mutated) samples.

    Raises:
        ValueError: a sample without reward or ids, or a trajectory whose step-samples disagree
            on the reward.
    """
    outcome: dict[tuple, float] = {}
    groups: dict = {}
    keys = []
    for i, s in enumerate(samples):
        traj = s.trajectory
        if traj is None or traj.group_index is None:
            raise ValueError(f"--dynamic-history: sample {i} has no trajectory with a group index (Sample.trajectory)")
        key = (traj.group_index, traj.id)
        keys.append(key)
        if s.status == SampleStatus.FAILED:
            continue
        if s.reward is None:
            raise ValueError(f"sample {i} has no reward; judge it before computing advantages")
        if key in outcome and outcome[key] != float(s.reward):
            raise ValueError(f"trajectory {key[1]!r} has step-samples with rewards {outcome[key]} and {s.reward}")
        if key not in outcome:
            outcome[key] = float(s.reward)
            groups.setdefault(key[0], []).append(key)
    adv: dict[tuple, float] = {}
    for members in groups.values():
        adv.update(zip(members, group_normalised([outcome[k] for k in members], normalize_std=normalize_std, eps=eps)))
    for s, key in zip(samples, keys):
        s.advantages = broadcast_to_tokens(s, adv.get(key, 0.0))
    return list(samples)


def broadcast_reward(samples: Sequence[Sample]) -> list[Sample]:
    """Set each ``sample.advantages`` to its own reward on every trained response token.

    Group size 1, no normalisation (Binary RL: the turn's judged reward is its advantage).
    Returns the same (mutated) samples; raises ``ValueError`` if any reward is ``None``.
    """
    for s, r in zip(samples, _rewards(samples)):
        s.advantages = broadcast_to_tokens(s, r)
    return list(samples)


def compute_advantages(samples: Sequence[Sample], config: Any) -> list[Sample]:
    """Dispatch on ``config.advantage_estimator`` (a :class:`slime.config.arguments.SlimeConfig`).

    ``grpo``: :func:`grpo` with ``group_size = n_samples_per_prompt`` and std normalisation unless
    ``disable_grpo_std_normalization``; with ``disable_rewards_normalization`` the raw rewards are
    broadcast instead. ``broadcast``: :func:`broadcast_reward`.

    Returns the mutated samples. Raises ``NotImplementedError`` for estimators that live in a
    method package (``opd``, ``combine``, ...): those methods set ``Sample.advantages`` themselves.
    """
    name = config.advantage_estimator
    if name == "broadcast" or (name == "grpo" and config.disable_rewards_normalization):
        return broadcast_reward(samples)
    if name == "grpo":
        return grpo(samples, config.n_samples_per_prompt, normalize_std=not config.disable_grpo_std_normalization)
    raise NotImplementedError(
        f"advantage estimator {name!r} is not part of slime.algorithms.advantages; its method module must set Sample.advantages"
    )
