"""Processes a test started, found and checked by pid (Linux ``/proc``), never by name."""

from __future__ import annotations

from pathlib import Path

__all__ = ["descendants", "running"]


def descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (the children of each of its threads, recursively)."""
    out = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        for child in (int(c) for c in (task / "children").read_text().split()):
            out += [child, *descendants(child)]
    return out


def running(pid: int) -> bool:
    """Whether ``pid`` exists and is not a zombie."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False
