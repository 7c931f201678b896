"""Shared fixtures for the slime tests: tiny random Qwen3 causal LMs built offline (no model hub)."""

from __future__ import annotations

import pytest
import torch


def _make_tiny_model(seed: int = 0, dtype: torch.dtype = torch.float64):
    """Return a 2-layer random ``Qwen3ForCausalLM`` (vocab 512, hidden 32) in eval mode, in ``dtype``."""
    from transformers import Qwen3Config, Qwen3ForCausalLM

    torch.manual_seed(seed)
    config = Qwen3Config(
        vocab_size=512, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
        head_dim=8, intermediate_size=64, tie_word_embeddings=False,
    )
    model = Qwen3ForCausalLM(config).to(dtype)
    model.eval()  # no dropout; gradients still flow
    return model


@pytest.fixture
def make_tiny_model():
    """The factory ``make_tiny_model(seed=0, dtype=torch.float64)`` (fixtures avoid importing conftest)."""
    return _make_tiny_model


@pytest.fixture
def tiny_model():
    """A fresh float64 tiny Qwen3 model (seed 0)."""
    return _make_tiny_model()
