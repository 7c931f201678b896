"""Tiny random Qwen2.5-VL and Qwen3-VL models from config, on ``builtin:tiny-qwen2-vl``'s
tokenizer and image processor, so the vision-language path is checked on every architecture the
issue names (Qwen2-VL is the built-in itself)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

#: files taken from ``builtin:tiny-qwen2-vl``'s folder as they are
_SHARED = ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja", "preprocessor_config.json",
           "generation_config.json")


def build_vl_architecture(kind: str, out: Path) -> Path:
    """Write a seeded random ``kind`` model (``"qwen2_5_vl"`` or ``"qwen3_vl"``; 2 text layers of
    width 64, a 1- or 2-block vision tower of width 32) into ``out``; returns ``out``."""
    import torch
    import transformers as T

    from openclaw_rl.models import resolve_model_path

    base = resolve_model_path("builtin:tiny-qwen2-vl")
    cfg = json.loads((base / "config.json").read_text())
    tc = cfg["text_config"]
    text = dict(vocab_size=tc["vocab_size"], hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=4096, tie_word_embeddings=True,
                eos_token_id=tc["eos_token_id"], pad_token_id=tc["pad_token_id"], bos_token_id=None)
    ids = {k: cfg[k] for k in ("image_token_id", "video_token_id", "vision_start_token_id", "vision_end_token_id")}
    torch.manual_seed(0)
    patch = 14
    if kind == "qwen2_5_vl":
        text["rope_parameters"] = {"rope_type": "default", "rope_theta": 10000.0, "mrope_section": [2, 3, 3]}
        vision = dict(depth=1, hidden_size=32, out_hidden_size=64, intermediate_size=64, num_heads=2,
                      patch_size=patch, spatial_merge_size=2, temporal_patch_size=2, fullatt_block_indexes=[0],
                      window_size=56)
        model = T.Qwen2_5_VLForConditionalGeneration(T.Qwen2_5_VLConfig(
            text_config=text, vision_config=vision, tie_word_embeddings=True, **ids))
    elif kind == "qwen3_vl":
        patch = 16
        text.update(head_dim=16, rope_parameters={"rope_type": "default", "rope_theta": 10000.0,
                                                  "mrope_section": [2, 3, 3], "mrope_interleaved": True})
        vision = dict(depth=2, hidden_size=32, out_hidden_size=64, intermediate_size=64, num_heads=2,
                      patch_size=patch, spatial_merge_size=2, temporal_patch_size=2, deepstack_visual_indexes=[0],
                      num_position_embeddings=64)
        model = T.Qwen3VLForConditionalGeneration(T.Qwen3VLConfig(
            text_config=text, vision_config=vision, tie_word_embeddings=True, **ids))
    else:
        raise ValueError(f"unknown architecture {kind!r}")
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    for name in _SHARED:
        shutil.copy(base / name, out / name)
    pre = json.loads((out / "preprocessor_config.json").read_text())
    pre["patch_size"] = patch
    (out / "preprocessor_config.json").write_text(json.dumps(pre, indent=2))
    return out
