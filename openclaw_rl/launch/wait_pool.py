"""Wait until an environment server a launch script started is ready; print its URL.

``python -m openclaw_rl.launch.wait_pool --pid PID --port-file FILE [--host H] [--warm N]
[--timeout S] [--log LOG] [--name NAME]``

The server (started with ``--port-file FILE``, see :mod:`openclaw_rl.agentic.listen`) writes its
port to FILE once its socket is bound, so the port read there is the server's own (with
``--port 0``, a port nobody else could take in between). Then ``GET /healthz`` must answer 200;
with ``--warm N`` the GUI pool's ``GET /status`` must also report N warm browsers (or all started
with none warming). Prints ``http://HOST:PORT`` on stdout and exits 0. Exits 1 with one line on
stderr (and the last lines of ``--log``) when the process exits first or the timeout passes.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import httpx

from openclaw_rl.tls import tls_context


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (an exited child not yet reaped, a zombie, counts as exited)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def _port(path: Path) -> int | None:
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return None


def _ready(url: str, warm: int) -> bool:
    """Whether ``url`` answers ``/healthz`` (and, with ``warm``, has the browsers warm)."""
    try:
        if httpx.get(f"{url}/healthz", timeout=2, verify=tls_context()).status_code != 200:
            return False
        if not warm:
            return True
        browsers = httpx.get(f"{url}/status", timeout=2, verify=tls_context()).json()["browsers"]
        return browsers["warm"] >= warm or (browsers["warming"] == 0 and browsers["started"] >= warm)
    except (httpx.HTTPError, ValueError, KeyError, TypeError):
        return False


def wait(pid: int, port_file: Path, host: str, warm: int, timeout_s: float) -> str:
    """Poll until ready; returns the server's URL. Raises ``RuntimeError`` (one line) when the
    process ``pid`` exits or ``timeout_s`` seconds pass first."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if not _alive(pid):
            raise RuntimeError("exited")
        port = _port(port_file)
        if port is not None:
            url = f"http://{host}:{port}"
            if _ready(url, warm):
                return url
        time.sleep(0.3)
    raise RuntimeError(f"not ready within {timeout_s:.0f} s")


def main(argv: list[str] | None = None) -> int:
    """CLI entry; returns the exit code (0 ready, 1 not)."""
    p = argparse.ArgumentParser(prog="python -m openclaw_rl.launch.wait_pool")
    p.add_argument("--pid", type=int, required=True)
    p.add_argument("--port-file", type=Path, required=True)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--warm", type=int, default=0, help="GUI pool: browsers that must be warm")
    p.add_argument("--timeout", type=float, default=180.0)
    p.add_argument("--log", type=Path, default=None, help="the server's log (its tail is shown on failure)")
    p.add_argument("--name", default="the environment server")
    args = p.parse_args(argv)
    try:
        print(wait(args.pid, args.port_file, args.host, args.warm, args.timeout))
        return 0
    except RuntimeError as exc:
        print(f"{args.name} (pid {args.pid}) {exc}", file=sys.stderr)
        if args.log and args.log.is_file():
            print("\n".join(args.log.read_text(errors="replace").splitlines()[-5:]), file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
