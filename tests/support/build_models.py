"""Build (or find cached) every model the test suite uses, before pytest starts.

``make test`` runs ``python -m tests.support.build_models`` first, so a first build on a new
machine (minutes for the trained tool model) happens outside any per-test timeout, with its
progress printed, and a model that fails its check (:mod:`tests.support.tool_model_check`) stops
the run here with the reason instead of failing tests one by one.
"""

from __future__ import annotations

import sys
import time


def main() -> int:
    """Resolve the built-in models, the PRM classifier and probe and the tool model; returns 0 (raises on a
    failed build)."""
    from openclaw_rl.models import resolve_model_path
    from tests.support.tool_model import recipe_key, tool_model_path

    for name in ("builtin:tiny-qwen3", "builtin:smollm2-135m", "builtin:tiny-qwen2-vl"):
        t0 = time.time()
        path = resolve_model_path(name)
        print(f"test models: {name} -> {path} ({time.time() - t0:.0f} s)", flush=True)
    from openclaw_rl.judges.classifier import classifier_path, load_classifier
    t0 = time.time()
    load_classifier()  # the default CPU PRM judge: trained once into the model cache
    print(f"test models: PRM classifier -> {classifier_path()} ({time.time() - t0:.0f} s)", flush=True)
    from openclaw_rl.judges.probe import ProbeJudgeBackend, probe_path
    t0 = time.time()
    ProbeJudgeBackend("builtin:smollm2-135m").user_probs("ok", "", "")  # the probe PRM mode: built once
    print(f"test models: PRM probe -> {probe_path('builtin:smollm2-135m')} ({time.time() - t0:.0f} s)", flush=True)
    from tests.support.vllm_model import vllm_tiny_model
    t0 = time.time()
    print(f"test models: vLLM's tiny model -> {vllm_tiny_model()} ({time.time() - t0:.0f} s)", flush=True)
    t0 = time.time()
    print(f"test models: tool model (recipe {recipe_key()}); a first build trains it for several minutes...",
          flush=True)
    path = tool_model_path()
    print(f"test models: tool model -> {path} ({time.time() - t0:.0f} s)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
