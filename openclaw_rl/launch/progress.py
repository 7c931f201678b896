"""What a person sees in the terminal while a launch script's Ray job runs.

The launch scripts (``openclaw_rl/launch/train_job.sh``) send everything the job prints -- Ray's
forwarded worker output, library warnings and progress bars, the trainer's log lines, its final
summary -- to the run's log file (``$LOG_DIR/<job id>.log``). This follower prints, on the terminal:

* the dashboard's address, once the job's server is up (the rollout service's ``serving at ...;
  dashboard: ...`` line in the run's log);
* per train step, the compact line ``make run`` prints
  (:class:`openclaw_rl.main_job.progress.StepProgress` over ``$LOG_DIR/run-*/metrics.jsonl``):

    step 3/20 | reward -0.25 (16) | serving v3 | gate pass | loss 0.0123 | KL 0.0002 | 41 s

``python -m openclaw_rl.launch.progress --log-dir DIR --run-log FILE [--since T]
[--open-ended-steps N] -- <the trainer's flags>``: the step count is the last ``--num-rollout`` of
the trainer's flags, left out when it is ``N`` (the open-ended default of a live run). SIGTERM
prints what is left and exits 0.
"""

from __future__ import annotations

import argparse
import re
import signal
import sys
import threading
from pathlib import Path
from typing import Sequence, TextIO

from openclaw_rl.main_job.progress import StepProgress

__all__ = ["RunLogWatch", "main", "total_steps"]

#: the rollout service's line when the job's server is up (openclaw_rl/rollout/service.py)
_SERVING = re.compile(r"serving at (\S+); dashboard: (.*\S)")


def total_steps(trainer_argv: Sequence[str], open_ended: int | None = None) -> int | None:
    """The run's step count: the last ``--num-rollout`` value of ``trainer_argv`` (None when absent
    or equal to ``open_ended``)."""
    total = None
    for i, arg in enumerate(trainer_argv):
        value = trainer_argv[i + 1] if arg == "--num-rollout" and i + 1 < len(trainer_argv) else (
            arg.split("=", 1)[1] if arg.startswith("--num-rollout=") else None)
        if value is not None and value.isdigit():
            total = int(value)
    return None if total == open_ended else total


class RunLogWatch:
    """Reads the run's log file as it grows and prints the dashboard's address once.

    Args:
        path: the run's log file (it may not exist yet). console: where the line goes.
    """

    def __init__(self, path: Path, console: TextIO):
        self.path, self.console = Path(path), console
        self._offset = 0
        self._partial = b""
        self.dashboard: str | None = None

    def poll(self) -> None:
        """Read what was appended since the last call."""
        try:
            with open(self.path, "rb") as f:
                f.seek(self._offset)
                data = f.read()
        except OSError:
            return
        self._offset += len(data)
        lines = (self._partial + data).split(b"\n")
        self._partial = lines.pop()
        for line in lines:
            m = _SERVING.search(line.decode("utf-8", "replace"))
            if m and self.dashboard is None:
                self.dashboard = m.group(2)
                self.console.write(f"serving at {m.group(1)}; dashboard: {m.group(2)}\n")
                self.console.flush()


def main(argv: Sequence[str] | None = None) -> int:
    """Follow a launch script's run (module docstring) until SIGTERM; returns 0."""
    argv = list(sys.argv[1:] if argv is None else argv)
    trainer_argv = argv[argv.index("--") + 1:] if "--" in argv else []
    own = argv[:argv.index("--")] if "--" in argv else argv
    p = argparse.ArgumentParser(prog="python -m openclaw_rl.launch.progress", description=__doc__.split("\n")[0])
    p.add_argument("--log-dir", required=True, help="the trainer's --log-dir")
    p.add_argument("--run-log", required=True, help="the run's log file (the job's output)")
    p.add_argument("--since", type=float, default=None, help="follow only metrics written from this time on")
    p.add_argument("--open-ended-steps", type=int, default=None, help="a --num-rollout that means 'until stopped'")
    p.add_argument("--poll-s", type=float, default=1.0, help="how often the files are read")
    a = p.parse_args(own)
    console = sys.stdout
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    watch = RunLogWatch(Path(a.run_log), console)
    steps = StepProgress(Path(a.log_dir), total_steps(trainer_argv, a.open_ended_steps), console, since=a.since)
    while True:
        watch.poll()
        steps.poll()
        if stop.wait(a.poll_s):
            watch.poll()
            steps.poll()
            return 0


if __name__ == "__main__":
    sys.exit(main())
