"""The vLLM environment of the tests (``make vllm``) and direct requests to a vLLM server."""

from __future__ import annotations

import httpx
import pytest

from openclaw_rl.engine.engine_servers import DEFAULT_ENGINE_PYTHON
from openclaw_rl.server.launcher import REPO

VLLM_PYTHON = REPO / DEFAULT_ENGINE_PYTHON["vllm"]

#: skip (with the reason) where ``make vllm`` has not been run
needs_vllm = pytest.mark.skipif(not VLLM_PYTHON.is_file(), reason=f"no vLLM environment at {VLLM_PYTHON}: run `make vllm`")

#: engine flags of the tests: float32 like the transformers engine, few sequences, a short window
ENGINE_ARGS = "--dtype float32 --max-num-seqs 8 --max-model-len 2048"


def vllm_generate(url: str, token_ids: list[int], max_tokens: int, temperature: float = 0.0,
                  seed: int | None = None, stop_token_ids: list[int] | None = None,
                  grammar: str | None = None) -> dict:
    """vLLM's own answer for ``token_ids`` (``POST /inference/v1/generate``, not streamed):
    ``choices[0]`` with ``token_ids``, ``logprobs.content`` and ``weight_versions``; ``grammar``
    constrains it (``structured_outputs.grammar``)."""
    sampling = {"max_tokens": max_tokens, "temperature": temperature, "logprobs": 0,
                "stop_token_ids": stop_token_ids or []}
    if seed is not None:
        sampling["seed"] = seed
    if grammar is not None:
        sampling["structured_outputs"] = {"grammar": grammar}
    r = httpx.post(f"{url}/inference/v1/generate", timeout=300,
                   json={"token_ids": token_ids, "sampling_params": sampling})
    r.raise_for_status()
    return r.json()["choices"][0]


def vllm_requests(url: str) -> float:
    """Completions a vLLM server has finished (its ``vllm:request_success_total``, all reasons)."""
    from prometheus_client.parser import text_string_to_metric_families

    text = httpx.get(f"{url}/metrics", timeout=30).text
    return sum(s.value for family in text_string_to_metric_families(text) for s in family.samples
               if s.name == "vllm:request_success_total")
