"""The OPD and Combine launch scripts, end to end through a real local Ray job (offline, DATA_PATH).

Sessions are recorded through a real server on the tiny model and exported; the script then runs
one step: the judge loop runs the real local judges on the tiny model (structured hint judge; for
Combine also the log-prob PRM), the train actor scores the hinted teacher on the student's ids,
and the metrics carry the dispatch counts and the acceptance rate.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.sessions import record_sessions

REPO = Path(__file__).resolve().parent.parent
pytestmark = [pytest.mark.ray, pytest.mark.slow]


def _run(script: str, tiny_server, ray_head, tmp_path, extra_env: dict) -> dict:
    port, dash = ray_head
    data = record_sessions(tiny_server, tmp_path / "sessions.jsonl", sessions=("o1", "o2", "o3", "o4"))
    env = {**os.environ, "MODEL_PATH": "builtin:tiny-qwen3", "DATA_PATH": str(data),
           "CKPT_SAVE_DIR": str(tmp_path / "ckpt"), "RAY_PORT": str(port), "RAY_DASHBOARD_PORT": str(dash),
           "RAY_ADDRESS": f"127.0.0.1:{port}", "PYTHON": sys.executable, "RAY_AUTH_MODE": "token",
           "RL_BUFFER_DIR": str(tmp_path / "buf"), "LOG_DIR": str(tmp_path / "logs"), "MAJORITY_VOTE_N": "3",
           "ROLLOUT_ARGS": "--rollout-batch-size 2 --num-rollouts-per-prompt 1 --num-rollout 1 "
                           "--rollout-max-response-len 8",
           # the model-written judges (on a built-in model auto picks the lexical PRM and extractive
           # hints, which would reject these "thanks" next states)
           "EXTRA_ARGS": "--hint-mode model --prm-mode logprob --hint-min-chars 1 --hint-max-new-tokens 8 "
                         "--rollout-timeout-s 600", **extra_env}
    r = subprocess.run(["bash", str(REPO / script)], env=env, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-4000:]
    rows = [json.loads(line) for p in (tmp_path / "logs").rglob("metrics.jsonl") for line in p.read_text().splitlines()]
    assert rows, "no metrics written"
    return rows[-1]


def test_combine_script_one_offline_step(tiny_server, ray_head, tmp_path):
    m = _run("openclaw-combine/run_qwen3_7b_openclaw_combine.sh", tiny_server, ray_head, tmp_path,
             {"OPENCLAW_COMBINE_W_OPD": "0.5"})
    assert sum(m[f"combine/n_{b}"] for b in ("both", "opd", "rl", "none")) == 2
    assert m["combine/n_none"] == 0  # judged "none" turns are never sampled
    assert 0.0 < m["judge/hint_acceptance_rate"] <= 1.0 or m["combine/n_rl"] == 2
    assert "combine/opd_contrib" in m and "combine/rl_contrib" in m
    assert m["train/skipped"] == 0


def test_opd_lora_script_one_offline_step(tiny_server, ray_head, tmp_path):
    m = _run("openclaw-opd/run_qwen3_7b_lora_openclaw_opd.sh", tiny_server, ray_head, tmp_path,
             {"LORA_ARGS": "--use-lora --lora-rank 4", "OPD_ADV_CLIP": "5"})
    assert m["opd/n"] == 2 and m["judge/hint_accepted"] >= 2
    assert 0.0 < m["judge/hint_acceptance_rate"] <= 1.0
    assert m["train/skipped"] == 0 and m["opd/adv_abs_mean"] > 0
