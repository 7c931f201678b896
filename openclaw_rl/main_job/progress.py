"""What a person sees in the terminal during ``make run`` (and a launch script's run,
:mod:`openclaw_rl.launch.progress`): one compact line per train step.

The main job sends everything else -- Ray's forwarded worker output, library warnings, progress
bars, the server's and the trainer's log lines -- to the run's log file (``<out>/run.log``,
:func:`console_to_log`); the terminal gets the job's own few lines, the dashboard's address and,
per step, a line built from the step's metrics as the trainer logs them
(``<out>/logs/<run>/metrics.jsonl``, :class:`StepProgress`):

    step 3/16 | reward +0.25 (8) | satisfaction 0.62 (13 replies) | serving v4 | gate pass | loss 0.0123 | KL to ref 0.0214 | 41 s

``KL to ref``: the KL penalty's estimate of KL(policy || reference) in nats per token
(``train/kl_loss``, with ``--use-kl-loss``); without the penalty ``KL`` is the old-vs-new policy KL
within the step (``train/approx_kl``).

A step where the collapse guard acted gets a second line: the skipped step's spiking signal, or the
rollback / pause the guard reports (``guard/event``).

``satisfaction``: the simulated user's verdicts on the replies it got since the previous step (the
ground truth the judges never see), when known.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

from slime.guards.collapse import SIGNALS

__all__ = ["StepProgress", "console_to_log", "step_line"]


def console_to_log(log_path: Path) -> TextIO:
    """Send this process's stdout and stderr (file descriptors 1 and 2, so child processes, Ray's
    forwarded worker output and native libraries too) to ``log_path`` (appended); returns a text
    stream on the terminal they pointed to before, for the lines a person should see."""
    sys.stdout.flush()
    sys.stderr.flush()
    console = os.fdopen(os.dup(1), "w", buffering=1, encoding="utf-8", errors="replace")
    fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    return console


def _num(x, fmt: str) -> str:
    return format(x, fmt) if isinstance(x, (int, float)) and not isinstance(x, bool) else "-"


def step_line(row: dict, total: int | None, satisfaction: tuple[float, int] | None, seconds: float) -> str:
    """One step's line (module docstring) from its metrics ``row`` (a ``metrics.jsonl`` record);
    ``satisfaction``: ``(rate, replies)`` or None; ``seconds``: the step's wall time."""
    parts = [f"step {row.get('step', '?')}" + (f"/{total}" if total else "")]
    parts.append(f"reward {_num(row.get('reward/mean'), '+.2f')} ({_num(row.get('rollout/samples'), 'd')})")
    if satisfaction is not None:
        parts.append(f"satisfaction {satisfaction[0]:.2f} ({satisfaction[1]} replies)")
    version = row.get("weight_version", row.get("train/weight_version"))
    parts.append(f"serving v{_num(version, 'd') if isinstance(version, int) else _num(version, '.0f')}")
    gate = row.get("gate/passed")
    parts.append("gate " + ("-" if gate is None else ("pass" if gate else "FAIL")))
    parts.append(f"loss {_num(row.get('train/loss', row.get('loss')), '.4f')}")
    if row.get("train/kl_loss"):  # the KL penalty's estimate of KL(policy || reference), nats/token
        parts.append(f"KL to ref {_num(row['train/kl_loss'], '.4f')}")
    else:  # old vs new policy within the step (0 for one on-policy update)
        parts.append(f"KL {_num(row.get('train/approx_kl'), '.4f')}")
    parts.append(f"{seconds:.0f} s")
    return " | ".join(parts) + guard_note(row)


def guard_note(row: dict) -> str:
    """What the collapse guard did at this step, as a second line (``"\n  ..."``), or ``""``:
    its event (a rollback or pause, ``guard/event``), a skipped step with the signal that
    spiked (``guard/spike_*``, ``guard/spike_value`` against ``guard/spike_baseline``) or a kept
    step whose gradient was clipped (``guard/clipped``, ``guard/clip_scale``)."""
    if row.get("guard/event"):
        return f"\n  {row['guard/event']}"
    signal = next((name for name in SIGNALS if row.get(f"guard/spike_{name}")), "a signal")
    if row.get("guard/clipped") and not row.get("guard/skipped"):
        return (f"\n  collapse guard: gradient clipped x{_num(row.get('guard/clip_scale'), '.3g')} ({signal} "
                f"{_num(row.get('guard/spike_value'), '.3g')} vs baseline {_num(row.get('guard/spike_baseline'), '.3g')}); "
                "the step was kept")
    if not row.get("guard/skipped"):
        return ""
    return (f"\n  collapse guard: step skipped ({signal} {_num(row.get('guard/spike_value'), '.3g')} vs baseline "
            f"{_num(row.get('guard/spike_baseline'), '.3g')}); the weights stay as they were")


class StepProgress:
    """A thread that prints :func:`step_line` for each step the trainer logs.

    Args:
        logs: the trainer's ``--log-dir`` (its newest ``*/metrics.jsonl`` is followed).
        total: the number of steps of the run (None: unknown).
        console: where the lines go (the terminal).
        verdicts: returns the simulated user's verdicts so far (True: satisfied), or None.
        poll_s: how often the file is read.
        since: only a ``metrics.jsonl`` written at or after this time (UNIX seconds) is followed:
            a log folder that holds earlier runs (a launch script's ``LOG_DIR``); None: any.
    """

    def __init__(self, logs: Path, total: int | None, console: TextIO,
                 verdicts: Callable[[], list[bool]] | None = None, poll_s: float = 1.0, since: float | None = None):
        self.logs, self.total, self.console, self.verdicts, self.poll_s = Path(logs), total, console, verdicts, poll_s
        self.since = since
        self._stop = threading.Event()
        self._seen = 0
        self._verdicts_seen = 0
        self._t = time.time()
        self._thread = threading.Thread(target=self._run, name="step-progress", daemon=True)

    def start(self) -> "StepProgress":
        """Start following (returns self)."""
        self._t = time.time()
        self._thread.start()
        return self

    def stop(self) -> None:
        """Print the steps not printed yet and stop."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(10)
        self.poll()

    def _satisfaction(self) -> tuple[float, int] | None:
        if self.verdicts is None:
            return None
        verdicts = list(self.verdicts())
        new = verdicts[self._verdicts_seen:]
        self._verdicts_seen = len(verdicts)
        return (sum(new) / len(new), len(new)) if new else None

    def poll(self) -> int:
        """Print the lines of steps logged since the last call; returns how many."""
        files = sorted((p for p in self.logs.glob("*/metrics.jsonl")
                        if self.since is None or p.stat().st_mtime >= self.since), key=lambda p: p.stat().st_mtime)
        if not files:
            return 0
        lines = files[-1].read_text(errors="replace").splitlines()
        printed = 0
        for line in lines[self._seen:]:
            try:
                row = json.loads(line)
            except ValueError:
                break  # the trainer is writing it: read it next time
            self._seen += 1
            now = time.time()
            self.console.write(step_line(row, self.total, self._satisfaction(), now - self._t) + "\n")
            self._t = now
            printed += 1
        self.console.flush()
        return printed

    def _run(self) -> None:
        while not self._stop.wait(self.poll_s):
            try:
                self.poll()
            except OSError:
                pass
