"""swe-rl's launch scripts: the variants' flags (dry runs, fast) and one real training step as a
Ray job (slow): the tiny model, real sandboxed repository containers on an exec server behind the
pool server the script starts, real scoring, a checkpoint.

What the random tiny model writes is not asserted; the test checks the mechanism: the job
succeeds, every episode's steps are side turns of an ``agent:`` session, every episode was scored
(+1 or -1) and its container given back, its trajectory saved.
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
_SANDBOX = pytest.mark.skipif(not sandbox_available()[0], reason=f"no sandbox: {sandbox_available()[1]}")


def _dry(script: str, tmp_path: Path, **extra: str) -> tuple[list[str], dict]:
    r = subprocess.run(["bash", str(REPO / script)], capture_output=True, text=True, timeout=120,
                       env={**job_env(1, 1), "TRAIN_JOB_DRY_RUN": "1", "LOG_DIR": str(tmp_path / "logs"), **extra})
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    argv = json.loads(r.stdout.split("TRAIN_JOB_ARGV=", 1)[1].splitlines()[0])
    env = json.loads(r.stdout.split("TRAIN_JOB_RUNTIME_ENV=", 1)[1].splitlines()[0])["env_vars"]
    return argv, env


def test_variants_set_their_flags(tmp_path):
    argv, env = _dry("swe-rl/run_swe_rl.sh", tmp_path, ENV_TYPE="swe", SWE_ROLLOUT_TIMEOUT="600",
                     SWE_SAVE_TRAJ_DIR=str(tmp_path / "traj"))
    assert argv[argv.index("--advantage-estimator") + 1] == "grpo"
    assert argv[argv.index("--custom-generate-function-path") + 1].endswith("swe-rl/generate.py:generate")
    assert Path(argv[argv.index("--prompt-data") + 1]).name == "train.jsonl"
    assert env["SWE_ROLLOUT_TIMEOUT"] == "600" and env["SWE_SAVE_TRAJ_DIR"] == str(tmp_path / "traj")
    argv, env = _dry("swe-rl/scripts/run_swe_rl_8b_prm.sh", tmp_path)
    assert "--prm-enable" in argv and argv[argv.index("--advantage-estimator") + 1] == "step_wise"
    argv, _ = _dry("swe-rl/scripts/run_swe_rl_lora.sh", tmp_path)
    assert "--use-lora" in argv
    argv, _ = _dry("swe-rl/scripts/run_swe_rl_8b.sh", tmp_path, HF_CKPT="builtin:tiny-qwen3", SAVE_CKPT=str(tmp_path / "c"))
    assert argv[argv.index("--model-path") + 1] == "builtin:tiny-qwen3" and argv[argv.index("--save") + 1] == str(tmp_path / "c")


def test_swe_bench_path_becomes_prompt_rows(tmp_path):
    from openclaw_rl.envs.swe.data import ensure_converted

    bench = ensure_converted()
    argv, _ = _dry("swe-rl/run_swe_rl.sh", tmp_path, ENV_TYPE="swe", SWE_BENCH_PATH=str(bench / "swe_eval.jsonl"))
    rows = [json.loads(x) for x in Path(argv[argv.index("--prompt-data") + 1]).read_text().splitlines()]
    assert len(rows) == 12 and all(r["metadata"]["env_type"] == "swe" for r in rows)
    assert all(Path(r["metadata"]["instance"]["image"]).is_dir() for r in rows)


def test_refuses_another_env_type_and_a_missing_bench(tmp_path):
    r = subprocess.run(["bash", str(REPO / "swe-rl/run_swe_rl.sh")], capture_output=True, text=True, timeout=60,
                       env={**job_env(1, 1), "ENV_TYPE": "gui", "TRAIN_JOB_DRY_RUN": "1"})
    assert r.returncode == 2 and "ENV_TYPE must be swe" in r.stderr
    r = subprocess.run(["bash", str(REPO / "swe-rl/run_swe_rl.sh")], capture_output=True, text=True, timeout=60,
                       env={**job_env(1, 1), "SWE_BENCH_PATH": str(tmp_path / "nope.jsonl"), "TRAIN_JOB_DRY_RUN": "1",
                            "LOG_DIR": str(tmp_path)})
    assert r.returncode == 2 and "no such file" in r.stderr


@pytest.mark.ray
@pytest.mark.slow
@_SANDBOX
@pytest.mark.parametrize("script,extra", [
    ("swe-rl/run_swe_rl.sh", {}),
    # the deterministic step judge, so the PRM path runs without a judge model
    # (a long variant of a path make test already covers: make test-exhaustive)
    pytest.param("swe-rl/scripts/run_swe_rl_8b_prm.sh", {"PRM_MODEL_PATH": "rule:observation", "PRM_M": "2"},
                 marks=pytest.mark.exhaustive),
])
def test_swe_script_one_step_on_exec_server_behind_pool(ray_head, tmp_path, script, extra):
    from openclaw_rl.envs.swe.data import ensure_converted
    from tests.test_pool_server import serve

    port, dash = ray_head
    with serve(tmp_path, "openclaw_rl.envs.swe.exec_server", "--image-root", str(ensure_converted())) as (exec_url, _):
        env = job_env(port, dash, MODEL_PATH="builtin:tiny-qwen3", PORT=str(free_port()),
                      CKPT_SAVE_DIR=str(tmp_path / "ckpt"), RL_BUFFER_DIR=str(tmp_path / "buf"),
                      LOG_DIR=str(tmp_path / "logs"), NUM_ROLLOUT="1", PARALLEL_ENVS="2", SWE_STEP_LIMIT="2",
                      SWE_EXEC_SERVER_URLS=exec_url, SWE_ENV_SERVER_PORT="0",
                      SWE_SAVE_TRAJ_DIR=str(tmp_path / "traj"), ENV_TYPE="swe",
                      ROLLOUT_ARGS="--rollout-batch-size 2 --n-samples-per-prompt 2 --rollout-max-response-len 12 "
                                   "--rollout-max-context-len 8192 --rollout-temperature 1.0",
                      OPTIMIZER_ARGS="--lr 1e-5", **extra)
        r = subprocess.run(["bash", str(REPO / script)], env=env, capture_output=True, text=True, timeout=900)
        status = httpx.get(f"{exec_url}/status", timeout=10).json()
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-4000:]
    assert (tmp_path / "ckpt" / "checkpoint-latest" / "trainer_state.json").is_file()
    # 4 episodes, each a container for the agent and a fresh one for scoring, all given back
    assert status["created"] == 4 and status["evaluated"] == 4 and status["live"] == 0
    store = TrajectoryStore(tmp_path / "buf")
    sessions = [s for s in store.session_ids() if s.startswith("agent:")]
    assert len(sessions) == 4
    assert all(t.turn_type == "side" and t.prompt_ids and t.response_ids for s in sessions for t in store.turns(s))
    rows = [json.loads(x) for p in (tmp_path / "logs").glob("run-*/metrics.jsonl") for x in p.read_text().splitlines()]
    last = rows[-1]
    assert last["agent/episodes"] == 4 and last.get("rollout/failed", 0) == 0 and "agent/resolved" in last
    assert -1.0 <= last["reward/mean"] <= 1.0
    if extra:  # every step judged: step-wise buckets in the metrics
        assert "step_wise/buckets" in last or "step_wise/steps" in last, sorted(last)
    trajs = [json.loads(p.read_text()) for p in (tmp_path / "traj").glob("*.json")]
    assert len(trajs) == 4 and all(t["score"] in (1.0, -1.0) and 1 <= len(t["steps"]) <= 2 for t in trajs)
