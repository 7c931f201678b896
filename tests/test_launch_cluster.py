"""The launch scripts run on the Ray cluster the user names, not on a head of their own.

Two private Ray heads on loopback: ``local`` listens on the ports the script would use for a head
of its own (``RAY_PORT`` / ``RAY_DASHBOARD_PORT``), ``remote`` on other ports and stands in for
another cluster. With ``RAY_ADDRESS`` naming the remote head (its job API URL), the job must run
there and nothing on the local head; a script submitted itself as a Ray job (the seed's cloud
recipe, ``ray job submit -- bash <script>``) trains inside that job, with no nested job.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.ray_head import job_env, private_ray_head
from tests.support.sessions import record_sessions

REPO = Path(__file__).resolve().parent.parent
SCRIPT = REPO / "openclaw-rl" / "run_qwen3_7b_openclaw_rl.sh"
pytestmark = [pytest.mark.ray, pytest.mark.slow]


def _jobs(dash: int) -> list[dict]:
    """The jobs a head knows (``ray job list``, parsed from its JSON-ish repr via the SDK)."""
    code = ("import json, sys; from ray.job_submission import JobSubmissionClient; "
            "c = JobSubmissionClient(sys.argv[1]); "
            "print(json.dumps([{'submission_id': j.submission_id, 'status': getattr(j.status, 'value', str(j.status)), "
            "'entrypoint': j.entrypoint} for j in c.list_jobs()]))")
    env = {**os.environ, "RAY_AUTH_MODE": "token"}
    out = subprocess.run([sys.executable, "-c", code, f"http://127.0.0.1:{dash}"], env=env,
                         capture_output=True, text=True, check=True, timeout=120)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _offline_env(local: tuple[int, int], data: Path, out: Path, **extra: str) -> dict:
    return job_env(*local, MODEL_PATH="builtin:tiny-qwen3", DATA_PATH=str(data),
                   CKPT_SAVE_DIR=str(out / "ckpt"), RL_BUFFER_DIR=str(out / "buf"), LOG_DIR=str(out / "logs"),
                   ROLLOUT_ARGS="--rollout-batch-size 2 --num-rollouts-per-prompt 1 --num-rollout 1 "
                                "--rollout-max-response-len 8",
                   EXTRA_ARGS="--custom-rm-path tests/plugins/low_ids_reward.py", **extra)


def _trained(out: Path) -> bool:
    rows = list((out / "logs").glob("run-*/metrics.jsonl"))
    return (out / "ckpt" / "checkpoint-latest" / "trainer_state.json").is_file() and bool(rows) \
        and '"step": 1' in rows[0].read_text()


def test_job_runs_on_the_cluster_ray_address_names(tiny_server, ray_head, tmp_path):
    """The "remote" cluster is the shared test head (jobs of other tests may be on it: only the
    jobs this test adds are counted); the "local" one is this test's own, which must stay empty."""
    data = record_sessions(tiny_server, tmp_path / "sessions.jsonl")
    (tmp_path / "local").mkdir()
    remote = ray_head
    earlier = {j["submission_id"] for j in _jobs(remote[1])}

    def new_remote_jobs() -> list[dict]:
        return [j for j in _jobs(remote[1]) if j["submission_id"] not in earlier]

    with private_ray_head(tmp_path / "local") as local:
        # 1. the launch script with RAY_ADDRESS = the remote head's job API URL
        out = tmp_path / "run1"
        env = _offline_env(local, data, out)
        env["RAY_ADDRESS"] = f"http://127.0.0.1:{remote[1]}"
        r = subprocess.run(["bash", str(SCRIPT)], env=env, capture_output=True, text=True, timeout=900)
        assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-4000:]
        assert f"submitting to the Ray cluster at http://127.0.0.1:{remote[1]}" in r.stdout
        assert "started a Ray head" not in r.stdout
        assert _trained(out)
        remote_jobs, local_jobs = new_remote_jobs(), _jobs(local[1])
        assert [j["status"] for j in remote_jobs] == ["SUCCEEDED"], remote_jobs
        assert local_jobs == []

        # 2. the script submitted as a Ray job itself trains inside it: no nested job
        out = tmp_path / "run2"
        job_vars = {k: v for k, v in _offline_env(local, data, out).items()
                    if k in ("MODEL_PATH", "DATA_PATH", "CKPT_SAVE_DIR", "RL_BUFFER_DIR", "LOG_DIR",
                             "ROLLOUT_ARGS", "EXTRA_ARGS", "PYTHON", "RAY_AUTH_MODE")}
        env = {**os.environ, "RAY_AUTH_MODE": "token",
               "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
        r = subprocess.run([str(Path(sys.executable).parent / "ray"), "job", "submit",
                            "--address", f"http://127.0.0.1:{remote[1]}", "--working-dir", str(REPO),
                            "--runtime-env-json", json.dumps({"env_vars": job_vars}), "--",
                            "bash", "openclaw-rl/run_qwen3_7b_openclaw_rl.sh"],
                           env=env, capture_output=True, text=True, timeout=900, cwd=REPO)
        assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-4000:]
        assert "running inside a Ray job: training on its cluster" in r.stdout
        assert _trained(out)
        assert len(new_remote_jobs()) == 2  # run 1's job and this one: nothing nested
        assert _jobs(local[1]) == []


def test_job_address_forms(ray_head):
    """``python -m openclaw_rl.launch.job_address``: a GCS address becomes its cluster's job API
    URL; a job API URL is checked; Ray Client and dead URLs are one-line errors."""
    port, dash = ray_head
    env = {**os.environ, "RAY_AUTH_MODE": "token"}

    def run(address: str):
        return subprocess.run([sys.executable, "-m", "openclaw_rl.launch.job_address"],
                              env={**env, "RAY_ADDRESS": address}, capture_output=True, text=True,
                              timeout=120, cwd=REPO)

    r = run(f"127.0.0.1:{port}")
    assert (r.returncode, r.stdout.strip()) == (0, f"http://127.0.0.1:{dash}"), r.stderr
    r = run(f"http://127.0.0.1:{dash}/")
    assert (r.returncode, r.stdout.strip()) == (0, f"http://127.0.0.1:{dash}"), r.stderr
    for bad in (f"ray://127.0.0.1:{port}", "http://127.0.0.1:9", ""):
        r = run(bad)
        assert r.returncode == 2 and r.stdout == ""
        assert len(r.stderr.strip().splitlines()) == 1 and r.stderr.startswith("error: ")


def test_a_dead_remote_address_is_a_one_line_error(tmp_path):
    """A RAY_ADDRESS that names another cluster where nothing answers: exit 2, one line, no head
    started (the old script silently started a local head and ran there)."""
    env = {**os.environ, "RAY_ADDRESS": "127.0.0.2:9", "RAY_PORT": "6399", "PYTHON": sys.executable,
           "RAY_AUTH_MODE": "token", "MODEL_PATH": "builtin:tiny-qwen3", "LOG_DIR": str(tmp_path / "logs"),
           "CKPT_SAVE_DIR": str(tmp_path / "ckpt"), "RL_BUFFER_DIR": str(tmp_path / "buf"),
           "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    r = subprocess.run(["bash", str(SCRIPT)], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 2
    assert "no Ray cluster answers at RAY_ADDRESS=127.0.0.2:9" in r.stderr
    assert "started a Ray head" not in r.stdout
