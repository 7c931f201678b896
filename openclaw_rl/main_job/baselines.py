"""Measure how often an untrained model already meets each candidate preference (how the main
job's task was chosen: a task has room to learn only where the baseline is low).

``python -m openclaw_rl.main_job.baselines --model-path builtin:smollm2-135m`` serves the model,
asks the held-out questions once per preference (the same seeds the main job uses) and prints a
Markdown table of satisfaction rates with 95% intervals. Results in ``docs/learning.md``.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from openclaw_rl.models import DEFAULT_MODEL
from openclaw_rl.preferences import PREFERENCES


def main(argv: list[str] | None = None) -> int:
    """CLI entry point; prints the table (and JSON with ``--json``); returns 0."""
    from openclaw_rl.main_job.heldout import measure
    from openclaw_rl.main_job.questions import question_sets
    from openclaw_rl.server.launcher import running_server

    p = argparse.ArgumentParser(prog="python -m openclaw_rl.main_job.baselines", description=__doc__.splitlines()[0])
    p.add_argument("--model-path", default=DEFAULT_MODEL)
    p.add_argument("--held-out", type=int, default=40)
    p.add_argument("--max-tokens", type=int, default=32)
    p.add_argument("--preferences", default=",".join(PREFERENCES), help="comma-separated names")
    p.add_argument("--torch-threads", type=int, default=2)
    p.add_argument("--with-hint", action="store_true",
                   help="also measure with the preference appended as an OPD hint (what the teacher does)")
    p.add_argument("--json", action="store_true")
    a = p.parse_args(argv)
    names = [n.strip() for n in a.preferences.split(",") if n.strip()]
    unknown = [n for n in names if n not in PREFERENCES]
    if unknown:
        p.error(f"unknown preference(s) {', '.join(unknown)}; choose from {', '.join(PREFERENCES)}")
    _, test_q = question_sets(a.held_out)
    rows = {}
    with tempfile.TemporaryDirectory() as tmp, running_server(
            a.model_path, Path(tmp) / "rl_buffer", "--served-model-name", "policy", "--torch-threads",
            str(a.torch_threads), api_key="sk-baselines", log_dir=Path(tmp)) as server:
        base = server.base_url.rsplit("/v1", 1)[0]
        for name in names:
            r = measure(base, "sk-baselines", test_q, PREFERENCES[name], a.max_tokens)
            rows[name] = {"rate": r["rate"], "ci95": r["ci95"], "n": r["n"], "seconds": r["seconds"],
                          "cut_off": sum(r["cut"].values()) / max(1, r["n"]),
                          "example": next(iter(r["replies"].values()))[:80]}
            if a.with_hint:
                h = measure(base, "sk-baselines", test_q, PREFERENCES[name], a.max_tokens,
                            hint=PREFERENCES[name].instruction)
                rows[name]["hinted_rate"] = h["rate"]
            print(f"{name}: {json.dumps(rows[name])}", file=sys.stderr, flush=True)
    hinted = " with the hint appended (the OPD teacher) |" if a.with_hint else ""
    print(f"| preference | instruction | baseline satisfaction [95% CI] (n={len(test_q)}) |{hinted}\n"
          f"|---|---|---|{'---|' if a.with_hint else ''}")
    for name, r in rows.items():
        extra = f" {r['hinted_rate']:.3f} |" if a.with_hint else ""
        print(f"| {name} | {PREFERENCES[name].instruction} | {r['rate']:.3f} [{r['ci95'][0]:.3f}, {r['ci95'][1]:.3f}] |"
              + extra)
    if a.json:
        print(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
