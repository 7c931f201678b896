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


def _run_script(ray_head, tmp_path: Path, **overrides: str) -> subprocess.CompletedProcess:
    """``bash gui-rl/run_gui_rl.sh`` for one step of 2 x 2 episodes (2 steps each) on the head
    ``ray_head``, its GUI pool on a port it binds itself (``GUI_ENV_SERVER_PORT=0``); ``overrides``
    replace or add env vars. Asserts exit 0; returns the finished process."""
    port, dash = ray_head
    env = job_env(port, dash, **{
        "MODEL_PATH": "builtin:tiny-qwen3", "PORT": str(free_port()), "ENV_TYPE": "gui",
        "SCREENSHOT_BACKEND": "playwright", "CKPT_SAVE_DIR": str(tmp_path / "ckpt"),
        "RL_BUFFER_DIR": str(tmp_path / "buf"), "LOG_DIR": str(tmp_path / "logs"), "NUM_ROLLOUT": "1",
        "PARALLEL_ENVS": "2", "GUI_MAX_STEPS": "2", "GUI_ENV_SERVER_PORT": "0",
        "GUI_RESULT_DIR": str(tmp_path / "results"),
        "ROLLOUT_ARGS": "--rollout-batch-size 2 --n-samples-per-prompt 2 --rollout-max-response-len 12 "
                        "--rollout-max-context-len 4096 --rollout-temperature 1.0",
        "OPTIMIZER_ARGS": "--lr 1e-5", **overrides})
    r = subprocess.run(["bash", str(REPO / "gui-rl/run_gui_rl.sh")], env=env, capture_output=True, text=True,
                       timeout=900)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-4000:]
    return r


def test_gui_script_one_step_on_the_pool_it_starts(ray_head, tmp_path):
    results = tmp_path / "results"
    r = _run_script(ray_head, tmp_path)
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


@pytest.mark.exhaustive  # the VL variant of the script test above; tests/test_gui_vision.py covers the
# VL episodes, their capture and the training step on their pixel values in make test
def test_gui_script_screenshots_on_a_vision_language_policy(ray_head, tmp_path):
    """``ENV_TYPE=gui GUI_OBSERVATION_TYPE=screenshot MODEL_PATH=builtin:tiny-qwen2-vl bash
    gui-rl/run_gui_rl.sh``, one step: the episodes' prompts carry the screenshots (recorded with
    their turns), and the Ray job trains one step on samples with their pixel values (the trainer's
    log-probs of the sampled tokens reproduce the server's, which only holds with the images in)."""
    r = _run_script(ray_head, tmp_path, MODEL_PATH="builtin:tiny-qwen2-vl", GUI_OBSERVATION_TYPE="screenshot",
                    GUI_SCREEN_WIDTH="320", GUI_SCREEN_HEIGHT="240", OPTIMIZER_ARGS="--lr 1e-5 --freeze-vision-tower")
    assert "GUI_OBSERVATION_TYPE=screenshot" in r.stdout and "succeeded" in (r.stdout + r.stderr)
    assert (tmp_path / "ckpt" / "checkpoint-latest" / "trainer_state.json").is_file()
    store = TrajectoryStore(tmp_path / "buf")
    sessions = [s for s in store.session_ids() if s.startswith("agent:")]
    turns = [t for s in sessions for t in store.turns(s)]
    store.close()
    assert len(sessions) == 4 and turns and all(t.images and t.images[0]["data_b64"] for t in turns)
    first_user = [next(m for m in t.messages if m["role"] == "user") for t in turns]
    assert all(isinstance(m["content"], list) and m["content"][-1]["type"] == "image" for m in first_user)
    rows = [json.loads(x) for p in (tmp_path / "logs").glob("run-*/metrics.jsonl") for x in p.read_text().splitlines()]
    assert rows and rows[-1]["agent/episodes"] == 4 and rows[-1].get("rollout/failed", 0) == 0
    trained = [row for row in rows if "train/train_rollout_logprob_abs_diff_max" in row]
    assert trained and trained[-1]["train/skipped"] == 0 and trained[-1]["train/train_rollout_logprob_abs_diff_max"] < 1e-4
