"""``openclaw-rl bench personalization`` (and ``openclaw-test/run_personalization.sh``): every
method x seed as one run (:func:`openclaw_rl.personalization.run.run_one`), then the table and the
plot (:mod:`openclaw_rl.personalization.report`).

Output under ``--out`` (a time-stamped folder): ``<method>/seed-<s>/`` per run (``run.json``,
``sessions.jsonl``, the server's store and log), ``results.json`` (the runs, the aggregate and the
comparisons), ``table.md`` and ``personalization.png``; ``bench.log`` holds everything else.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
import time
from pathlib import Path

from openclaw_rl.main_job.progress import console_to_log
from openclaw_rl.main_job.run import trainer_argv
from openclaw_rl.models import DEFAULT_MODEL
from openclaw_rl.personalization.personas import PAPER_PERSONAS, PERSONAS
from openclaw_rl.personalization.report import aggregate, comparisons, load_runs, plot_curves, table_lines
from openclaw_rl.personalization.run import METHODS, job_args, run_one
from openclaw_rl.personalization.stability import STREAK
from slime.config.run_args import parse_run_args
from slime.errors import one_line

__all__ = ["main", "parse_bench_args"]


def _names(text: str) -> list[str]:
    return [x.strip() for x in text.split(",") if x.strip()]


def _seeds(text: str) -> list[int]:
    """``"3"`` -> seeds 1, 2, 3; ``"7,9"`` -> 7 and 9."""
    parts = _names(text)
    if len(parts) == 1 and "," not in text:
        return list(range(1, int(parts[0]) + 1))
    return [int(x) for x in parts]


def parse_bench_args(argv: list[str] | None) -> argparse.Namespace:
    """The bench's flags; ``--help`` lists them.

    Raises:
        SystemExit(2): a bad flag (argparse's one-line error).
    """
    p = argparse.ArgumentParser(prog="openclaw-rl bench personalization",
                                description="Sessions until a simulated user's preference holds, per method.",
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--method", default="combine",
                   help=f"comma-separated, each run in turn: {', '.join(METHODS)} (none: no training; memory: no "
                        "training, accepted hints injected as lessons)")
    p.add_argument("--persona", default=",".join(PAPER_PERSONAS),
                   help=f"comma-separated; several = joint training on one model. Known: {', '.join(PERSONAS)}")
    p.add_argument("--seeds", default="1", help="N (seeds 1..N) or a comma-separated list")
    p.add_argument("--sessions", type=int, default=30, help="sessions per persona (N: 'not reached' counts as N)")
    p.add_argument("--turns", type=int, default=2, help="main turns per session (the first reply is scored)")
    p.add_argument("--model-path", default=DEFAULT_MODEL,
                   help="the policy to serve and train (a Hugging Face folder or builtin:NAME)")
    p.add_argument("--max-tokens", type=int, default=32,
                   help="reply budget (the TA's threshold scales with it: min(100, ceil(budget / 2)) tokens)")
    p.add_argument("--batch-size", type=int, default=8, help="judged turns per train step")
    p.add_argument("--held-out", type=int, default=10,
                   help="held-out questions per persona measured before and after (0: skip)")
    p.add_argument("--lessons", type=int, default=3, help="memory: the top N lessons injected (--inject-lessons N)")
    p.add_argument("--pace-timeout-s", type=float, default=300.0,
                   help="longest wait for the trainer or judge before a session starts anyway")
    p.add_argument("--train-wait-s", type=float, default=300.0,
                   help="the trainer's --rollout-timeout-s: a wait this long for a full batch while users still "
                        "talk ends training early ('stalled'); once the sessions end, training ends as soon as "
                        "their turns are used up")
    p.add_argument("--torch-threads", type=int, default=2, help="server threads for none/memory (no trainer)")
    p.add_argument("--server-timeout-s", type=float, default=None,
                   help="how long the server may take to start (default: 180 s on transformers, 960 s on engine "
                        "servers, as the main job)")
    p.add_argument("--job-args", default="",
                   help="more main-job flags for the trainer (make run ARGS=--help), e.g. "
                        "\"--lr 1e-3 --prm-mode lexical\"")
    p.add_argument("--trainer-args", default="",
                   help="more trainer flags, appended as given (write --trainer-args=\"--flag value\" when the "
                        "value starts with a dash)")
    p.add_argument("--out", default="outputs/personalization", help="a time-stamped folder is made here")
    p.add_argument("--report", metavar="DIR", default=None,
                   help="run nothing: write the table, plot and results.json of every run.json under DIR")
    a = p.parse_args(argv)
    a.methods, a.personas = _names(a.method), _names(a.persona)
    try:
        a.seed_list = _seeds(a.seeds)
    except ValueError:
        p.error(f"--seeds {a.seeds!r}: a count or a comma-separated list of integers")
    for m in a.methods:
        if m not in METHODS:
            p.error(f"--method {m!r}: choose from {', '.join(METHODS)}")
    for n in a.personas:
        if n not in PERSONAS:
            p.error(f"--persona {n!r}: choose from {', '.join(PERSONAS)}")
    if not (a.methods and a.personas):
        p.error("--method and --persona must each name at least one")
    if not a.seed_list or min(a.seed_list) < 1:
        p.error(f"--seeds {a.seeds!r}: a count >= 1 or a comma-separated list of seeds >= 1")
    for flag, values in (("--method", a.methods), ("--persona", a.personas), ("--seeds", a.seed_list)):
        twice = sorted({str(v) for v in values if values.count(v) > 1})
        if twice:
            p.error(f"{flag} names {', '.join(twice)} more than once")
    for flag in ("sessions", "turns", "max_tokens", "batch_size", "lessons", "torch_threads"):
        if getattr(a, flag) < 1:
            p.error(f"--{flag.replace('_', '-')} must be >= 1")
    if a.sessions < STREAK:
        p.error(f"--sessions {a.sessions}: a persona is stable after {STREAK} passing sessions in a row, so fewer "
                f"than {STREAK} sessions can never get there")
    if a.held_out < 0:
        p.error("--held-out must be >= 0")
    if not a.report:
        _check_job_flags(p, a)
    return a


def _check_job_flags(p: argparse.ArgumentParser, a: argparse.Namespace) -> None:
    """``--job-args`` and ``--trainer-args`` parsed now, for every method (the baselines too), as the
    runs will parse them: a bad flag is a one-line error before any server starts, not a usage
    block in ``bench.log`` minutes later."""
    for method in a.methods:
        heard = io.StringIO()
        try:
            with contextlib.redirect_stderr(heard):
                ns = job_args(a, method, a.seed_list[0])
        except SystemExit:
            said = [line for line in heard.getvalue().splitlines() if line.strip()]
            p.error(f"--job-args {a.job_args!r}: " + (said[-1].split("error: ", 1)[-1] if said else "not accepted"))
        try:
            parse_run_args(trainer_argv(ns, "http://127.0.0.1:1", Path(a.out) / "check"))
        except ValueError as exc:
            p.error(f"--trainer-args {a.trainer_args!r} (with --job-args {a.job_args!r}): {one_line(exc, 300)}")


def write_report(out: Path) -> list[str]:
    """``results.json``, ``table.md`` and ``personalization.png`` from the runs under ``out``;
    returns the table's lines."""
    runs = load_runs(out)
    lines = table_lines(runs)
    (out / "table.md").write_text("\n".join(lines) + "\n")
    (out / "results.json").write_text(json.dumps({"runs": runs, "aggregate": aggregate(runs),
                                                  "comparisons": comparisons(runs)}, indent=1))
    plot_curves(runs, out / "personalization.png")
    return lines


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark (module docstring); returns 0, or 1 when a simulated user's request failed.

    Raises:
        SystemExit(2): bad flags. ValueError: ``--report`` names a folder without runs.
        Exception: a run failed (one line on the terminal, the traceback in ``bench.log``).
    """
    a = parse_bench_args(argv)
    if a.report:
        if not Path(a.report).is_dir():
            raise ValueError(f"--report {a.report}: no such folder")
        if not list(Path(a.report).rglob("run.json")):
            raise ValueError(f"--report {a.report}: no run.json under it")
        print("\n".join(write_report(Path(a.report))))
        return 0
    out = Path(a.out) / time.strftime("%Y%m%d-%H%M%S")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ValueError(f"--out {a.out}: cannot make the run folder there ({exc.strerror or exc})") from None
    console = console_to_log(out / "bench.log")

    def say(line: str) -> None:
        console.write(line + "\n")
        print(line, flush=True)

    say(f"[bench] personalization: {', '.join(a.methods)} x seeds {a.seed_list} on {', '.join(a.personas)} "
        f"({a.sessions} sessions each, {a.model_path}); log: {out / 'bench.log'}")
    failed = 0
    for method in a.methods:
        for seed in a.seed_list:
            try:
                failed += run_one(a, method, seed, out / method / f"seed-{seed}", say)["failed_requests"]
            except Exception as exc:  # the traceback goes to bench.log; the person sees one line
                say(f"[bench] {method} seed {seed} failed: {one_line(exc, 300)}; see {out / 'bench.log'}")
                raise
    for line in write_report(out):
        say(line)
    say(f"[bench] table: {out / 'table.md'}; plot: {out / 'personalization.png'}; results: {out / 'results.json'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
