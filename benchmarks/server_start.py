"""Server start benchmark: CPU and wall time until ``/healthz`` answers, today vs a baseline commit.

Run from the repository root::

    python benchmarks/server_start.py [--model-path builtin:tiny-qwen3] [--repeats 5]
                                      [--baseline-ref 35d9136] [--json OUT]

Each start is a real ``python -m openclaw_rl.server`` (:func:`openclaw_rl.server.launcher.start_server`,
as the trainer and the test suite start it). Measured per start: the wall seconds until
``/healthz`` answers and the server process's CPU seconds (user + system, from ``/proc/<pid>/stat``)
at that moment; then the CPU seconds the first ``/v1/messages`` and the first ``/v1/responses``
request add (one 4-token reply each), where a server that defers the SDK types
(:func:`openclaw_rl.server.messages_api.renderer_class`, :func:`openclaw_rl.server.responses_api.renderer_module`)
pays for their import. The baseline is ``--baseline-ref`` (default 35d9136, the last commit that
imported both SDKs' types at start) exported with ``git archive`` and run from its own tree. The two
alternate ``--repeats`` times; printed: medians and today / baseline ratios (below 1: cheaper).

Numbers depend on the machine and its load; compare the ratios of one run.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from openclaw_rl.server.launcher import start_server, stop_server  # noqa: E402
from serving import export_tree  # noqa: E402  (benchmarks/serving.py, this script's folder)

BASELINE_REF = "35d9136"
KEY = "sk-bench"


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` so far (``/proc/<pid>/stat`` fields 14, 15)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def one_start(model_path: str, buffer_dir: Path, cwd: Path | None) -> dict:
    """Start a server, measure it (see the module docstring), stop it; returns the numbers."""
    t0 = time.perf_counter()
    handle = start_server(model_path, buffer_dir, "--default-max-tokens", "4", api_key=KEY, cwd=cwd)
    try:
        wall = time.perf_counter() - t0
        pid = handle.proc.pid
        at_ready = cpu_seconds(pid)
        headers = {"Authorization": f"Bearer {KEY}"}
        url = f"http://127.0.0.1:{handle.port}"
        r = httpx.post(url + "/v1/messages", headers=headers, timeout=120,
                       json={"model": "m", "max_tokens": 4, "messages": [{"role": "user", "content": "hi"}]})
        r.raise_for_status()
        after_messages = cpu_seconds(pid)
        r = httpx.post(url + "/v1/responses", headers=headers, timeout=120,
                       json={"model": "m", "max_output_tokens": 4, "input": "hi"})
        r.raise_for_status()
        after_responses = cpu_seconds(pid)
    finally:
        stop_server(handle)
    return {"start_wall_s": wall, "start_cpu_s": at_ready, "first_messages_cpu_s": after_messages - at_ready,
            "first_responses_cpu_s": after_responses - after_messages}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python benchmarks/server_start.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--model-path", default="builtin:tiny-qwen3")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--baseline-ref", default=BASELINE_REF)
    p.add_argument("--json", type=Path, default=None, help="also write the numbers here")
    args = p.parse_args(argv)
    if args.repeats < 1:
        p.error("--repeats must be at least 1")
    runs: dict[str, list[dict]] = {"today": [], "baseline": []}
    with tempfile.TemporaryDirectory(prefix="bench-server-start-") as tmp:
        tmp = Path(tmp)
        tree = export_tree(args.baseline_ref, tmp / "baseline")
        for i in range(args.repeats):  # alternating, so both see the same background load
            runs["today"].append(one_start(args.model_path, tmp / f"today-{i}" / "buf", None))
            runs["baseline"].append(one_start(args.model_path, tmp / f"baseline-{i}" / "buf", tree))
    keys = ["start_wall_s", "start_cpu_s", "first_messages_cpu_s", "first_responses_cpu_s"]
    med = {name: {k: statistics.median(r[k] for r in rs) for k in keys} for name, rs in runs.items()}
    print(f"server start, {args.model_path}, median of {args.repeats} (baseline {args.baseline_ref}):")
    print(f"{'':24}{'today':>10}{'baseline':>10}{'ratio':>8}")
    for k in keys:
        t, b = med["today"][k], med["baseline"][k]
        print(f"{k:24}{t:10.2f}{b:10.2f}{(t / b if b else float('nan')):8.2f}")
    if args.json:
        args.json.write_text(json.dumps({"median": med, "runs": runs, "baseline_ref": args.baseline_ref}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
