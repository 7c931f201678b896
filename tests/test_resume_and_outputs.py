"""A run's outputs and its resumption, through ``python slime/train.py`` run from another directory:
relative path flags land where the caller meant, the run's config is saved, published weight
versions are pruned, and after ``--resume-from-checkpoint`` the resumed weights are served and
staleness counts from their version."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from slime.orchestration.ray_actors import RUN_CONFIG, prune_published
from tests.support.ray_head import driver_env

REPO = Path(__file__).resolve().parent.parent
pytestmark = [pytest.mark.ray, pytest.mark.slow]


def _sessions(path: Path, n: int = 6) -> Path:
    path.write_text("".join(json.dumps({"session_id": f"s{i}", "turns": [
        {"prompt": [{"role": "user", "content": f"question {i}"}], "response": f"answer {i}",
         "next_state": "thanks"}]}) + "\n" for i in range(n)))
    return path


def _train(cwd: Path, ray_port: int, *args: str) -> dict:
    env = driver_env(ray_port, "SLIME_CALLER_CWD", "DATA_PATH")
    r = subprocess.run([sys.executable, str(REPO / "slime" / "train.py"), "--model-path", "builtin:tiny-qwen3",
                        "--data-path", "sessions.jsonl", "--custom-rm-path", "tests/plugins/low_ids_reward.py",
                        "--rollout-batch-size", "2", "--save", "./ckpt", "--log-dir", "./logs", *args],
                       cwd=cwd, env=env, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-5000:]
    return json.loads(r.stdout[r.stdout.index("{"):])


def _steps(cwd: Path) -> list[dict]:
    rows = []
    for path in sorted((cwd / "logs").glob("run-*/metrics.jsonl")):
        rows += [json.loads(line) for line in path.read_text().splitlines()]
    return rows


def test_resume_serves_the_resumed_version_and_prunes_published(ray_head, tmp_path):
    work = tmp_path / "elsewhere"
    work.mkdir()
    _sessions(work / "sessions.jsonl")
    first = _train(work, ray_head[0], "--num-rollout", "1")
    assert first["steps"] == 1
    # every relative path flag landed under the caller's directory (the plugin came from the repository)
    assert (work / "ckpt" / "checkpoint-1" / "trainer_state.json").is_file()
    assert (work / "ckpt" / "rl_buffer" / "trajectories.sqlite").is_file() and (work / "logs").is_dir()
    saved = json.loads((work / "ckpt" / RUN_CONFIG).read_text())
    assert saved["model_path"] == "builtin:tiny-qwen3" and saved["save"] == str(work / "ckpt")
    assert saved["extra"]["data_path"] == str(work / "sessions.jsonl")
    state = json.loads((work / "ckpt" / "checkpoint-1" / "trainer_state.json").read_text())
    assert state["extra"]["config"]["model_path"] == "builtin:tiny-qwen3"

    second = _train(work, ray_head[0], "--num-rollout", "3", "--resume-from-checkpoint", "ckpt",
                    "--keep-published-versions", "1")
    assert second["start_step"] == 1 and second["steps"] == 2 and second["resumed_weight_version"] == 1
    resumed = [row for row in _steps(work) if row["step"] == 2]
    assert len(resumed) == 1
    # the imported turns were recorded at version 0; the trainer resumed at version 1: staleness 1, not 0
    assert resumed[0]["rollout/staleness_mean"] == 1 and resumed[0]["train/staleness_mean"] == 1
    assert sorted(p.name for p in (work / "ckpt" / "published").iterdir()) == ["version-3"]


def test_prune_published_keeps_the_newest_served(tmp_path):
    for v in (1, 2, 3, 4, 5):
        (tmp_path / f"version-{v}").mkdir()
    (tmp_path / "version-x").mkdir()
    assert prune_published(tmp_path, served=4, keep=2) == ["version-1", "version-2"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["version-3", "version-4", "version-5", "version-x"]
    assert prune_published(tmp_path, served=5, keep=1) == ["version-3", "version-4"]
