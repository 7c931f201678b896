"""The Track 2 launch scripts end to end: a real Ray job serves the tiny model, runs real episodes
(real sandbox, real scoring) through the intercept server and trains one step.

What the random tiny model writes is not asserted; the test checks the mechanism: the job
succeeds, every episode's steps are recorded as side turns of an ``agent:`` session, the reward
plugin scored every trajectory (``reward/mean`` in the metrics) and a checkpoint was written.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import httpx
import pytest

from openclaw_rl.agentic.sandbox import sandbox_available
from openclaw_rl.capture.store import TrajectoryStore
from openclaw_rl.server.launcher import free_port
from tests.support.ray_head import job_env

REPO = Path(__file__).resolve().parent.parent
pytestmark = [pytest.mark.ray, pytest.mark.slow,
              pytest.mark.skipif(not sandbox_available()[0], reason=f"no sandbox: {sandbox_available()[1]}")]


def _run(script: str, ray_head, tmp_path: Path, **extra: str) -> list[dict]:
    port, dash = ray_head
    env = job_env(port, dash, MODEL_PATH="builtin:tiny-qwen3", PORT=str(free_port()),
                  CKPT_SAVE_DIR=str(tmp_path / "ckpt"), RL_BUFFER_DIR=str(tmp_path / "buf"),
                  LOG_DIR=str(tmp_path / "logs"), NUM_ROLLOUT="1", PARALLEL_ENVS="2",
                  ROLLOUT_ARGS="--rollout-batch-size 2 --n-samples-per-prompt 2 --rollout-max-response-len 12 "
                               "--rollout-max-context-len 4096 --rollout-temperature 1.0",
                  OPTIMIZER_ARGS="--lr 1e-5", **extra)
    r = subprocess.run(["bash", str(REPO / script)], env=env, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-4000:]
    assert "succeeded" in (r.stdout + r.stderr)
    assert (tmp_path / "ckpt" / "checkpoint-latest" / "trainer_state.json").is_file()
    store = TrajectoryStore(tmp_path / "buf")
    sessions = [s for s in store.session_ids() if s.startswith("agent:")]
    assert len(sessions) == 4  # 2 prompts x 2 samples, one session per episode
    assert all(t.turn_type == "side" and t.prompt_ids and t.response_ids for s in sessions for t in store.turns(s))
    rows = [json.loads(x) for p in (tmp_path / "logs").glob("run-*/metrics.jsonl") for x in p.read_text().splitlines()]
    assert rows and "reward/mean" in rows[-1] and rows[-1].get("rollout/failed", 0) == 0
    assert rows[-1]["agent/episodes"] == 4 and rows[-1]["agent/steps"] >= 1
    return rows


def test_toolcall_script_one_step(ray_head, tmp_path):
    rows = _run("toolcall-rl/run_toolcall_rl.sh", ray_head, tmp_path, ENV_TYPE="toolcall")
    # a random model boxes no correct answer: every trajectory scores upstream's shaped -1.1 .. -0.6
    assert -1.1 - 1e-9 <= rows[-1]["reward/mean"] <= -0.6 + 1e-9


def test_toolcall_script_refuses_another_env_type(tmp_path):
    r = subprocess.run(["bash", str(REPO / "toolcall-rl/run_toolcall_rl.sh")], capture_output=True, text=True,
                       env={**job_env(1, 1), "ENV_TYPE": "terminal", "TRAIN_JOB_DRY_RUN": "1"}, timeout=60)
    assert r.returncode == 2 and "ENV_TYPE must be toolcall" in r.stderr


def test_toolcall_prm_variant_trains_step_wise_with_dynamic_history(ray_head, tmp_path):
    # the deterministic step judge (rule:observation) so the PRM path is exercised without a judge model
    rows = _run("toolcall-rl/retool_qwen3_4b_prm_rl.sh", ray_head, tmp_path, PRM_MODEL_PATH="rule:observation",
                PRM_M="2", EXTRA_ARGS="--dynamic-history")
    last = rows[-1]
    assert last["step_wise/steps"] >= 4 and "step_wise/buckets" in last  # one step-sample per step at least


def test_terminal_script_one_step_on_a_pool_worker_behind_the_router(ray_head, tmp_path):
    from tests.test_pool_server import serve

    with serve(tmp_path, "openclaw_rl.agentic.pool_server", "--max-envs", "4", "--env-type", "terminal") as (url, _):
        _run("terminal-rl/run_terminal_rl.sh", ray_head, tmp_path, ENV_TYPE="terminal", MAX_STEPS="2",
             WORKER_URLS=url, ROUTER_PORT=str(free_port()))
        status = httpx.get(f"{url}/status", timeout=10).json()
    # every episode leased a sandboxed environment on the worker, through the router, and gave it back
    assert status["allocated"] == 4 and status["in_use"] == 0 and status["closed"] == 4
