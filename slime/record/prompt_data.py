"""Prompt datasets (``--prompt-data``): JSONL files of prompts and labels (slime's data format)."""

from __future__ import annotations

import json
from pathlib import Path

__all__ = ["load_prompts"]


def load_prompts(path: str, input_key: str = "prompt", label_key: str | None = "label",
                 metadata_key: str | None = "metadata") -> list[dict]:
    """Read a JSONL prompt dataset into ``[{"prompt": text | messages, "label": any, "metadata": dict}]``.

    Args:
        path: the JSONL file (``--prompt-data``).
        input_key / label_key / metadata_key: the fields holding the prompt, the label and the
            row's metadata (``--input-key``, ``--label-key``, ``--metadata-key``); a row without
            the metadata field gets ``{}``.

    Raises:
        ValueError: a missing file, a line that is not a JSON object, a missing ``input_key``,
            a metadata field that is not a JSON object, or an empty dataset (message names the
            file and line).
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
        meta = row.get(metadata_key) if metadata_key else None
        if meta is not None and not isinstance(meta, dict):
            raise ValueError(f"--prompt-data {path} line {n}: {metadata_key!r} must be a JSON object, "
                             f"got {type(meta).__name__}")
        out.append({"prompt": row[input_key], "label": row.get(label_key) if label_key else None,
                    "metadata": meta or {}})
    if not out:
        raise ValueError(f"--prompt-data {path}: no prompts")
    return out
