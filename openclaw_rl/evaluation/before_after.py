"""Before/after: the base model and a run's latest checkpoint in one command, with the deltas.

``openclaw-rl eval-before-after --run SAVE_DIR [--before builtin:smollm2-135m] [eval options]``
(or ``bash openclaw-test/before_after.sh ...``) evaluates ``--before`` and ``SAVE_DIR``'s
``checkpoint-latest`` (a LoRA adapter is served on its base) on the same items and prints, per
task, ``after - before`` with the 95% t interval of the paired per-item differences.
"""

from __future__ import annotations

import sys

from openclaw_rl.models import DEFAULT_MODEL


def _num(x) -> str:
    return "n/a" if x is None or x != x else f"{x:+.3f}" if x < 0 else f"{x:.3f}"


def delta_lines(payload: dict) -> list[str]:
    """``"<task>: <metric> <before> -> <after>, delta +d [lo, hi] (n)"`` per task (second model minus first)."""
    before, after = payload["models"][0], payload["models"][1]
    lines = []
    for task, per_model in payload["results"].items():
        b, a = per_model[before["key"]], per_model[after["key"]]
        d = payload["deltas"][task][after["key"]]
        lo, hi = d["ci95"]
        verdict = ("better" if lo is not None and lo == lo and lo > 0 else
                   "worse" if hi is not None and hi == hi and hi < 0 else "no significant change")
        lines.append(f"{task}: {a['metric']} {_num(b['value'])} -> {_num(a['value'])}, delta {_num(d['delta'])} "
                     f"[{_num(lo)}, {_num(hi)}] (n={d['n']}): {verdict}")
    return lines


def run_base_model(run: str) -> str | None:
    """The base model a run trained (``--model-path`` in its saved ``run_config.json``, looked up in
    ``run`` and, for a checkpoint folder, its parent); None when no config is found.

    Raises:
        ValueError: a ``run_config.json`` that is not valid JSON.
    """
    import json
    from pathlib import Path

    for folder in (Path(run), Path(run).parent):
        path = folder / "run_config.json"
        if path.is_file():
            try:
                return json.loads(path.read_text()).get("model_path") or None
            except json.JSONDecodeError as exc:
                raise ValueError(f"{path}: not valid JSON ({exc.msg})") from None
    return None


def main(argv: list[str] | None = None, prog: str = "openclaw-rl eval-before-after") -> int:
    """Run the before/after evaluation; returns the exit code (0, 2 bad input, 130 interrupted).

    Raises:
        ValueError: ``--model-path`` / ``--server-url`` given (this command picks the two models).
    """
    from openclaw_rl.evaluation.cli import _OneLineParser, build_parser, run_guarded

    argv = list(sys.argv[1:] if argv is None else argv)
    p = _OneLineParser(prog=prog, add_help=False)
    p.add_argument("--run", required=True, help="a run's save folder (its checkpoint-latest) or a checkpoint")
    p.add_argument("--before", default=None, help="the model before training (default: the run's own base "
                   f"model, --model-path in SAVE_DIR/run_config.json; {DEFAULT_MODEL} when the run saved none)")
    if any(x in ("-h", "--help") for x in argv):
        print(f"usage: {prog} --run SAVE_DIR [--before MODEL] [eval options]\n\n{__doc__}\neval options:")
        build_parser(prog).print_help()
        return 0
    known, rest = p.parse_known_args(argv)
    if any(x.startswith(("--model-path", "--server-url")) for x in rest):
        raise ValueError("--model-path/--server-url are chosen by this command: use --before and --run")
    before = known.before or run_base_model(known.run) or DEFAULT_MODEL
    a = build_parser(prog).parse_args(rest + ["--model-path", before, "--model-path", known.run])
    payload, code = run_guarded(a, argv, prog)
    if payload is None:
        return code
    print(payload["markdown"])
    print("\nBefore -> after (" + " -> ".join(m["label"] for m in payload["models"]) + "):")
    print("\n".join("  " + line for line in delta_lines(payload)))
    print("\n" + "\n".join(f"{k}: {v}" for k, v in payload["paths"].items()))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(prog="python -m openclaw_rl.evaluation.before_after"))
    except (ValueError, OSError, RuntimeError) as exc:
        print(f"eval-before-after: error: {exc}", file=sys.stderr)
        sys.exit(2)
