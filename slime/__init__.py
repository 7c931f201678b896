"""slime: the method-agnostic trainer core of OpenClaw-RL (after THUDM/slime).

Main names:
    Sample, SampleStatus                       -- the one record from capture to loss
    SampleBatch, collate_samples,
    split_micro_batches                        -- samples -> right-padded [B, T] tensors
    SlimeConfig, ConfigError, parse_args,
    flag                                       -- typed flags, command line parsed once, immutable
    Method                                     -- a learning method (slime.methods)
    compute_token_logprobs, TokenLogprobs      -- chunked per-token log-probs / entropy
    LossInputs, LossOutputs, PolicyLossConfig,
    policy_loss, reduce_metrics                -- PPO/KL/entropy/TIS loss, global token mean
    grpo, broadcast_reward, compute_advantages -- advantage estimators
    TrainerState, save_checkpoint,
    load_checkpoint                            -- Hugging Face format checkpoints
"""

from slime.algorithms.advantages import broadcast_reward, compute_advantages, grpo, grpo_advantages
from slime.config.arguments import ConfigError, SlimeConfig, parse_args
from slime.record.batch import SampleBatch, collate_samples, split_micro_batches
from slime.config.flags import flag
from slime.methods import Method
from slime.trainer.checkpoint import TrainerState, find_latest_checkpoint, load_checkpoint, save_checkpoint
from slime.algorithms.logprobs import TokenLogprobs, compute_token_logprobs, entropy_from_logits, token_logprobs_from_logits
from slime.algorithms.losses import (
    LossInputs,
    LossOutputs,
    PolicyLossConfig,
    global_token_count,
    kl_estimate,
    policy_loss,
    reduce_metrics,
    tis_weights,
)
from slime.record.sample import Sample, SampleStatus

__all__ = [
    "ConfigError",
    "LossInputs",
    "Method",
    "LossOutputs",
    "PolicyLossConfig",
    "Sample",
    "SampleBatch",
    "SampleStatus",
    "SlimeConfig",
    "TokenLogprobs",
    "TrainerState",
    "broadcast_reward",
    "collate_samples",
    "compute_advantages",
    "compute_token_logprobs",
    "entropy_from_logits",
    "find_latest_checkpoint",
    "flag",
    "global_token_count",
    "grpo",
    "grpo_advantages",
    "kl_estimate",
    "load_checkpoint",
    "parse_args",
    "policy_loss",
    "reduce_metrics",
    "save_checkpoint",
    "split_micro_batches",
    "tis_weights",
    "token_logprobs_from_logits",
]
