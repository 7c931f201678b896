"""Building the trained policy: the model wrapped in a peft LoRA adapter (``--use-lora``) or trained
whole, and the frozen reference policy the KL loss needs (``--use-kl-loss``).

For LoRA the reference is the base model with the adapter disabled (no copy, so none is built
here); otherwise a deep copy of the initial weights.
"""

from __future__ import annotations

import copy

import torch

from slime.arguments import SlimeConfig

__all__ = ["DEFAULT_LORA_TARGET_MODULES", "build_policy"]

#: attention projections of Llama / Qwen / Mistral style decoders (SmolLM2 and Qwen3 included).
DEFAULT_LORA_TARGET_MODULES = ("q_proj", "k_proj", "v_proj", "o_proj")


def build_policy(cfg: SlimeConfig, model: torch.nn.Module) -> tuple[torch.nn.Module, torch.nn.Module | None]:
    """``(policy, reference)`` for ``model``.

    Args:
        cfg: uses ``use_lora``, ``lora_rank`` (default 16), ``lora_alpha`` (default 2 * rank),
            ``lora_dropout``, ``lora_target_modules`` (default :data:`DEFAULT_LORA_TARGET_MODULES`)
            and ``use_kl_loss``.
        model: the loaded causal LM, on its device.

    Returns:
        The policy in eval mode (a peft model with LoRA) and the frozen reference copy (None with
        LoRA or without the KL loss).
    """
    if cfg.use_lora:
        from peft import LoraConfig, get_peft_model

        rank = int(cfg.lora_rank or 16)
        lora_config = LoraConfig(r=rank, lora_alpha=float(cfg.lora_alpha or 2 * rank),
                                 lora_dropout=float(cfg.lora_dropout or 0.0),
                                 target_modules=list(cfg.lora_target_modules or DEFAULT_LORA_TARGET_MODULES),
                                 task_type="CAUSAL_LM")
        return get_peft_model(model, lora_config).eval(), None
    ref = None
    if cfg.use_kl_loss:
        ref = copy.deepcopy(model).eval()
        ref.requires_grad_(False)
    return model.eval(), ref
