"""Sandbox benchmark: what a bubblewrap + overlayfs episode costs next to plain subprocesses.

Run from the repository root (as root; bubblewrap installed by ``make install``)::

    python benchmarks/sandbox.py [--repeats 20] [--json OUT]

Measures, p50 and p95 over ``--repeats`` runs, in one process:

1. **Fresh root.** ``Sandbox()`` start-up: episode dirs, overlay mounts in the holder's private
   mount namespace, pids cgroup. Baseline: ``tempfile.mkdtemp`` (what a plain episode needs).
2. **One command.** ``box.run("true")`` vs ``subprocess.run(["bash", "-c", "true"])``.
3. **Short episode.** Start, write a file, five commands of an AgentBench-like task (setup,
   inspect, act, check), close (kill + remove). Baseline: the same five commands as plain
   subprocesses in a temporary dir, then ``rmtree``.

The ratios (sandbox / baseline) are the numbers to compare across machines; absolute times move
with the machine's load.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from openclaw_rl.agentic.sandbox import Sandbox, sandbox_available  # noqa: E402

EPISODE = [
    "mkdir -p data && for i in 1 2 3; do echo line$i > data/f$i.txt; done",
    "ls data | wc -l",
    "cat data/*.txt | grep -c line",
    "find data -name '*.txt' -newer /etc/hostname | sort",
    "test $(cat data/*.txt | wc -l) -eq 3 && echo ok",
]


def _time(fn, repeats: int) -> list[float]:
    out = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


def _stats(xs: list[float]) -> dict:
    xs = sorted(xs)
    return {"p50_ms": 1000 * statistics.median(xs),
            "p95_ms": 1000 * xs[min(len(xs) - 1, int(0.95 * len(xs)))]}


def _sandbox_episode() -> None:
    with Sandbox() as box:
        box.write_file("/workspace/task.txt", "count the files\n")
        for cmd in EPISODE:
            assert box.run(cmd).returncode == 0


def _plain_episode() -> None:
    d = tempfile.mkdtemp()
    try:
        Path(d, "task.txt").write_text("count the files\n")
        for cmd in EPISODE:
            assert subprocess.run(["bash", "-c", cmd], cwd=d, capture_output=True).returncode == 0
    finally:
        shutil.rmtree(d)


def main(argv: list[str] | None = None) -> dict:
    """Run the benchmark, print a table, return the numbers (also written to ``--json``)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    ok, why = sandbox_available()
    if not ok:
        raise SystemExit(f"no sandbox here: {why}")

    boxes: list[Sandbox] = []
    setup = _time(lambda: boxes.append(Sandbox()), args.repeats)
    for box in boxes:
        box.close()
    with Sandbox() as box:
        one = _time(lambda: box.run("true"), args.repeats)
    rows = {
        "fresh_root": (setup, _time(lambda: shutil.rmtree(tempfile.mkdtemp()), args.repeats)),
        "one_command": (one, _time(lambda: subprocess.run(["bash", "-c", "true"]), args.repeats)),
        "short_episode": (_time(_sandbox_episode, args.repeats), _time(_plain_episode, args.repeats)),
    }
    result = {}
    print(f"{'':16}{'sandbox p50':>14}{'p95':>10}{'plain p50':>12}{'ratio':>9}")
    for name, (sb, plain) in rows.items():
        s, p = _stats(sb), _stats(plain)
        ratio = s["p50_ms"] / max(p["p50_ms"], 1e-9)
        result[name] = {"sandbox": s, "plain": p, "ratio_p50": ratio}
        print(f"{name:16}{s['p50_ms']:12.1f}ms{s['p95_ms']:8.1f}ms{p['p50_ms']:10.1f}ms{ratio:8.1f}x")
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2))
    return result


if __name__ == "__main__":
    main()
