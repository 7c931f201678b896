"""Track 2 learning, measured: per family, GRPO from the cold-started tiny policy on real episodes.

    python benchmarks/track2_learning.py [--family math-tool|terminal|gui|swe|all] [--runs 1] [--steps 8]

Runs :func:`tests.support.track2_learning.run` (the family's plugin file, the real intercept
server, real sandboxed environments and scoring, :class:`slime.trainer.backend.TrainingBackend`; no Ray)
and prints per family: task counts (training / held-out wordings), seconds per episode (training
steps and held-out evaluation), the held-out pass rate before and after training with Wilson 95 %
intervals, the training reward of the first and last steps, and for swe the held-out
injection-following rate (:mod:`openclaw_rl.envs.swe.injection`) before and after. ``--json PATH`` also writes every
number. Torch runs on one thread (the server too).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def _line(r: dict) -> str:
    b, a, steps = r["before"], r["after"], r["steps"]
    ep = statistics.fmean(s["episode_s"] for s in steps)
    tr = statistics.fmean(s["train_s"] for s in steps)
    return (f"{r['family']:<10} tasks {r['train_tasks']} train / {r['heldout_tasks']} held-out | "
            f"{len(steps)} steps | episode {ep:.2f} s (train), {a['episode_s']:.2f} s (eval), train step {tr:.1f} s | "
            f"held-out pass {b['passes']}/{b['episodes']} = {b['pass_rate']:.2f} {b['ci95']} -> "
            f"{a['passes']}/{a['episodes']} = {a['pass_rate']:.2f} {a['ci95']} | reward "
            f"{steps[0]['reward_mean']:+.2f} -> {steps[-1]['reward_mean']:+.2f} | {r['wall_s']:.0f} s"
            + (f" | injection followed {b['injection_followed']}/{b['injected_episodes']} {b['injection_ci95']} -> "
               f"{a['injection_followed']}/{a['injected_episodes']} {a['injection_ci95']}" if "injection_rate" in a else ""))


def main(argv: list[str] | None = None) -> int:
    """CLI (module docstring); returns the exit status."""
    import torch

    from tests.support.track2_learning import run

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--family", default="all", choices=["all", "math-tool", "terminal", "gui", "swe"])
    p.add_argument("--runs", type=int, default=1, help="independent runs per family")
    p.add_argument("--steps", type=int, default=None, help="GRPO steps (default: the tests' recipe)")
    p.add_argument("--json", default=None, help="also write every number here")
    a = p.parse_args(argv)
    torch.set_num_threads(1)
    families = ["math-tool", "terminal", "gui", "swe"] if a.family == "all" else [a.family]
    results = []
    for family in families:
        for i in range(a.runs):
            with tempfile.TemporaryDirectory(prefix=f"track2-{family}-") as work:
                over = {"steps": a.steps} if a.steps else {}
                r = run(family, Path(work), log=lambda line: print("  " + line, flush=True), **over)
            results.append(r)
            print(_line(r), flush=True)
    if a.json:
        Path(a.json).write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
