"""Processes a test started, found and checked by pid (Linux ``/proc``), never by name."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

__all__ = ["descendants", "running", "still_running", "kill_left_over"]


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


def still_running(pids: list[int], within_s: float = 30.0) -> list[int]:
    """Those of ``pids`` still running after up to ``within_s`` seconds of waiting for them to end."""
    deadline = time.time() + within_s
    while [p for p in pids if running(p)] and time.time() < deadline:
        time.sleep(0.5)
    return [p for p in pids if running(p)]


def kill_left_over(proc: subprocess.Popen, pids: list[int]) -> None:
    """A test's ``finally``: kill ``proc`` if it still runs and every one of ``pids`` (SIGKILL, by pid)."""
    if proc.poll() is None:
        proc.kill()
        proc.wait(10)
    for p in pids:
        try:
            os.kill(p, signal.SIGKILL)
        except ProcessLookupError:
            pass
