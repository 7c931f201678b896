"""CPU cost of one PRM verdict per judge mode, and of building the classifier.

    python benchmarks/judge_cost.py [--modes classifier,lexical] [--cases FILE] [--repeat 3]
                                    [--torch-threads 1] [--build] [--json OUT]

Each mode judges every case of ``--cases`` (default: the hand-written held-out set,
``openclaw_rl/judges/data/heldout_cases.jsonl``) ``--repeat`` times, one vote per turn as in a
run; the script prints the median and p95 milliseconds per verdict after a warm-up pass (the
classifier's first use loads it from the model cache). ``--build`` also times a fresh training of
the classifier (what a first use on a new machine pays before the cache holds it). Model modes
(``prototype``, ``channel``, ``logprob``) load ``builtin:smollm2-135m``.

The machine is shared, so compare modes within one run; the load average is printed with the numbers.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from openclaw_rl.judges.cases import load_cases  # noqa: E402
from openclaw_rl.judges.modes import make_local_backend  # noqa: E402

HELDOUT = Path(__file__).resolve().parent.parent / "openclaw_rl" / "judges" / "data" / "heldout_cases.jsonl"


def _time_mode(mode: str, cases, repeat: int) -> dict:
    backend = make_local_backend(mode, "builtin:smollm2-135m")
    for case in cases[:3]:  # warm-up: first-use loading is not a per-turn cost
        asyncio.run(backend.score_input(case.judge_input(), 1))
    ms = []
    for _ in range(repeat):
        for case in cases:
            inp = case.judge_input()
            t0 = time.perf_counter()
            asyncio.run(backend.score_input(inp, 1))
            ms.append(1000 * (time.perf_counter() - t0))
    ms.sort()
    return {"mode": mode, "verdicts": len(ms), "median_ms": statistics.median(ms), "p95_ms": ms[int(0.95 * (len(ms) - 1))]}


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark (module docstring); returns 0."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--modes", default="classifier,lexical")
    p.add_argument("--cases", default=str(HELDOUT))
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--torch-threads", type=int, default=1)
    p.add_argument("--build", action="store_true", help="also time a fresh training of the classifier")
    p.add_argument("--json", default=None, help="write the results here too")
    a = p.parse_args(argv)
    import torch

    torch.set_num_threads(a.torch_threads)
    cases = load_cases(a.cases)
    out = {"load_average": os.getloadavg(), "cases": len(cases), "modes": []}
    for mode in a.modes.split(","):
        out["modes"].append(_time_mode(mode.strip(), cases, a.repeat))
    if a.build:
        from openclaw_rl.judges.classifier import train_classifier, training_examples

        t0 = time.perf_counter()
        rows = training_examples()
        train_classifier(rows)
        out["build"] = {"examples": len(rows), "seconds": round(time.perf_counter() - t0, 2)}
    print(f"load average {out['load_average'][0]:.1f}, {len(cases)} cases x {a.repeat}")
    for r in out["modes"]:
        print(f"{r['mode']:<11} median {r['median_ms']:8.2f} ms/verdict   p95 {r['p95_ms']:8.2f} ms")
    if "build" in out:
        print(f"classifier build: {out['build']['examples']} examples, {out['build']['seconds']} s")
    if a.json:
        Path(a.json).write_text(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
