"""gui-rl's launch script end to end (issue 14): ``ENV_TYPE=gui SCREENSHOT_BACKEND=playwright bash
gui-rl/run_gui_rl.sh`` starts the GUI pool (real headless Chromium, prewarmed), a real Ray job
serves the tiny model, runs real MiniWoB++ episodes through the intercept server, scores them with
MiniWoB's own reward and trains one step; the pool and every browser are gone afterwards.

What the random tiny model writes is not asserted: the test checks the mechanism (every episode is
an ``agent:`` session of side turns with exact ids, every episode scored +1 or -1 and written to
``GUI_RESULT_DIR``, a checkpoint, and no browser process left, checked by pid).
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from openclaw_rl.capture.store import TrajectoryStore
from openclaw_rl.envs.gui.browser import process_group_alive
from openclaw_rl.server.launcher import free_port
from tests.support.ray_head import job_env

REPO = Path(__file__).resolve().parent.parent
pytestmark = [pytest.mark.ray, pytest.mark.slow,
              pytest.mark.skipif(not os.path.exists("/usr/bin/chromium"), reason="Debian chromium not installed")]


def test_gui_script_one_step_on_the_pool_it_starts(ray_head, tmp_path):
    port, dash = ray_head
    results = tmp_path / "results"
    env = job_env(port, dash, MODEL_PATH="builtin:tiny-qwen3", PORT=str(free_port()), ENV_TYPE="gui",
                  SCREENSHOT_BACKEND="playwright", CKPT_SAVE_DIR=str(tmp_path / "ckpt"),
                  RL_BUFFER_DIR=str(tmp_path / "buf"), LOG_DIR=str(tmp_path / "logs"), NUM_ROLLOUT="1",
                  PARALLEL_ENVS="2", GUI_MAX_STEPS="2", GUI_ENV_SERVER_PORT=str(free_port()),
                  GUI_RESULT_DIR=str(results),
                  ROLLOUT_ARGS="--rollout-batch-size 2 --n-samples-per-prompt 2 --rollout-max-response-len 12 "
                               "--rollout-max-context-len 4096 --rollout-temperature 1.0",
                  OPTIMIZER_ARGS="--lr 1e-5")
    r = subprocess.run(["bash", str(REPO / "gui-rl/run_gui_rl.sh")], env=env, capture_output=True, text=True,
                       timeout=900)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-4000:]
    assert "GUI pool on http://127.0.0.1:" in r.stdout and "succeeded" in (r.stdout + r.stderr)
    assert (tmp_path / "ckpt" / "checkpoint-latest" / "trainer_state.json").is_file()
    store = TrajectoryStore(tmp_path / "buf")
    sessions = [s for s in store.session_ids() if s.startswith("agent:")]
    assert len(sessions) == 4
    assert all(t.turn_type == "side" and t.prompt_ids and t.response_ids for s in sessions for t in store.turns(s))
    rows = [json.loads(x) for p in (tmp_path / "logs").glob("run-*/metrics.jsonl") for x in p.read_text().splitlines()]
    assert rows and rows[-1]["agent/episodes"] == 4 and rows[-1].get("rollout/failed", 0) == 0
    assert -1.0 <= rows[-1]["reward/mean"] <= 1.0
    episodes = [json.loads(p.read_text()) for p in results.glob("*/*.json")]
    assert len(episodes) == 4 and all(e["score"] in (1.0, -1.0) and e["instruction"] for e in episodes)
    time.sleep(0.5)
    assert [e["browser_pid"] for e in episodes if process_group_alive(e["browser_pid"])] == []
