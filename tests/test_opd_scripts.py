"""The OPD and Combine launch scripts, end to end through a real local Ray job (offline, DATA_PATH).

Sessions are recorded through a real server on the tiny model and exported; after each reply the
user corrects it ("No, answer in French please."). The script then runs one step with the default
judges for a built-in model, which are deterministic: the lexical PRM votes -1 on the correction and
the extractive hint judge accepts its sentence as the hint, whatever the random model said. The
train actor scores the hinted teacher on the student's ids; the metrics carry the dispatch counts,
the acceptance rate and the weights and clip in force (``OPENCLAW_COMBINE_W_OPD``, ``OPD_ADV_CLIP``).
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
    data = record_sessions(tiny_server, tmp_path / "sessions.jsonl", sessions=("o1", "o2", "o3", "o4"),
                           reply="No, answer in French please.")
    env = {**os.environ, "MODEL_PATH": "builtin:tiny-qwen3", "DATA_PATH": str(data),
           "CKPT_SAVE_DIR": str(tmp_path / "ckpt"), "RAY_PORT": str(port), "RAY_DASHBOARD_PORT": str(dash),
           "RAY_ADDRESS": f"http://127.0.0.1:{dash}", "PYTHON": sys.executable, "RAY_AUTH_MODE": "token",
           "RL_BUFFER_DIR": str(tmp_path / "buf"), "LOG_DIR": str(tmp_path / "logs"), "MAJORITY_VOTE_N": "3",
           "ROLLOUT_ARGS": "--rollout-batch-size 2 --num-rollouts-per-prompt 1 --num-rollout 1 "
                           "--rollout-max-response-len 8",
           # the tiny model's 6-token replies are all cut at max_tokens: train them (default: masked)
           "EXTRA_ARGS": "--rollout-timeout-s 600 --truncated-replies train", **extra_env}
    r = subprocess.run(["bash", str(REPO / script)], env=env, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-4000:]
    rows = [json.loads(line) for p in (tmp_path / "logs").rglob("metrics.jsonl") for line in p.read_text().splitlines()]
    assert rows, "no metrics written"
    return rows[-1]


def test_combine_script_one_offline_step(tiny_server, ray_head, tmp_path):
    m = _run("openclaw-combine/run_qwen3_7b_openclaw_combine.sh", tiny_server, ray_head, tmp_path,
             {"OPENCLAW_COMBINE_W_OPD": "0.5"})
    # both turns: PRM -1 on the correction and an accepted hint
    assert m["combine/n_both"] == 2 and m["judge/hint_accepted"] >= 2
    assert m["combine/w_opd"] == 0.5 and m["combine/w_rl"] == 1.0  # OPENCLAW_COMBINE_W_OPD reached the job
    # each branch normalised by its RMS: the RL term is |w_rl * r / rms| = 1 on every token, the
    # OPD term's mean |.| is at most w_opd (mean |x| / rms(x) <= 1)
    assert m["combine/rl_contrib"] == pytest.approx(1.0)
    assert 0.0 < m["combine/opd_contrib"] <= 0.5 + 1e-6
    assert m["train/skipped"] == 0


@pytest.mark.exhaustive  # LoRA variant of the OPD script path (make test-exhaustive)
def test_opd_lora_script_one_offline_step(tiny_server, ray_head, tmp_path):
    m = _run("openclaw-opd/run_qwen3_7b_lora_openclaw_opd.sh", tiny_server, ray_head, tmp_path,
             {"LORA_ARGS": "--use-lora --lora-rank 4", "OPD_ADV_CLIP": "0.001"})
    assert m["opd/n"] == 2 and m["judge/hint_accepted"] >= 2
    # OPD_ADV_CLIP reached the job: every advantage within the bound
    assert m["opd/adv_clip"] == 0.001 and 0.0 < m["opd/adv_abs_mean"] <= 0.001 + 1e-12
    assert m["train/skipped"] == 0
