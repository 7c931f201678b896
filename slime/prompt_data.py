"""Prompt datasets (``--prompt-data``): JSONL files of prompts and labels (slime's data format)."""

from __future__ import annotations

import json
from pathlib import Path

__all__ = ["load_prompts"]


def load_prompts(path: str, input_key: str = "prompt", label_key: str | None = "label") -> list[dict]:
    """Read a JSONL prompt dataset into ``[{"prompt": text | messages, "label": any}]``.

    Raises:
        ValueError: a missing file, a line that is not a JSON object, a missing ``input_key``,
            or an empty dataset (message names the file and line).
    """
    p = Path(path)
    if not p.is_file():
        raise ValueError(f"--prompt-data {path}: no such file")
    out = []
    for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValueError(f"--prompt-data {path} line {n}: not JSON ({exc.msg})") from None
        if not isinstance(row, dict) or input_key not in row:
            raise ValueError(f"--prompt-data {path} line {n}: expected a JSON object with {input_key!r}")
        out.append({"prompt": row[input_key], "label": row.get(label_key) if label_key else None})
    if not out:
        raise ValueError(f"--prompt-data {path}: no prompts")
    return out
