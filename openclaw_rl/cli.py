"""``openclaw-rl``: the command line (``serve``, ``export``, ``import``, ``import-openclaw``, ``eval``,
``eval-before-after``, ``judge-eval``, ``versions``, ``rollback``, ``forget``, ``lessons``, ``export-model``,
``bench personalization``).

Errors are one line on stderr with exit code 2; nothing already recorded is touched.
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
from pathlib import Path


def _export(argv: list[str]) -> int:
    from openclaw_rl.capture.export import export_sessions
    from openclaw_rl.capture.store import TrajectoryStore

    p = argparse.ArgumentParser(prog="openclaw-rl export",
                                description="Write recorded sessions as JSON Lines (seed session format).")
    p.add_argument("--rl-buffer-dir", required=True)
    p.add_argument("--out", default="-", help="output file (default stdout)")
    a = p.parse_args(argv)
    if not (Path(a.rl_buffer_dir) / TrajectoryStore.FILENAME).is_file():
        raise ValueError(f"no trajectory store in {a.rl_buffer_dir!r}")
    store = TrajectoryStore(a.rl_buffer_dir)
    try:
        if a.out == "-":
            n = export_sessions(store, sys.stdout)
        else:
            with open(a.out, "w", encoding="utf-8") as fh:
                n = export_sessions(store, fh)
    finally:
        store.close()
    print(f"exported {n} session(s)", file=sys.stderr)
    return 0


def _import(argv: list[str]) -> int:
    from openclaw_rl.capture.export import import_sessions, read_session_file
    from openclaw_rl.capture.store import TrajectoryStore

    p = argparse.ArgumentParser(prog="openclaw-rl import",
                                description="Load sessions (JSON Lines, seed format) into a trajectory store.")
    p.add_argument("file")
    p.add_argument("--rl-buffer-dir", required=True)
    p.add_argument("--model-path", default=None,
                   help="tokenize turns without ids now, with this model's chat template (else the training "
                        "job does it with its policy's, before judging)")
    a = p.parse_args(argv)
    if not Path(a.file).is_file():
        raise ValueError(f"no such file: {a.file}")
    parsed = read_session_file(a.file)  # validate everything before touching the store
    tokenizer = None
    if a.model_path:
        from openclaw_rl.models import load_tokenizer
        tokenizer = load_tokenizer(a.model_path)
    store = TrajectoryStore(a.rl_buffer_dir)
    try:
        sessions, turns = import_sessions(store, parsed, tokenizer=tokenizer)
    finally:
        store.close()
    skipped = len(parsed) - sessions
    print(f"imported {sessions} session(s), {turns} turn(s)"
          + (f"; skipped {skipped} session(s) already in the store" if skipped else ""), file=sys.stderr)
    return 0


def _import_openclaw(argv: list[str]) -> int:
    from openclaw_rl.capture.openclaw_history.importer import main as import_openclaw_main

    return import_openclaw_main(argv)


def _export_model(argv: list[str]) -> int:
    from openclaw_rl.models import ModelPathError, is_adapter_folder, load_model, load_tokenizer, merge_adapter

    p = argparse.ArgumentParser(prog="openclaw-rl export-model",
                                description="Write a run's checkpoint as a plain Hugging Face model folder that vLLM, "
                                            "SGLang or transformers load: a LoRA checkpoint merged onto its base model, "
                                            "a full-weights one without its optimizer state.")
    p.add_argument("--model-path", required=True,
                   help="the checkpoint, e.g. <run>/ckpt/checkpoint-latest (LoRA adapter or full weights)")
    p.add_argument("--merge", required=True, metavar="OUT", help="the folder to write (new or empty)")
    a = p.parse_args(argv)
    out = Path(a.merge)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ValueError(f"--merge {a.merge}: exists and is not an empty folder")
    src = Path(a.model_path)
    if not src.is_dir():
        raise ValueError(f"--model-path {a.model_path}: no such folder")
    if is_adapter_folder(src):
        merge_adapter(src, out)
    elif (src / "config.json").is_file():
        load_model(src).save_pretrained(out)
        load_tokenizer(src).save_pretrained(out)
    else:
        raise ModelPathError(f"--model-path {a.model_path}: neither a LoRA checkpoint (adapter_config.json) nor a "
                             "model folder (config.json)")
    print(f"wrote {out}", file=sys.stderr)
    return 0


def _serve(argv: list[str]) -> int:
    from openclaw_rl.server.__main__ import main as serve_main

    return serve_main(argv)


def _eval(argv: list[str]) -> int:
    from openclaw_rl.evaluation.cli import main as eval_main

    return eval_main(argv)


def _eval_before_after(argv: list[str]) -> int:
    from openclaw_rl.evaluation.before_after import main as before_after_main

    return before_after_main(argv)


def _judge_eval(argv: list[str]) -> int:
    from openclaw_rl.judges.judge_eval import main as judge_eval_main

    return judge_eval_main(argv)


def _versions(argv: list[str]) -> int:
    from openclaw_rl.server.rollback_cli import versions_main

    return versions_main(argv)


def _rollback(argv: list[str]) -> int:
    from openclaw_rl.server.rollback_cli import rollback_main

    return rollback_main(argv)


def _forget(argv: list[str]) -> int:
    from openclaw_rl.server.control_cli import forget_main

    return forget_main(argv)


def _lessons(argv: list[str]) -> int:
    from openclaw_rl.server.control_cli import lessons_main

    return lessons_main(argv)


def _bench(argv: list[str]) -> int:
    """``openclaw-rl bench personalization ...`` (:mod:`openclaw_rl.personalization`)."""
    if not argv or argv[0] != "personalization":
        print("usage: openclaw-rl bench personalization [options]   (-h for help)", file=sys.stderr)
        return 2
    from openclaw_rl.personalization.cli import main as personalization_main

    return personalization_main(argv[1:])


COMMANDS = {"serve": _serve, "export": _export, "import": _import,
            "import-openclaw": _import_openclaw, "eval": _eval,
            "eval-before-after": _eval_before_after, "judge-eval": _judge_eval, "versions": _versions,
            "rollback": _rollback, "forget": _forget, "lessons": _lessons, "export-model": _export_model,
            "bench": _bench}


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``openclaw-rl`` console command."""
    argv = list(sys.argv[1:] if argv is None else argv)
    usage = "usage: openclaw-rl {" + ",".join(COMMANDS) + "} [options]   (-h on a command for help)"
    if argv and argv[0] in ("-h", "--help"):
        print(usage)
        return 0
    if not argv or argv[0] not in COMMANDS:
        if argv:
            print(f"openclaw-rl: error: unknown command {argv[0]!r}", file=sys.stderr)
        print(usage, file=sys.stderr)
        return 2
    try:
        return COMMANDS[argv[0]](argv[1:])
    except (ValueError, LookupError, OSError, sqlite3.DatabaseError) as exc:
        print(f"openclaw-rl {argv[0]}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
