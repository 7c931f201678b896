"""The engine guard (:mod:`openclaw_rl.engine.engine_guard`) ends an engine server's whole process
tree when the intercept server stops it or dies, even for a tree that ignores SIGTERM. Real
processes: a shell that ignores SIGTERM and has a child of its own stands in for vLLM starting."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

#: ignores SIGTERM (as vLLM does while it starts) and starts a child that does too
STUBBORN = "trap '' TERM; sleep 300 & echo $! > {pidfile}; wait"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as fh:  # a zombie waiting for its parent is gone for our purpose
        return fh.read().split()[2] != "Z"


def _wait_gone(pids, timeout: float) -> bool:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if not any(_alive(p) for p in pids):
            return True
        time.sleep(0.1)
    return False


def _guard(parent: int | str, pidfile, grace: float) -> list[str]:
    return [sys.executable, "-m", "openclaw_rl.engine.engine_guard", "--parent", str(parent), "--grace", str(grace),
            "--", "sh", "-c", STUBBORN.format(pidfile=pidfile)]


def _child_pid(pidfile) -> int:
    deadline = time.time() + 30
    while not (pidfile.exists() and pidfile.read_text().strip()):
        assert time.time() < deadline, "the stand-in engine did not start"
        time.sleep(0.05)
    return int(pidfile.read_text())


def test_sigterm_ends_the_tree_after_the_grace(tmp_path):
    pidfile = tmp_path / "child.pid"
    guard = subprocess.Popen(_guard(os.getpid(), pidfile, grace=1.0), start_new_session=True)
    child = _child_pid(pidfile)
    guard.send_signal(signal.SIGTERM)
    assert guard.wait(15) == -signal.SIGKILL  # the guard ends its own group, itself included
    assert _wait_gone([child], 10)


def test_the_tree_ends_when_the_intercept_server_dies(tmp_path):
    pidfile = tmp_path / "child.pid"
    # a "server" that starts the guard, then dies without stopping anything (like kill -9)
    code = ("import os, subprocess, sys, time\n"
            f"cmd = [str(os.getpid()) if a == 'PARENT' else a for a in {_guard('PARENT', pidfile, 1.0)!r}]\n"
            "print(subprocess.Popen(cmd, start_new_session=True).pid, flush=True)\n"
            "time.sleep(1.5)\n"
            "os._exit(0)\n")
    server = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    guard = int(server.stdout.split()[0])
    child = _child_pid(pidfile)
    assert _wait_gone([guard, child], 15)
