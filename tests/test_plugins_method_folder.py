"""The method-folder contribution pattern, end to end: a checkout with a new top-level folder made
from ``examples/method-template`` (as docs/plugins.md says), whose launch script trains one step
offline through a real Ray job on the tiny model, with the folder's ``custom_loss.py``
(``compute_loss``) and ``custom_rm.py`` (``get_reward_model``, a tiny random classifier)."""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
import subprocess
from pathlib import Path

import pytest

from openclaw_rl.capture.store import TrajectoryStore
from openclaw_rl.rollout.custom_rm import plugin_reward_texts, turn_sample
from tests.support.ray_head import job_env
from tests.support.sessions import record_sessions
from tests.support.tiny_classifier import positive_probability

REPO = Path(__file__).resolve().parent.parent
pytestmark = [pytest.mark.ray, pytest.mark.slow]


def _checkout_with_method(root: Path, name: str) -> Path:
    """A minimal checkout (the packages) plus ``<name>/`` copied from the template; returns the script."""
    for pkg in ("slime", "openclaw_rl"):
        shutil.copytree(REPO / pkg, root / pkg, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    shutil.copytree(REPO / "examples" / "method-template", root / name)
    script = root / name / f"run_qwen3_7b_{name.replace('-', '_')}.sh"
    assert script.is_file()
    return script


def test_method_folder_from_the_template_trains_one_step(tiny_server, tiny_classifier, ray_head, tmp_path):
    port, dash = ray_head
    script = _checkout_with_method(tmp_path / "checkout", "my-method")
    data = record_sessions(tiny_server, tmp_path / "sessions.jsonl")
    env = job_env(port, dash, MODEL_PATH="builtin:tiny-qwen3", PRM_MODEL_PATH=str(tiny_classifier),
                  DATA_PATH=str(data), CKPT_SAVE_DIR=str(tmp_path / "ckpt"), RL_BUFFER_DIR=str(tmp_path / "buf"),
                  LOG_DIR=str(tmp_path / "logs"),
                  # the tiny random model's replies are garbage text by nature: the degenerate-sample
                  # guard masked both of a batch once (mixed scripts, a rare-character run) and the
                  # step was skipped; the guard is not what this test is about
                  ROLLOUT_ARGS="--rollout-batch-size 2 --num-rollouts-per-prompt 1 --num-rollout 1 "
                               "--rollout-max-response-len 8 --truncated-replies train --degenerate-samples train")
    r = subprocess.run(["bash", str(script)], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=900)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out[-6000:]
    assert "succeeded" in out
    out += Path(re.search(r"succeeded; full log: (\S+)$", r.stdout, re.M).group(1)).read_text()  # the job's lines
    # plugin paths are made absolute at start-up (inside the job: Ray's copy of the working dir)
    assert re.search(r"plugin loss: plugin \S*my-method/custom_loss\.py:compute_loss \(simple convention\)", out)
    assert re.search(r"plugin reward: --custom-rm-path \S*my-method/custom_rm\.py:get_reward_model \(simple form\)", out)
    assert (tmp_path / "ckpt" / "checkpoint-latest" / "trainer_state.json").is_file()
    row = json.loads(next((tmp_path / "logs").glob("run-*/metrics.jsonl")).read_text().splitlines()[-1])
    assert row["step"] == 1 and row["train/skipped"] == 0.0 and "train/plugin_loss" in row
    db = sqlite3.connect(tmp_path / "buf" / "trajectories.sqlite")
    rewards = [r for (r,) in db.execute("SELECT reward FROM judgements WHERE method='custom_rm'")]
    db.close()
    # each reward is the classifier's positive-class probability of the turn, computed here independently
    store = TrajectoryStore(tmp_path / "buf")
    judged = [(t, store.judgement(t.id)) for t in store.turns() if t.turn_type == "main"]
    judged = [(t, j) for t, j in judged if j and j.get("method") == "custom_rm"]
    assert len(judged) == len(rewards) >= 2
    for t, j in judged:
        expected = positive_probability(tiny_classifier, *plugin_reward_texts(turn_sample(t)))
        assert j["reward"] == pytest.approx(expected, abs=1e-4)
    store.close()
