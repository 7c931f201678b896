"""Where the converted AgentBench OS tasks live: generated on first use into the cache.

Nothing converted is committed. ``make install`` downloads the ``inspect-evals`` wheel
(``pip download --no-deps``) into ``<venv>/share/openclaw-rl/wheels``; the first call of
:func:`ensure_converted` converts it (file-locked, so parallel workers convert once) into
``$OPENCLAW_RL_CACHE/terminal/agentbench-os-<inspect-evals version>-v<format>-<hash of convert.py>/`` (the cache root
is found as in :mod:`openclaw_rl.models`: ``$OPENCLAW_RL_CACHE``, default
``~/.cache/openclaw-rl``). ``$OPENCLAW_RL_INSPECT_EVALS_WHEEL`` points at another wheel.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
from pathlib import Path

from openclaw_rl.envs.terminal import convert as convert_module
from openclaw_rl.envs.terminal.convert import FORMAT_VERSION, convert
from openclaw_rl.envs.terminal.wheel import WHEEL_ENV, find_wheel, wheel_dirs  # noqa: F401 (re-exported)
from openclaw_rl.models import cache_root

def ensure_converted() -> Path:
    """The converted task folder, converting the wheel first if needed (locked; idempotent)."""
    wheel = find_wheel()
    version = wheel.name.split("-")[1]
    # the converter's own source is part of the key: a changed conversion never reads a stale cache
    code = hashlib.sha256(Path(convert_module.__file__).read_bytes()).hexdigest()[:10]
    out = cache_root() / "terminal" / f"agentbench-os-{version}-v{FORMAT_VERSION}-{code}"
    if (out / "manifest.json").is_file():
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out.parent / f".{out.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (out / "manifest.json").is_file():
            tmp = out.parent / f".{out.name}.tmp-{os.getpid()}"
            shutil.rmtree(tmp, ignore_errors=True)
            convert(wheel, tmp)
            shutil.rmtree(out, ignore_errors=True)
            tmp.rename(out)
    return out


def load_task(task_key: str) -> dict:
    """The ``task.json`` of ``task_key``.

    Raises:
        KeyError: no such task.
    """
    path = ensure_converted() / "tasks" / task_key / "task.json"
    if not path.is_file():
        raise KeyError(f"unknown terminal task {task_key!r}")
    return json.loads(path.read_text())


def load_dataset(split: str) -> list[dict]:
    """The JSONL rows of ``split`` (``"train"`` or ``"heldout"``).

    Raises:
        ValueError: another split name.
    """
    if split not in ("train", "heldout"):
        raise ValueError(f"split must be 'train' or 'heldout', got {split!r}")
    path = ensure_converted() / f"{split}.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def dataset_path(split: str) -> Path:
    """Path of the JSONL file of ``split`` (``PROMPT_DATA`` / ``EVAL_DATA`` for the launch scripts)."""
    load_dataset(split)
    return ensure_converted() / f"{split}.jsonl"
