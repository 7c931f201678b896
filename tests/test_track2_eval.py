"""``openclaw-rl eval --eval-tasks math-tool``: held-out agent episodes through the evaluation
harness (real server, real sandbox, real scoring), recorded as side turns, with the same result
file and interval as the other tasks. What the random tiny model answers is not asserted."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from openclaw_rl.agentic.sandbox import sandbox_available
from openclaw_rl.evaluation.tasks import DEFAULT_TASKS, TASK_NAMES
from openclaw_rl.server.launcher import REPO

pytestmark = pytest.mark.skipif(not sandbox_available()[0], reason=f"no sandbox: {sandbox_available()[1]}")


def test_math_tool_eval_runs_held_out_episodes(tiny_server, tmp_path):
    args = [sys.executable, "-m", "openclaw_rl.cli", "eval", "--server-url", tiny_server.base_url, "--api-key",
            "sk-test", "--out", str(tmp_path), "--no-progress", "--eval-tasks", "math-tool", "--limit", "2",
            "--max-tokens", "16"]
    r = subprocess.run(args, cwd=REPO, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    [items] = list((tmp_path / "items").glob("*/math-tool.jsonl"))
    rows = [json.loads(x) for x in items.read_text().splitlines()]
    assert len(rows) == 2 and all(row["id"].startswith("gsm8k/") for row in rows)
    for row in rows:  # every episode ran and was scored by its environment
        d = row["detail"]
        assert d["steps"] >= 1 and d["env_score"] is not None and row["score"] == float(d["env_score"] >= 1.0)
    res = json.loads((tmp_path / "results.json").read_text())["results"]["math-tool"]
    [(key, cell)] = res.items()
    assert cell["n"] == 2 and cell["metric"] == "solved" and len(cell["ci95"]) == 2


def test_agent_tasks_are_named_but_not_default():
    assert {"math-tool", "terminal"} <= set(TASK_NAMES) and not {"math-tool", "terminal"} & set(DEFAULT_TASKS)


def test_terminal_eval_scores_held_out_tasks_with_their_checks(tiny_server, tmp_path):
    args = [sys.executable, "-m", "openclaw_rl.cli", "eval", "--server-url", tiny_server.base_url, "--api-key",
            "sk-test", "--out", str(tmp_path), "--no-progress", "--eval-tasks", "terminal", "--limit", "2",
            "--max-tokens", "16"]
    r = subprocess.run(args, cwd=REPO, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    [items] = list((tmp_path / "items").glob("*/terminal.jsonl"))
    rows = [json.loads(x) for x in items.read_text().splitlines()]
    assert len(rows) == 2 and all(row["id"].startswith("agentbench-os-dev-") for row in rows)
    assert all(row["detail"]["env_score"] in (-1.0, 1.0) for row in rows)  # the task checks' 2*acc - 1
