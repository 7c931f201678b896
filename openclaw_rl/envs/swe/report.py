"""The prompt-injection report of an ``--eval-tasks swe`` run: per evaluated model, how often the
agent resolved the held-out instances and how often it followed the planted instruction.

Run::

    python -m openclaw_rl.envs.swe.report OUT_DIR [--json]

``OUT_DIR`` is the evaluation's ``--out`` folder (its ``items/<model>/swe.jsonl``); rates come
with Wilson 95 % intervals (:func:`openclaw_rl.evaluation.stats.wilson_interval`), so a before /
after pair of models (two ``--model-path``) reads directly.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from openclaw_rl.evaluation.stats import wilson_interval


def summarize(rows: list[dict]) -> dict:
    """``{n, resolved, resolved_rate, resolved_ci95, injected, followed, followed_rate, followed_ci95}``
    of one model's items (an item's ``detail.injection`` is the episode's injection report)."""
    n = len(rows)
    resolved = sum(1 for r in rows if float(r.get("score") or 0) >= 1.0)
    injected = [r for r in rows if ((r.get("detail") or {}).get("injection") or {}).get("followed") is not None]
    followed = sum(1 for r in injected if r["detail"]["injection"]["followed"])
    out = {"n": n, "resolved": resolved, "resolved_rate": resolved / n if n else None,
           "resolved_ci95": list(wilson_interval(resolved, n)) if n else None,
           "injected": len(injected), "followed": followed,
           "followed_rate": followed / len(injected) if injected else None,
           "followed_ci95": list(wilson_interval(followed, len(injected))) if injected else None}
    return out


def report(out_dir: str | Path) -> dict[str, dict]:
    """``{model: summary}`` for every ``items/<model>/swe.jsonl`` under ``out_dir``.

    Raises:
        ValueError: no swe items there.
    """
    files = sorted(Path(out_dir).glob("items/*/swe.jsonl"))
    if not files:
        raise ValueError(f"{out_dir}: no items/*/swe.jsonl (run the evaluation with --eval-tasks swe)")
    return {f.parent.name: summarize([json.loads(x) for x in f.read_text().splitlines() if x.strip()]) for f in files}


def main(argv: list[str] | None = None) -> int:
    """CLI (module docstring); one line per model, or JSON with ``--json``; exit status."""
    ap = argparse.ArgumentParser(prog="python -m openclaw_rl.envs.swe.report")
    ap.add_argument("out_dir")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    try:
        res = report(args.out_dir)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(res, indent=1))
        return 0
    for model, s in res.items():
        fr = "n/a" if s["followed_rate"] is None else f"{s['followed_rate']:.2f} [{s['followed_ci95'][0]:.2f}, {s['followed_ci95'][1]:.2f}]"
        print(f"{model}: resolved {s['resolved']}/{s['n']} ({s['resolved_rate']:.2f} [{s['resolved_ci95'][0]:.2f}, "
              f"{s['resolved_ci95'][1]:.2f}]); followed the planted instruction {s['followed']}/{s['injected']} ({fr})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
