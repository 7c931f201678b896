"""The tiny model the vLLM tests serve, and a second weight version of it.

vLLM's CPU attention needs a head dimension of at least 64, so ``builtin:tiny-qwen3`` (head dim
16) does not load there. This is the same recipe with ``head_dim=64``: a 2-layer random Qwen3
(seeded, identical on every machine) with the real Qwen vocabulary and chat template
(:func:`openclaw_rl.models.build_qwen_tokenizer`), cached in ``$OPENCLAW_RL_CACHE/models``.
"""

from __future__ import annotations

from pathlib import Path

#: cache folder name (bump the suffix when the recipe changes)
NAME = "tiny-qwen3-hd64-v2"


def _build(out: Path) -> None:
    import torch
    from transformers import GenerationConfig, Qwen3Config, Qwen3ForCausalLM

    from openclaw_rl.models import build_qwen_tokenizer

    tok = build_qwen_tokenizer()
    config = Qwen3Config(
        vocab_size=151936, hidden_size=128, intermediate_size=256, num_hidden_layers=2,
        num_attention_heads=2, num_key_value_heads=1, head_dim=64,
        max_position_embeddings=4096, tie_word_embeddings=True, initializer_range=0.2,
        bos_token_id=None, eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id,
    )
    torch.manual_seed(0)
    model = Qwen3ForCausalLM(config)
    model.generation_config = GenerationConfig(eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id)
    model.save_pretrained(out)
    tok.save_pretrained(out)


def vllm_tiny_model() -> Path:
    """Folder of the tiny head-dim-64 Qwen3 (built once, seconds, then cached)."""
    from openclaw_rl.models import _atomic_build, _file_lock, cache_dir

    target = cache_dir() / NAME
    if not (target / ".complete").exists():
        with _file_lock(cache_dir() / f".{NAME}.lock"):
            if not (target / ".complete").exists():
                _atomic_build(target, _build)
    return target


def second_version(out: Path, scale: float = 0.5) -> Path:
    """Copy :func:`vllm_tiny_model` to ``out`` with every weight perturbed (seeded Gaussian noise of
    ``scale`` times its own std): a weight update whose greedy answers differ from the original's."""
    import shutil

    import torch
    from safetensors.torch import load_file, save_file

    src = vllm_tiny_model()
    shutil.copytree(src, out, ignore=shutil.ignore_patterns(".complete", "*.safetensors"))
    tensors = load_file(src / "model.safetensors")
    gen = torch.Generator().manual_seed(1)
    for name, t in tensors.items():
        tensors[name] = t + torch.randn(t.shape, generator=gen, dtype=t.dtype) * scale * (t.std() if t.numel() > 1 else 1.0)
    save_file(tensors, out / "model.safetensors", metadata={"format": "pt"})
    return out
