"""A tiny random sequence classifier for reward-model plugin tests (built offline in seconds)."""

from __future__ import annotations

from pathlib import Path


def build_tiny_classifier(out: Path, seed: int = 0) -> Path:
    """Save a 2-label ``Qwen3ForSequenceClassification`` with ``builtin:tiny-qwen3``'s config and
    tokenizer (random weights, seeded) to ``out``; returns ``out``."""
    import torch
    from transformers import AutoConfig, AutoModelForSequenceClassification

    from openclaw_rl.models import load_tokenizer, resolve_model_path

    src = resolve_model_path("builtin:tiny-qwen3")
    config = AutoConfig.from_pretrained(src)
    config.num_labels = 2
    tokenizer = load_tokenizer("builtin:tiny-qwen3")
    config.pad_token_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    torch.manual_seed(seed)
    model = AutoModelForSequenceClassification.from_config(config)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return Path(out)
