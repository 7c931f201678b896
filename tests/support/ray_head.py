"""A private Ray head for tests that submit real Ray jobs (``ray start --block``, stopped by PID)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack, contextmanager
from pathlib import Path

import httpx

from openclaw_rl.server.launcher import free_port
from openclaw_rl.tls import tls_context


def _start_head(bin_dir: Path, env: dict, log_path: Path, temp_dir: str, num_cpus: int):
    """One try: ``ray start --head --block`` on fresh free ports; returns ``(proc, gcs_port,
    dashboard_port)`` once the dashboard answers as Ray's (``/api/version`` with ``ray_version``;
    401 under token auth), or ``None`` when the head exited first (a port taken between the
    choice and Ray's bind). Raises ``RuntimeError`` (the log) after 180 s."""
    port, dash = free_port(), free_port()
    proc = subprocess.Popen([str(bin_dir / "ray"), "start", "--head", "--block", "--node-ip-address", "127.0.0.1",
                             "--temp-dir", temp_dir,
                             "--port", str(port), "--dashboard-host", "127.0.0.1", "--dashboard-port", str(dash),
                             # its own job-agent port (default 52365): two heads can run side by side
                             "--dashboard-agent-listen-port", str(free_port()),
                             "--num-cpus", str(num_cpus), "--disable-usage-stats"],
                            env=env, stdout=open(log_path, "w"), stderr=subprocess.STDOUT)
    deadline = time.time() + 180
    while time.time() < deadline:
        if proc.poll() is not None:
            return None
        try:
            r = httpx.get(f"http://127.0.0.1:{dash}/api/version", timeout=2, verify=tls_context())
            if r.status_code == 401 or (r.status_code == 200 and "ray_version" in r.json()):
                return proc, port, dash
        except (httpx.HTTPError, ValueError):
            pass
        time.sleep(1)
    _stop(proc)
    raise RuntimeError(log_path.read_text())


def _stop(proc: subprocess.Popen) -> None:
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(10)


@contextmanager
def private_ray_head(log_dir: Path, num_cpus: int = 2):
    """Start a Ray head on loopback with token auth on free ports; yields ``(gcs_port, dashboard_port)``.

    The head runs in the foreground of its own process (``--block``) and is stopped by PID on
    exit (SIGTERM, then SIGKILL after 60 s). Its output goes to ``log_dir / "ray.log"``. Each head
    has its own ``--temp-dir`` (removed on exit): Ray keeps "the cluster on this machine" in
    ``<temp dir>/ray_current_cluster``, and a job's entrypoint gets ``RAY_ADDRESS`` from its head's
    file, so with one shared ``/tmp/ray`` a job on one head would train on the head started last.
    A head that exits at start (a port taken in between) is started again on other ports (3 tries).

    Raises:
        RuntimeError: the dashboard did not answer within 180 s, or three starts failed (the log
            is the message).
    """
    bin_dir = Path(sys.executable).parent
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "RAY_AUTH_MODE": "token"}
    subprocess.run([str(bin_dir / "ray"), "get-auth-token", "--generate"], env=env, check=True, capture_output=True)
    log_path = Path(log_dir) / "ray.log"
    temp_dir = tempfile.mkdtemp(prefix="ray-", dir="/tmp")  # short: Ray's unix socket paths live in it
    try:
        for _ in range(3):
            started = _start_head(bin_dir, env, log_path, temp_dir, num_cpus)
            if started:
                break
        else:
            raise RuntimeError(log_path.read_text())
        proc, port, dash = started
        try:
            yield port, dash
        finally:
            _stop(proc)
    finally:
        shutil.rmtree(temp_dir, ignore_errors=True)


class SharedRayHead:
    """One test process's Ray head (:func:`private_ray_head`), started by the first test that asks
    for it and stopped by :meth:`stop` once the process has no Ray test left to run: an idle head
    (GCS, raylet, dashboard, agents, log monitor, two prestarted workers) costs ~4.5 CPU-s a minute
    on 2 cores, and ``make test`` runs its Ray tests first and everything else for ~15 minutes
    after. A test that needs it again after a stop starts a new one.
    """

    def __init__(self) -> None:
        self._stack: ExitStack | None = None
        self._ports: tuple[int, int] | None = None

    def ports(self, log_dir: Path) -> tuple[int, int]:
        """``(gcs_port, dashboard_port)`` of the running head, started now (logs in ``log_dir``)
        when none runs. Raises ``RuntimeError`` as :func:`private_ray_head`."""
        if self._ports is None:
            stack = ExitStack()
            self._ports = stack.enter_context(private_ray_head(log_dir))
            self._stack = stack
        return self._ports

    def stop(self) -> None:
        """Stop the head by PID if one runs (:func:`private_ray_head`'s exit); idempotent."""
        stack, self._stack, self._ports = self._stack, None, None
        if stack is not None:
            stack.close()


def job_env(port: int, dash: int, **extra: str) -> dict:
    """Environment for a launch script submitting to the head at ``port`` / ``dash``:
    ``RAY_ADDRESS`` is the head's job API URL (``http://127.0.0.1:<dash>``, the form Ray's job docs
    use; the script checks it over HTTP). Pass ``RAY_ADDRESS=f"127.0.0.1:{port}"`` for the GCS
    form (the script then asks the cluster itself for its job API, ~2 s more)."""
    return {**os.environ, "RAY_PORT": str(port), "RAY_DASHBOARD_PORT": str(dash),
            "RAY_ADDRESS": f"http://127.0.0.1:{dash}", "PYTHON": sys.executable, "RAY_AUTH_MODE": "token", **extra}


def driver_env(port: int, *unset: str, **extra: str) -> dict:
    """Environment for ``python slime/train.py`` run as a driver of the head at GCS ``port`` (the
    suite's shared head, ``ray_head``): ``RAY_ADDRESS=127.0.0.1:<port>``, as a user on a cluster
    sets it, instead of a private local cluster per run (~5 s of a core to start and stop each).
    The names in ``unset`` are left out. The run's actors live in the head's worker processes, so
    they see the head's environment, not this one: a test whose actors must read a variable set
    here (fault points, thread counts) starts a cluster of its own."""
    env = {k: v for k, v in os.environ.items() if k not in unset}
    return {**env, "RAY_ADDRESS": f"127.0.0.1:{port}", "RAY_AUTH_MODE": "token", **extra}
