"""``python -m openclaw_rl.engine.engine_guard --parent PID --grace S -- CMD...``: run one engine
server and make sure nothing of it outlives the intercept server.

An engine server is a process tree (vLLM: the API server, its engine core, its workers) that
ignores SIGTERM while it starts. The guard runs it as the only other member of its own process
group (it is started in a session of its own) and ends the whole group when

* it receives SIGTERM (the intercept server stopping it): SIGTERM to the engine server, which
  stops its own workers, then after ``--grace`` seconds SIGKILL to whatever is left of the group;
* its parent ``--parent`` is gone (the intercept server died, even by SIGKILL): the same.

It exits with the engine server's exit status when that ends by itself. Standard library only.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import threading
import time


def _end_group(engine: subprocess.Popen, grace: float) -> None:
    """SIGTERM the engine server, wait up to ``grace`` s, then SIGKILL the guard's process group
    (the engine and every process it started; the guard itself too)."""
    if engine.poll() is None:
        engine.send_signal(signal.SIGTERM)
        try:
            engine.wait(grace)
        except subprocess.TimeoutExpired:
            pass
    os.killpg(os.getpgid(0), signal.SIGKILL)


def main(argv: list[str] | None = None) -> int:
    """Run the command after ``--`` under the guard (see the module doc); returns its exit code."""
    p = argparse.ArgumentParser(prog="engine_guard")
    p.add_argument("--parent", type=int, required=True, help="PID whose death ends the engine server")
    p.add_argument("--grace", type=float, default=30.0, help="seconds between SIGTERM and SIGKILL")
    p.add_argument("cmd", nargs=argparse.REMAINDER, help="-- then the engine server's command")
    ns = p.parse_args(argv)
    cmd = ns.cmd[1:] if ns.cmd[:1] == ["--"] else ns.cmd
    if not cmd:
        p.error("no command after --")
    engine = subprocess.Popen(cmd)  # same process group as the guard
    stopping = threading.Event()

    def on_term(_signum, _frame):
        stopping.set()

    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, on_term)
    while engine.poll() is None:
        if stopping.is_set() or os.getppid() != ns.parent:
            _end_group(engine, ns.grace)
        time.sleep(0.5)
    return engine.returncode


if __name__ == "__main__":
    sys.exit(main())
