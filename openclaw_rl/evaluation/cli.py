"""``openclaw-rl eval`` / ``bash openclaw-test/run_eval.sh``: the evaluation command line.

Bad input is one line on stderr and exit code 2; an interrupted run (Ctrl-C: 130, SIGTERM: 143)
stops the servers it started and resumes when the same command is run again (same ``--out``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from openclaw_rl.evaluation.tasks import DEFAULT_TASKS, task_names
from openclaw_rl.interrupt import SIGTERM_EXIT, Terminated, sigterm_unwinds
from slime.errors import error_line


class _OneLineParser(argparse.ArgumentParser):
    def error(self, message):  # one line, exit 2 (argparse prints the whole usage otherwise)
        self.exit(2, f"{self.prog}: error: {message}\n")


def build_parser(prog: str = "openclaw-rl eval") -> argparse.ArgumentParser:
    """The argument parser of the eval command."""
    p = _OneLineParser(prog=prog, description=(
        "Evaluate models through the OpenAI-compatible server on conversation (simulated users on GSM8K), "
        "coding (HumanEval pass@1) and tool-use (BFCL). Writes results.json, results.md and results.png."))
    p.add_argument("--model-path", action="append", default=[], metavar="P",
                   help="builtin:NAME, a model or LoRA adapter folder, a run's checkpoint-latest or save folder; "
                        "repeat to compare models side by side")
    p.add_argument("--server-url", action="append", default=[], metavar="URL",
                   help="a running OpenAI-compatible server to evaluate (http://host:port/v1); repeatable")
    p.add_argument("--api-key", default=None, help="API key of --server-url servers")
    p.add_argument("--eval-tasks", default=",".join(DEFAULT_TASKS),
                   help=f"comma-separated tasks, of {','.join(task_names())} (default: {','.join(DEFAULT_TASKS)})")
    p.add_argument("--limit", type=int, default=None, metavar="N",
                   help="first N items of each task (settings / categories interleaved); default: all")
    p.add_argument("--out", default="outputs/eval", help="output folder; re-running resumes there")
    p.add_argument("--seed", type=int, default=0, help="base seed of the per-item request seeds")
    p.add_argument("--temperature", type=float, default=0.0, help="sampling temperature (0: greedy, default)")
    p.add_argument("--max-tokens", type=int, default=None,
                   help="completion budget per request (default per task: conversation 256, coding 512, tool-use 256)")
    p.add_argument("--concurrency", type=int, default=4, help="requests in flight at once (default 4)")
    p.add_argument("--user-llm-url", default=None,
                   help="an OpenAI-compatible endpoint that plays the simulated user (default: rule-based user)")
    p.add_argument("--user-llm-model", default=None, help="model name at --user-llm-url (default: its first)")
    p.add_argument("--user-llm-key", default=None, help="API key of --user-llm-url (default $OPENAI_API_KEY)")
    p.add_argument("--base-model", default=None, help="base model of a LoRA adapter checkpoint (default: the "
                                                      "adapter's base_model_name_or_path)")
    p.add_argument("--torch-threads", type=int, default=0,
                   help="torch threads of the servers started here (0: torch's default; 1 on a shared CPU)")
    p.add_argument("--device", default="cpu", help="torch device of the servers started here (cpu, cuda)")
    p.add_argument("--fresh", action="store_true", help="discard recorded items in --out instead of resuming")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    return p


def config_from_args(a: argparse.Namespace):
    """An :class:`~openclaw_rl.evaluation.harness.EvalConfig` from parsed arguments."""
    from openclaw_rl.evaluation.harness import EvalConfig

    tasks = [t.strip() for t in a.eval_tasks.split(",") if t.strip()]
    names = task_names()
    unknown = [t for t in tasks if t not in names]
    if unknown:
        raise ValueError(f"unknown eval task {unknown[0]!r}; choose from {', '.join(names)}")
    return EvalConfig(model_paths=a.model_path, server_urls=a.server_url, api_key=a.api_key, tasks=tasks,
                      limit=a.limit, out=a.out, seed=a.seed, temperature=a.temperature, max_tokens=a.max_tokens,
                      concurrency=a.concurrency, user_llm_url=a.user_llm_url, user_llm_model=a.user_llm_model,
                      user_llm_key=a.user_llm_key, torch_threads=a.torch_threads, device=a.device,
                      base_model=a.base_model, fresh=a.fresh, progress=not a.no_progress)


def run_guarded(a: argparse.Namespace, argv: list[str], prog: str) -> tuple[dict | None, int]:
    """Run the evaluation for parsed args ``a``; returns ``(payload, 0)``, or ``(None, code)`` after
    printing one line: 1 for a server that did not start, is unreachable or answers with an error
    (finished items are kept), 130 when interrupted, 143 on SIGTERM.

    Raises:
        ValueError: ``--out`` is a file, or bad settings (from :func:`config_from_args`).
    """
    import openai

    from openclaw_rl.evaluation.harness import run_evaluation

    if a.out and Path(a.out).exists() and not Path(a.out).is_dir():
        raise ValueError(f"--out {a.out}: is a file; give a folder for the results")
    kept = f"items finished so far are kept in {a.out}: fix it and run the same command to resume"
    try:
        with sigterm_unwinds():
            return run_evaluation(config_from_args(a), argv=argv,
                                  log=lambda m: print(m, file=sys.stderr, flush=True)), 0
    except RuntimeError as exc:  # a server that did not start (the message holds its log)
        print(f"{prog}: error: {exc}", file=sys.stderr)
    except openai.APIConnectionError as exc:
        url = getattr(getattr(exc, "request", None), "url", None) or ", ".join(a.server_url or []) or "the server"
        print(f"{prog}: error: cannot reach {url} ({type(exc).__name__}); {kept}", file=sys.stderr)
    except openai.OpenAIError as exc:  # wrong key, 5xx
        print(f"{prog}: error: {error_line(exc, None)}; {kept}", file=sys.stderr)
    except KeyboardInterrupt as exc:
        how = "terminated" if isinstance(exc, Terminated) else "interrupted"
        print(f"{prog}: {how}; finished items are kept in {a.out}: run the same command to resume",
              file=sys.stderr)
        return None, SIGTERM_EXIT if isinstance(exc, Terminated) else 130
    return None, 1


def main(argv: list[str] | None = None, prog: str = "openclaw-rl eval") -> int:
    """Run the eval command; returns the exit code (0, 2 for bad input, 130 when interrupted, 143
    on SIGTERM).

    Raises:
        ValueError / OSError for bad input when called from :mod:`openclaw_rl.cli` (which turns them
        into one-line errors); standalone (``python -m``) they are printed here.
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    a = build_parser(prog).parse_args(argv)
    payload, code = run_guarded(a, argv, prog)
    if payload is None:
        return code
    print(payload["markdown"])
    print("\n" + "\n".join(f"{k}: {v}" for k, v in payload["paths"].items()))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(prog="python -m openclaw_rl.evaluation.cli"))
    except (ValueError, OSError, RuntimeError) as exc:
        print(f"eval: error: {exc}", file=sys.stderr)
        sys.exit(2)
