"""A PPO clipped-surrogate loss in slime's loss convention (``--custom-loss-function-path``).

``loss(args, batch, logits, sum_of_sample_mean) -> (loss, metrics)`` as THUDM/slime calls a
``custom_loss``: ``batch`` holds per-sample lists of response-aligned tensors
(``advantages``, ``log_probs`` = old policy, ``loss_masks``, ``response_lengths``, ...),
``logits`` the current policy's log-probs of the response tokens concatenated over the
micro-batch (``[sum(response_lengths)]``, with gradient; not vocabulary logits, see
docs/plugins.md), and ``sum_of_sample_mean`` sums per-sample masked means of such a flat tensor.
"""

import torch


def loss_function(args, batch, logits, sum_of_sample_mean):
    """PPO clip with ``args.eps_clip`` / ``args.eps_clip_high``; returns ``(loss, metrics)``."""
    log_probs = logits  # current policy, per response token
    old_log_probs = torch.cat(batch["log_probs"])
    advantages = torch.cat(batch["advantages"])
    ratio = torch.exp(log_probs - old_log_probs)
    pg1 = -advantages * ratio
    pg2 = -advantages * ratio.clamp(1 - args.eps_clip, 1 + args.eps_clip_high)
    pg_loss = torch.maximum(pg1, pg2)
    clipfrac = (pg2 > pg1).float()
    loss = sum_of_sample_mean(pg_loss)
    return loss, {"pg_loss": loss.detach(), "pg_clipfrac": sum_of_sample_mean(clipfrac).detach()}
