"""The launch scripts carry the trainer's environment fallbacks into the Ray job (a submitted job
does not inherit the submitting shell's environment): a bad ``MAJORITY_VOTE_THRESHOLD`` set where
the script runs is the job's one-line error, and a good one reaches the judge."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.support.ray_head import job_env
from tests.support.sessions import record_sessions

REPO = Path(__file__).resolve().parent.parent
pytestmark = [pytest.mark.ray, pytest.mark.slow]


def test_env_fallbacks_reach_the_job(tiny_server, ray_head, tmp_path):
    port, dash = ray_head
    data = record_sessions(tiny_server, tmp_path / "sessions.jsonl", sessions=("e1",))
    env = job_env(port, dash, MODEL_PATH="builtin:tiny-qwen3", DATA_PATH=str(data), MAJORITY_VOTE_THRESHOLD="2",
                  CKPT_SAVE_DIR=str(tmp_path / "ckpt"), RL_BUFFER_DIR=str(tmp_path / "buf"),
                  LOG_DIR=str(tmp_path / "logs"), ROLLOUT_ARGS="--rollout-batch-size 1 --num-rollout 1")
    r = subprocess.run(["bash", str(REPO / "openclaw-rl" / "run_qwen3_7b_openclaw_rl.sh")], env=env,
                       capture_output=True, text=True, timeout=600)
    out = r.stdout + r.stderr
    assert r.returncode != 0, out[-4000:]
    assert "slime/train.py: error: MAJORITY_VOTE_THRESHOLD must be <= 1, got 2.0" in out, out[-4000:]
    env_vars = subprocess.run([str(Path(env["PYTHON"])), "-m", "slime.config.run_args", "--runtime-env"], cwd=REPO,
                              env={**env, "MAJORITY_VOTE_THRESHOLD": "0.75", "PRM_API_KEY": "secret"},
                              capture_output=True, text=True, check=True).stdout
    assert '"MAJORITY_VOTE_THRESHOLD": "0.75"' in env_vars and "secret" not in env_vars
    assert f'"DATA_PATH": "{data.resolve()}"' in env_vars
