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

The names load on first use (PEP 562): importing ``slime`` or one of its modules (a pool server
reading ``slime.config.flags``, a launch helper) does not import torch; ``slime.Sample`` or
``from slime import policy_loss`` imports the module that defines it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from slime.omp import set_spin_default

set_spin_default()  # before any slime module imports torch (slime/omp.py)

#: each public name -> the module that defines it
_EXPORTS = {
    **dict.fromkeys(("broadcast_reward", "compute_advantages", "grpo", "grpo_advantages"), "slime.algorithms.advantages"),
    **dict.fromkeys(("ConfigError", "SlimeConfig", "parse_args"), "slime.config.arguments"),
    **dict.fromkeys(("SampleBatch", "collate_samples", "split_micro_batches"), "slime.record.batch"),
    "flag": "slime.config.flags",
    "Method": "slime.methods",
    **dict.fromkeys(("TrainerState", "find_latest_checkpoint", "load_checkpoint", "save_checkpoint"),
                    "slime.trainer.checkpoint"),
    **dict.fromkeys(("TokenLogprobs", "compute_token_logprobs", "entropy_from_logits", "token_logprobs_from_logits"),
                    "slime.algorithms.logprobs"),
    **dict.fromkeys(("LossInputs", "LossOutputs", "PolicyLossConfig", "global_token_count", "kl_estimate", "policy_loss",
                     "reduce_metrics", "tis_weights"), "slime.algorithms.losses"),
    **dict.fromkeys(("Sample", "SampleStatus"), "slime.record.sample"),
}

__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:  # what type checkers and IDEs see; at run time the names load on first use
    from slime.algorithms.advantages import broadcast_reward, compute_advantages, grpo, grpo_advantages
    from slime.algorithms.logprobs import (TokenLogprobs, compute_token_logprobs, entropy_from_logits,
                                           token_logprobs_from_logits)
    from slime.algorithms.losses import (LossInputs, LossOutputs, PolicyLossConfig, global_token_count, kl_estimate,
                                         policy_loss, reduce_metrics, tis_weights)
    from slime.config.arguments import ConfigError, SlimeConfig, parse_args
    from slime.config.flags import flag
    from slime.methods import Method
    from slime.record.batch import SampleBatch, collate_samples, split_micro_batches
    from slime.record.sample import Sample, SampleStatus
    from slime.trainer.checkpoint import TrainerState, find_latest_checkpoint, load_checkpoint, save_checkpoint


def __getattr__(name: str) -> Any:
    """``slime.<name>`` for a public name: imported from its module on first use (PEP 562).

    Raises:
        AttributeError: ``name`` is not one of :data:`__all__`.
    """
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'slime' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return [*__all__, *(name for name in sorted(globals()) if name.startswith("__"))]
