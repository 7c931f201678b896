"""Named points in a train step where a fault test can stop the process that reaches them.

Reliability tests kill the trainer (SIGKILL) or pull the publish folder away at one precise
moment of a step, never after a guessed sleep. The trainer calls :func:`reached` at each point;
with ``SLIME_FAULT_AT`` unset (every real run) it returns at once and does nothing.

``SLIME_FAULT_AT=point@step[,point@step...]`` and ``SLIME_FAULT_DIR=<folder>``: the process that
reaches ``point`` in ``step`` writes its PID to ``<folder>/<point>@<step>.pid`` (atomically) and
then blocks reading the FIFO ``<folder>/<point>@<step>.go`` until the test opens it for writing
and closes it (:func:`release`), or kills the process. Points (where they are called):

* ``train_step`` -- the train actor, at the start of a step's optimizer work (turns claimed,
  nothing marked trained);
* ``save`` -- the train actor, at the start of a checkpoint save (the step's turns are already
  marked trained in the store);
* ``save_written`` -- the train actor, the checkpoint's files written, before the rename that
  makes it the newest (:func:`slime.trainer.checkpoint.save_checkpoint`);
* ``gate`` -- the train actor, before the promotion gate measures the weights of version
  ``step`` (first as the step's candidate, before anything of it is checkpointed or served);
* ``publish`` -- the rollout service, the weights exported, before the server is asked to load
  them (its ``step`` is the weight version being published: the step number in a fresh run).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

__all__ = ["FAULT_AT_ENV", "FAULT_DIR_ENV", "reached", "release", "wait_reached"]

FAULT_AT_ENV = "SLIME_FAULT_AT"
FAULT_DIR_ENV = "SLIME_FAULT_DIR"


def reached(point: str, step: int) -> None:
    """Block here when ``point@step`` is listed in ``SLIME_FAULT_AT`` (module docstring);
    otherwise return at once. Each point blocks once per process start."""
    wanted = os.environ.get(FAULT_AT_ENV, "")
    name = f"{point}@{int(step)}"
    if not wanted or name not in {w.strip() for w in wanted.split(",")}:
        return
    folder = Path(os.environ[FAULT_DIR_ENV])
    fifo = folder / f"{name}.go"
    if fifo.exists():  # released before (a resumed process reaching the same point): go on
        return
    os.mkfifo(fifo)
    tmp = folder / f".{name}.pid.{os.getpid()}"
    tmp.write_text(str(os.getpid()))
    os.replace(tmp, folder / f"{name}.pid")
    with open(fifo) as f:  # blocks until the test opens the FIFO for writing, then reads EOF
        f.read()


def wait_reached(folder: Path, name: str, timeout_s: float = 600.0, proc=None) -> int:
    """Test side: wait until a process blocks at ``name`` (``point@step``); returns its PID.

    Args:
        proc: the run's ``subprocess.Popen``: stop waiting if it ends first.

    Raises:
        TimeoutError: nothing reached the point within ``timeout_s`` seconds.
        RuntimeError: ``proc`` ended before anything reached the point.
    """
    pid_file = Path(folder) / f"{name}.pid"
    deadline = time.monotonic() + timeout_s
    while not pid_file.exists():
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"the run ended (exit code {proc.returncode}) before reaching {name}")
        if time.monotonic() > deadline:
            raise TimeoutError(f"no process reached {name} within {timeout_s:.0f} s")
        time.sleep(0.05)
    return int(pid_file.read_text())


def release(folder: Path, name: str) -> None:
    """Test side: let the process blocked at ``name`` go on."""
    fd = os.open(Path(folder) / f"{name}.go", os.O_WRONLY)
    os.close(fd)
