"""``openclaw-rl eval --eval-tasks math-tool`` / ``terminal`` / ``swe`` / ``gui``: held-out agent episodes through the evaluation
harness (real server, real sandbox, real scoring), recorded as side turns, with the same result
file and interval as the other tasks. What the random tiny model answers is not asserted."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from openclaw_rl.agentic.sandbox import sandbox_available
from openclaw_rl.evaluation.tasks import DEFAULT_TASKS, task_names
from openclaw_rl.server.launcher import REPO

pytestmark = pytest.mark.skipif(not sandbox_available()[0], reason=f"no sandbox: {sandbox_available()[1]}")


@pytest.mark.parametrize("task,id_prefix,scores", [
    ("math-tool", "gsm8k/", None),                  # the math reward: 1, or upstream's shaped -1.1 .. -0.6
    ("terminal", "agentbench-os-dev-", {-1.0, 1.0}),  # the task checks' 2*acc - 1
    ("swe", "ipi-", {-1.0, 1.0}),                     # resolved +1 / not -1 (mini-swe-agent loop)
    ("gui", "circle-center#", {-1.0, 1.0}),          # MiniWoB's own reward (the first held-out page)
])
def test_agent_eval_runs_held_out_episodes(tiny_server, tmp_path, task, id_prefix, scores):
    args = [sys.executable, "-m", "openclaw_rl.cli", "eval", "--server-url", tiny_server.base_url, "--api-key",
            "sk-test", "--out", str(tmp_path), "--no-progress", "--eval-tasks", task, "--limit", "2",
            "--max-tokens", "16"]
    env = {**os.environ, "SWE_STEP_LIMIT": "1"}  # swe: mini-swe-agent's config allows 250 steps
    r = subprocess.run(args, cwd=REPO, capture_output=True, text=True, timeout=600, env=env)
    assert r.returncode == 0, r.stderr[-3000:]
    [items] = list((tmp_path / "items").glob(f"*/{task}.jsonl"))
    rows = [json.loads(x) for x in items.read_text().splitlines()]
    assert len(rows) == 2 and all(row["id"].startswith(id_prefix) for row in rows)
    for row in rows:  # every episode ran and was scored by its environment
        d = row["detail"]
        assert d["steps"] >= 1 and d["env_score"] is not None and row["score"] == float(d["env_score"] >= 1.0)
        assert d["env_score"] in scores if scores else (d["env_score"] == 1.0 or -1.1 <= d["env_score"] <= -0.6)
    if task == "swe":  # the injection report reads the same items
        from openclaw_rl.envs.swe.report import report

        [summary] = report(tmp_path).values()
        assert summary["n"] == 2 and summary["resolved"] == sum(r["score"] for r in rows)
        assert summary["injected"] == sum(1 for r in rows if r["detail"]["injection"]["injected"])
    res = json.loads((tmp_path / "results.json").read_text())["results"][task]
    [(key, cell)] = res.items()
    assert cell["n"] == 2 and cell["metric"] == "solved" and len(cell["ci95"]) == 2


def test_agent_tasks_are_named_but_not_default():
    agents = {"math-tool", "terminal", "swe", "gui"}
    assert agents <= set(task_names()) and not agents & set(DEFAULT_TASKS)
