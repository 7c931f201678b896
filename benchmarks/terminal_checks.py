"""How well the terminal-rl checks separate right from wrong, over every offline AgentBench task.

Run from the repository root (as root, after ``make install``)::

    python benchmarks/terminal_checks.py [--workers 2] [--json OUT]

For each offline task (see ``skipped.json`` of the converted data for the others) it plays:

1. **known-good**: the task's own example commands through the agent's tools, their output as
   the answer (score must be +1);
2. **wrong**: the expected integer + 1 (else ``wrong-answer``), or no action for check tasks
   (score must be -1): "how many tasks a wrong answer still passes";
3. **tamper** (answer tasks with an example): delete everything under /home and /tmp first, then
   answer what the example prints now. The answer is wrong for the task as set up; inspect-evals'
   order (example run after the agent, in its container) accepts it whenever the example still
   runs; ours (expected answer taken at reset) must not.

Prints the counts and the p50 episode time (reset + actions + evaluate + close).
"""

from __future__ import annotations

import argparse
import json
import shlex
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from openclaw_rl.agentic.sandbox import Sandbox  # noqa: E402
from openclaw_rl.envs.terminal import checks  # noqa: E402
from openclaw_rl.envs.terminal.data import ensure_converted  # noqa: E402
from openclaw_rl.envs.terminal.env import TerminalEnv  # noqa: E402
from tests.test_terminal_env import _output, play_known_good, play_wrong  # noqa: E402

TAMPER = "find /home /tmp -mindepth 1 ! -path /home/agent -prune -exec rm -rf {} + 2>/dev/null; true"


def _episode(task: dict, play) -> tuple[float, float, TerminalEnv | None]:
    t0 = time.perf_counter()
    env = TerminalEnv(task["task_key"], task)
    try:
        env.reset()
        play(env)
        score = env.evaluate()
    finally:
        env.close()
    return score, time.perf_counter() - t0, env


def _inspect_order(env: TerminalEnv, answer: str) -> bool:
    """inspect-evals 0.28: the recorded match if any, else the example run now, after the agent."""
    ev = env.task["evaluation"]
    expected = ev.get("match") or checks.expected_answer(env.task, env.box)
    if expected is None:
        return False
    with Sandbox() as clean:
        script = checks.stage(clean, env.task, ev["compare_script"])
        return clean.run(f"python3 {script} {shlex.quote(answer)} {shlex.quote(expected)}").returncode == 0


def _tamper(task: dict) -> dict | None:
    example = (task["evaluation"].get("example") or {}).get("code")
    if task["evaluation"]["kind"] != "compare" or not example:
        return None
    env = TerminalEnv(task["task_key"], task)
    try:
        env.reset()
        env.exec_tool({"name": "shell_exec", "arguments": {"command": TAMPER}})
        answer = _output(env.exec_tool({"name": "shell_exec", "arguments": {"command": "{ " + example + "\n} 2>/dev/null"}}))
        env.exec_tool({"name": "submit_answer", "arguments": {"answer": answer}})
        return {"changed": answer != env.expected, "ours": env.evaluate() == 1.0,
                "inspect_order": _inspect_order(env, answer)}
    finally:
        env.close()


def _one(task: dict) -> dict:
    good, t_good, _ = _episode(task, play_known_good)
    wrong, t_wrong, _ = _episode(task, play_wrong)
    return {"task_key": task["task_key"], "good": good, "wrong": wrong, "times": [t_good, t_wrong],
            "tamper": _tamper(task)}


def main(argv: list[str] | None = None) -> dict:
    """Run every offline task; print and return the counts."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    data = ensure_converted()
    tasks = [json.loads(p.read_text()) for p in sorted((data / "tasks").glob("*/task.json"))]
    offline = [t for t in tasks if t["offline"]]
    with ThreadPoolExecutor(args.workers) as pool:
        rows = list(pool.map(_one, offline))
    tampered = [r["tamper"] for r in rows if r["tamper"] and r["tamper"]["changed"]]
    times = [t for r in rows for t in r["times"]]
    summary = {
        "tasks": len(tasks), "offline": len(offline),
        "known_good_scores_1": sum(r["good"] == 1.0 for r in rows),
        "wrong_answer_passes": [r["task_key"] for r in rows if r["wrong"] != -1.0],
        "tamper_answer_tasks": sum(1 for r in rows if r["tamper"]),
        "tamper_changed_answer": len(tampered),
        "tamper_accepted_ours": sum(t["ours"] for t in tampered),
        "tamper_accepted_inspect_order": sum(t["inspect_order"] for t in tampered),
        "episode_p50_s": statistics.median(times), "episode_max_s": max(times),
    }
    print(json.dumps(summary, indent=1))
    if args.json:
        Path(args.json).write_text(json.dumps({"summary": summary, "rows": rows}, indent=1))
    return summary


if __name__ == "__main__":
    main()
