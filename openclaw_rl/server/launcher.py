"""Run the intercept server as a subprocess on a free loopback port; stop it by its PID.

Used by the main job, the benchmarks and the tests, so each starts the server exactly as a user
does (``python -m openclaw_rl.server ...``).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import httpx

from openclaw_rl.tls import tls_context

REPO = Path(__file__).resolve().parents[2]  # repository root (working directory of the server)


def free_port() -> int:
    """A currently free TCP port on 127.0.0.1."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class ServerHandle:
    """A running server: its process, port, buffer folder, API key and log file."""

    proc: subprocess.Popen
    port: int
    buffer_dir: Path
    api_key: str | None
    log_path: Path
    #: the server's ``--shutdown-grace-seconds`` (:func:`stop_server` waits that long, plus 15 s)
    shutdown_grace: float = 30.0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def log(self) -> str:
        """The server's combined stdout/stderr so far."""
        return self.log_path.read_text(errors="replace")

    def kill9(self) -> None:
        """SIGKILL the server (no clean shutdown) and wait for it."""
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(30)


def start_server(model_path: str, buffer_dir: Path, *extra: str, api_key: str | None = "sk-test",
                 timeout: float = 180.0, log_dir: Path | None = None, port: int | None = None,
                 command_prefix: Sequence[str] = (), env: dict[str, str] | None = None,
                 cwd: Path | None = None) -> ServerHandle:
    """Launch ``python -m openclaw_rl.server`` with capture on and wait until ``/healthz`` answers.

    Args:
        model_path: ``builtin:`` name or model folder.
        buffer_dir: ``--rl-buffer-dir``.
        *extra: more server flags.
        api_key: ``--api-key`` (None: no key).
        timeout: seconds to wait for start-up.
        log_dir: where ``server-<port>.log`` goes (default: next to ``buffer_dir``).
        port: the port (default: a free one).
        command_prefix: a command that runs the server (it must ``exec`` it, keeping the PID),
            e.g. ``unshare -m sh -c '<mount a small disk>; exec "$@"' sh``.
        env: environment variables set for the server on top of this process's
            (``CUDA_VISIBLE_DEVICES`` of its GPUs).
        cwd: the source tree the server runs from (``python -m`` imports ``openclaw_rl`` from
            there first); default this repository. Benchmarks use it to run an older version.

    Raises:
        RuntimeError: the server exited or did not answer in time (the message holds its log).
    """
    port = port or free_port()
    log_path = (log_dir or buffer_dir.parent) / f"server-{port}.log"
    cmd = [*command_prefix, sys.executable, "-m", "openclaw_rl.server", "--model-path", str(model_path),
           "--host", "127.0.0.1", "--port", str(port), "--backend", "transformers",
           "--enable-rl-intercept", "--rl-buffer-dir", str(buffer_dir), "--log-level", "warning", *extra]
    if api_key:
        cmd += ["--api-key", api_key]
    log_path.parent.mkdir(parents=True, exist_ok=True)
    log_path.write_bytes(b"")
    fh = open(log_path, "a")  # appending: forget may rewrite the log in place (openclaw_rl.capture.forget)
    env = {**{k: v for k, v in os.environ.items() if k != "OMP_NUM_THREADS"}, **(env or {})}  # Ray sets it to 1
    proc = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, cwd=cwd or REPO, env=env)
    handle = ServerHandle(proc, port, buffer_dir, api_key, log_path, _grace(extra))
    deadline = time.time() + timeout
    try:
        while time.time() < deadline:
            if proc.poll() is not None:
                raise RuntimeError(f"server exited with {proc.returncode}:\n{handle.log()}")
            try:
                if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2, verify=tls_context()).status_code == 200:
                    return handle
            except httpx.HTTPError:
                pass
            time.sleep(0.3)
    except BaseException:  # Ctrl-C or SIGTERM (openclaw_rl.interrupt) while it starts: not left running
        stop_server(handle)
        raise
    stop_server(handle)
    raise RuntimeError(f"server did not start in {timeout}s:\n{handle.log()}")


def _grace(flags: Sequence[str]) -> float:
    """The ``--shutdown-grace-seconds`` among server flags (default 30)."""
    grace = 30.0
    for i, flag in enumerate(flags):
        if flag == "--shutdown-grace-seconds" and i + 1 < len(flags):
            grace = float(flags[i + 1])
        elif flag.startswith("--shutdown-grace-seconds="):
            grace = float(flag.split("=", 1)[1])
    return grace


def stop_server(handle: ServerHandle) -> None:
    """SIGTERM by PID (a graceful shutdown: requests in flight get the server's grace to end),
    SIGKILL if it has not exited within the grace plus 15 s."""
    if handle.proc.poll() is None:
        handle.proc.send_signal(signal.SIGTERM)
        try:
            handle.proc.wait(handle.shutdown_grace + 15)
        except subprocess.TimeoutExpired:
            handle.proc.kill()
            handle.proc.wait(15)


@contextmanager
def running_server(model_path: str, buffer_dir: Path, *extra: str, **kw):
    """Context manager around :func:`start_server` / :func:`stop_server`."""
    handle = start_server(model_path, buffer_dir, *extra, **kw)
    try:
        yield handle
    finally:
        stop_server(handle)
