"""A training job whose own intercept server serves on vLLM (``--backend vllm``, the job's flag):
the prompt rollout generates through vLLM, the step trains on exactly what vLLM sampled, and the
new weights are published to vLLM through its own update API.

Real vLLM (CPU build, ``make vllm``), real Ray, one step on the tiny hd64 model.
"""

from __future__ import annotations

import json

import pytest
import ray

from openclaw_rl.capture.store import TrajectoryStore
from openclaw_rl.server.launcher import free_port
from slime.config.run_args import parse_run_args
from slime.train import train
from tests.support.vllm import ENGINE_ARGS, VLLM_PYTHON, needs_vllm
from tests.support.vllm_model import vllm_tiny_model

pytestmark = [pytest.mark.slow, pytest.mark.vllm, needs_vllm]


def test_training_job_serves_and_publishes_on_vllm(tmp_path):
    cfg = parse_run_args([
        "--model-path", str(vllm_tiny_model()), "--num-rollout", "1", "--rollout-batch-size", "2",
        "--n-samples-per-prompt", "2", "--rollout-max-response-len", "6", "--advantage-estimator", "grpo",
        "--prompt-data", "examples/plugins/prompts.jsonl", "--custom-rm-path", "examples/plugins/slime_reward.py",
        "--backend", "vllm", "--engine-python", str(VLLM_PYTHON), "--engine-args", ENGINE_ARGS,
        "--rl-buffer-dir", str(tmp_path / "buf"), "--save", str(tmp_path / "ckpt"),
        "--log-dir", str(tmp_path / "logs"), "--port", str(free_port()), "--api-key", "sk-job", "--lr", "1e-3"])
    try:
        summary = train(cfg)
    finally:
        ray.shutdown()
    assert summary["steps"] == 1 and summary["samples_trained"] == 4
    row = json.loads(next((tmp_path / "logs").glob("run-*/metrics.jsonl")).read_text().splitlines()[-1])
    assert row["rollout/samples"] == 4 and row["rollout/failed"] == 0
    assert row["weight_version"] == 1, row  # published to vLLM (the server answered with version 1)
    # the job's server started its vLLM engine server, which served the step and took the update
    engine_logs = list((tmp_path / "logs" / "engines").glob("engine-vllm-*.log"))
    assert engine_logs, sorted(p.name for p in (tmp_path / "logs").rglob("*"))
    log = "\n".join(p.read_text(errors="replace") for p in engine_logs)
    assert "Reloading and processing weights" in log, log[-3000:]  # vLLM's own weight reload
    store = TrajectoryStore(tmp_path / "buf")
    try:
        turns = [t for s in store.session_ids() for t in store.turns(s)]
    finally:
        store.close()
    assert len(turns) == 4 and all(t.weight_version == 0 and len(t.response_logprobs) == len(t.response_ids) > 0
                                   for t in turns)
