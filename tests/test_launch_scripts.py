"""The Binary RL launch script, end to end through a real local Ray job (offline, DATA_PATH); its
console shows a line per step, the job's own output goes to the run's log file.

The tests record sessions through a real server (chat completions; the Responses and the
Anthropic Messages API), export them, and run ``openclaw-rl/run_qwen3_7b_openclaw_rl.sh`` for one
step on the tiny model, submitted to the test process's private Ray head (``ray_head``:
``ray start --block`` on private ports, stopped by PID).
"""

from __future__ import annotations

import re
import subprocess
import uuid
from pathlib import Path

import pytest

from openclaw_rl.capture.store import TrajectoryStore
from tests.support.ray_head import job_env
from tests.support.sessions import record_sessions

REPO = Path(__file__).resolve().parent.parent
pytestmark = [pytest.mark.ray, pytest.mark.slow]


def _one_step(ray_head, data: Path, tmp_path: Path, batch: int = 2) -> subprocess.CompletedProcess:
    """Run the launch script for one offline step of ``batch`` samples on ``data``; returns the
    finished process."""
    port, dash = ray_head
    env = job_env(port, dash, RAY_ADDRESS=f"127.0.0.1:{port}",  # the GCS form: the script asks the cluster for its job API
                  MODEL_PATH="builtin:tiny-qwen3", DATA_PATH=str(data),
                  CKPT_SAVE_DIR=str(tmp_path / "ckpt"), RL_BUFFER_DIR=str(tmp_path / "buf"),
                  LOG_DIR=str(tmp_path / "logs"),
                  ROLLOUT_ARGS=f"--rollout-batch-size {batch} --num-rollouts-per-prompt 1 --num-rollout 1 "
                               "--rollout-max-response-len 8",
                  EXTRA_ARGS="--custom-rm-path tests/plugins/low_ids_reward.py")
    r = subprocess.run(["bash", str(REPO / "openclaw-rl" / "run_qwen3_7b_openclaw_rl.sh")], env=env,
                       capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-4000:]
    assert "succeeded" in (r.stdout + r.stderr)
    return r


def test_binary_rl_script_one_offline_step(tiny_server, ray_head, tmp_path):
    """Three sessions, one per API (chat completions, the Responses API, the Anthropic Messages
    API), recorded alike and trained in one step (a batch of six: every judged turn of the three).
    The session ids are this test's own: the server is shared, and other tests record ``s1``..."""
    port, dash = ray_head
    tag = uuid.uuid4().hex[:8]
    sessions = tuple(f"{api}-{tag}" for api in ("chat", "responses", "messages"))
    data = record_sessions(tiny_server, tmp_path / "sessions.jsonl", sessions=sessions,
                           apis=("chat", "responses", "messages"))
    r = _one_step(ray_head, data, tmp_path, batch=6)
    assert f"submitting to the Ray cluster at 127.0.0.1:{port} (job API http://127.0.0.1:{dash})" in r.stdout
    # the console: the script's few lines and one line for the step; Ray's, the libraries' and the
    # trainer's lines are in the run's log file
    console = (r.stdout + r.stderr).splitlines()
    steps = [line for line in console if line.startswith("step ")]
    assert len(steps) == 1 and steps[0].startswith("step 1/1 | reward ") and " (6) | " in steps[0], console
    assert len(console) <= 12 and not any("pid=" in line or "INFO" in line for line in console), console
    run_log = Path(re.search(r"succeeded; full log: (\S+)$", r.stdout, re.M).group(1))
    assert run_log.parent == tmp_path / "logs"
    log = run_log.read_text()
    assert "(TrainActor pid=" in log and "(RolloutManager pid=" in log and "Job 'openclaw-" in log
    assert (tmp_path / "ckpt" / "checkpoint-latest" / "trainer_state.json").is_file()
    rows = list((tmp_path / "logs").glob("run-*/metrics.jsonl"))
    assert rows and '"step": 1' in rows[0].read_text()
    store = TrajectoryStore(tmp_path / "buf")
    trained = {t.session_id for t in store.turns(status="trained")}
    store.close()
    assert trained == set(sessions)


def test_a_failed_job_ends_on_the_trainers_one_line_reason(ray_head, tmp_path):
    """Ray's client repeats the job's last logs after "Job ... failed"; the launch script's last line
    is the trainer's own one-line error (here: a resume from a folder with no checkpoint)."""
    port, dash = ray_head
    data = tmp_path / "sessions.jsonl"
    data.write_text('{"session_id": "s", "turns": [{"prompt": "q", "response": "a", "next_state": "ok"}]}\n')
    env = job_env(port, dash, MODEL_PATH="builtin:tiny-qwen3", DATA_PATH=str(data),
                  CKPT_SAVE_DIR=str(tmp_path / "ckpt"), RL_BUFFER_DIR=str(tmp_path / "buf"),
                  LOG_DIR=str(tmp_path / "logs"), EXTRA_ARGS=f"--resume-from-checkpoint {tmp_path / 'none'}")
    r = subprocess.run(["bash", str(REPO / "openclaw-rl" / "run_qwen3_7b_openclaw_rl.sh")], env=env,
                       capture_output=True, text=True, timeout=900)
    assert r.returncode != 0
    last = r.stderr.rstrip().splitlines()[-1]
    assert last.startswith("run_qwen3_7b_openclaw_rl.sh: job openclaw-openclaw-rl-"), r.stderr[-3000:]
    assert last.endswith(f"failed (exit {r.returncode}): slime/train.py: error: --resume-from-checkpoint "
                         f"{tmp_path / 'none'}: no checkpoint (trainer_state.json) at or under {tmp_path / 'none'}"), last
