"""A tiny random sequence classifier for reward-model plugin tests (built offline in seconds)."""

from __future__ import annotations

import functools
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


@functools.lru_cache(maxsize=4)
def _load(model_dir: str):
    """The classifier's tokenizer and model (float32, eval), loaded once per folder."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(model_dir)
    return tok, AutoModelForSequenceClassification.from_pretrained(model_dir, dtype=torch.float32).eval()


def positive_probability(model_dir, prompt: str, response: str, next_state: str) -> float:
    """The README's reward, computed here independently of any plugin: the classifier's
    positive-class softmax probability of ``"Prompt: ...\\nResponse: ...\\nOutcome: ..."``
    (float32 on CPU, 2048-token truncation, as the README's ``CustomPRM``)."""
    import torch

    tok, model = _load(str(model_dir))
    enc = tok(f"Prompt: {prompt}\nResponse: {response}\nOutcome: {next_state}", return_tensors="pt",
              truncation=True, max_length=2048)
    with torch.no_grad():
        logits = model(**enc).logits
    return float(torch.softmax(logits.float(), dim=-1)[0, 1])
