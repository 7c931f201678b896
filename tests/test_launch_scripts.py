"""The Binary RL launch script, end to end through a real local Ray job (offline, DATA_PATH).

The test starts its own Ray head (``ray start --block``, stopped by PID) on private ports, records
two sessions through a real server, exports them, and runs
``openclaw-rl/run_qwen3_7b_openclaw_rl.sh`` for one step on the tiny model.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from openclaw_rl.server.launcher import free_port

REPO = Path(__file__).resolve().parent.parent
pytestmark = [pytest.mark.ray, pytest.mark.slow]


def _record_sessions(server, out: Path) -> None:
    for sid in ("s1", "s2", "s3"):
        messages = [{"role": "user", "content": f"hello {sid}"}]
        for i in range(2):
            r = httpx.post(server.base_url + "/chat/completions", timeout=120,
                           headers={"Authorization": "Bearer sk-test", "X-Session-Id": sid},
                           json={"messages": messages, "max_tokens": 6})
            messages += [r.json()["choices"][0]["message"], {"role": "user", "content": f"thanks {i}"}]
    subprocess.run([sys.executable, "-m", "openclaw_rl.cli", "export", "--rl-buffer-dir",
                    str(server.buffer_dir), "--out", str(out)], check=True)


@pytest.fixture
def ray_head(tmp_path):
    port, dash = free_port(), free_port()
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}", "RAY_AUTH_MODE": "token"}
    subprocess.run([str(Path(sys.executable).parent / "ray"), "get-auth-token", "--generate"], env=env,
                   check=True, capture_output=True)
    proc = subprocess.Popen([str(Path(sys.executable).parent / "ray"), "start", "--head", "--block",
                             "--node-ip-address", "127.0.0.1", "--port", str(port),
                             "--dashboard-host", "127.0.0.1", "--dashboard-port", str(dash),
                             "--num-cpus", "2", "--disable-usage-stats"],
                            env=env, stdout=open(tmp_path / "ray.log", "w"), stderr=subprocess.STDOUT)
    deadline = time.time() + 180
    while time.time() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{dash}/api/version", timeout=2).status_code in (200, 401):
                break
        except httpx.HTTPError:
            time.sleep(1)
    else:
        proc.kill()
        raise RuntimeError((tmp_path / "ray.log").read_text())
    yield port, dash
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(60)
    except subprocess.TimeoutExpired:
        proc.kill()


def test_binary_rl_script_one_offline_step(tiny_server, ray_head, tmp_path):
    port, dash = ray_head
    data = tmp_path / "sessions.jsonl"
    _record_sessions(tiny_server, data)
    env = {**os.environ, "MODEL_PATH": "builtin:tiny-qwen3", "DATA_PATH": str(data),
           "CKPT_SAVE_DIR": str(tmp_path / "ckpt"), "RAY_PORT": str(port), "RAY_DASHBOARD_PORT": str(dash),
           "RAY_ADDRESS": f"127.0.0.1:{port}", "PYTHON": sys.executable, "RAY_AUTH_MODE": "token",
           "RL_BUFFER_DIR": str(tmp_path / "buf"), "LOG_DIR": str(tmp_path / "logs"),
           "ROLLOUT_ARGS": "--rollout-batch-size 2 --num-rollouts-per-prompt 1 --num-rollout 1 "
                           "--rollout-max-response-len 8",
           "EXTRA_ARGS": "--custom-rm-path tests/plugins/low_ids_reward.py"}
    r = subprocess.run(["bash", str(REPO / "openclaw-rl" / "run_qwen3_7b_openclaw_rl.sh")], env=env,
                       capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-4000:]
    assert "succeeded" in (r.stdout + r.stderr)
    assert (tmp_path / "ckpt" / "checkpoint-latest" / "trainer_state.json").is_file()
    rows = list((tmp_path / "logs").glob("run-*/metrics.jsonl"))
    assert rows and '"step": 1' in rows[0].read_text()
