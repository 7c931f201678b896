"""A GRPO-style clipped surrogate in the simple loss convention (``--custom-loss-function-path``).

``compute_loss`` is called once per micro-batch with:

* ``policy_logits``: per-token log-probabilities of each response under the current policy,
  ``[B, T]`` (``T`` = longest response in the micro-batch), 0 at padding and loss-masked tokens;
  carries the gradient.
* ``reference_logits``: the same under the old policy (the weights before this update), ``[B, T]``.
* ``rewards``: ``[B]`` scalar reward per sample.
* ``advantages``: ``[B, T]`` per-token advantages, 0 at padding and loss-masked tokens.
* ``config``: dict of the run's loss settings (``clip_range``, ``kl_coeff``, ...; see
  docs/plugins.md for every key).

It returns a scalar tensor; the trainer back-propagates it and steps the optimizer once per
global batch. See docs/plugins.md.
"""

from typing import Any, Dict

import torch


def compute_loss(
    policy_logits: torch.Tensor,
    reference_logits: torch.Tensor,
    rewards: torch.Tensor,
    advantages: torch.Tensor,
    config: Dict[str, Any],
) -> torch.Tensor:
    """PPO-clipped surrogate plus a KL penalty to the old policy.

    ``ratio = exp(policy - reference)``;
    ``loss = -min(ratio * A, clip(ratio, 1 - eps, 1 + eps) * A).mean() + kl_coeff * mean(policy - reference)``.
    Returns a scalar tensor.
    """
    # log ratio between the current and the old policy
    log_ratio = policy_logits - reference_logits
    ratio = torch.exp(log_ratio)

    clip_range = config.get("clip_range", 0.2)

    # PPO-style clipped objective
    clipped = torch.clamp(ratio, 1 - clip_range, 1 + clip_range)
    loss = -torch.min(ratio * advantages, clipped * advantages).mean()

    # KL penalty
    kl_coeff = config.get("kl_coeff", 0.01)
    kl_penalty = kl_coeff * log_ratio.mean()

    return loss + kl_penalty
