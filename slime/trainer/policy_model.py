"""Building the trained policy: the model wrapped in a peft LoRA adapter (``--use-lora``) or trained
whole, and the frozen reference policy the KL loss needs (``--use-kl-loss``).

For LoRA the reference is the base model with the adapter disabled (no copy, so none is built
here); otherwise a deep copy of the initial weights.
"""

from __future__ import annotations

import copy

import torch

from slime.config.arguments import SlimeConfig

__all__ = ["DEFAULT_LORA_TARGET_MODULES", "build_policy", "freeze_vision_tower", "vision_tower"]

#: attention projections of Llama / Qwen / Mistral style decoders (SmolLM2 and Qwen3 included).
DEFAULT_LORA_TARGET_MODULES = ("q_proj", "k_proj", "v_proj", "o_proj")


def vision_tower(model: torch.nn.Module) -> torch.nn.Module | None:
    """The vision tower of a vision-language model (Qwen2-VL / Qwen2.5-VL / Qwen3-VL keep it at
    ``model.model.visual``: the patch embedding, the vision blocks and the patch merger), or None
    for a text-only model. A peft wrapper is looked through."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    for holder in (getattr(base, "model", None), base):
        visual = getattr(holder, "visual", None)
        if isinstance(visual, torch.nn.Module):
            return visual
    return None


def freeze_vision_tower(model: torch.nn.Module) -> int:
    """Turn off gradients of every vision-tower parameter (``--freeze-vision-tower``); the
    optimizer is built over ``requires_grad`` parameters only, so they get no optimizer state.

    Returns:
        The number of parameters frozen.

    Raises:
        ValueError: the model has no vision tower (a text-only model).
    """
    visual = vision_tower(model)
    if visual is None:
        raise ValueError(f"--freeze-vision-tower: {type(model).__name__} has no vision tower (a text-only model)")
    visual.requires_grad_(False)
    return sum(p.numel() for p in visual.parameters())


def build_policy(cfg: SlimeConfig, model: torch.nn.Module) -> tuple[torch.nn.Module, torch.nn.Module | None]:
    """``(policy, reference)`` for ``model``.

    Args:
        cfg: uses ``use_lora``, ``lora_rank`` (default 16), ``lora_alpha`` (default 2 * rank),
            ``lora_dropout``, ``lora_target_modules`` (default :data:`DEFAULT_LORA_TARGET_MODULES`),
            ``use_kl_loss`` and ``freeze_vision_tower`` (:func:`freeze_vision_tower`; with LoRA
            the adapter's default targets match attention projections of the language model
            only, so the tower is frozen either way unless the targets name its modules).
        model: the loaded causal LM, on its device.

    Returns:
        The policy in eval mode (a peft model with LoRA) and the frozen reference copy (None with
        LoRA or without the KL loss).

    Raises:
        ValueError: ``--freeze-vision-tower`` on a model without a vision tower.
    """
    if getattr(cfg, "freeze_vision_tower", False):
        freeze_vision_tower(model)
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
