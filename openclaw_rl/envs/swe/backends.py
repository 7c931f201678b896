"""Where an episode's container lives: in this process, on exec servers, or behind the pool server.

:func:`open_container` picks, from the environment:

* ``SWE_ENV_SERVER_URL`` set: a lease on the SWE pool server (:mod:`.pool_server`, ``/allocate``
  ... ``/close``);
* else ``SWE_EXEC_SERVER_URLS`` (comma-separated): a container on one of those exec servers
  (:mod:`.exec_server`), the next one in turn; a full server (429) passes to the next;
* else: a container in this process (:class:`~openclaw_rl.envs.swe.containers.ContainerManager`,
  or :class:`~openclaw_rl.envs.swe.docker_containers.DockerContainerManager` with
  ``SWE_CONTAINER_BACKEND=docker``).

Every handle has the same synchronous methods (environments run in worker threads):
``exec(command, cwd=None, timeout=None) -> {returncode, output, timed_out, truncated}``,
``diff() -> str``, ``evaluate(patch, eval_script, timeout) -> {resolved, applied, returncode,
output}``, ``close()`` (idempotent). Failures raise :class:`BackendError` (one line).
"""

from __future__ import annotations

import itertools
import os
import threading
import uuid

import httpx

from openclaw_rl.envs.swe.containers import ContainerError, ContainerManager
from openclaw_rl.tls import tls_context

__all__ = ["BackendError", "open_container", "local_manager"]

_LOCK = threading.Lock()
_MANAGER: ContainerManager | None = None
_TURN = itertools.count()


class BackendError(RuntimeError):
    """A container call failed (unreachable server, unknown container or lease, sandbox error)."""


def local_manager() -> ContainerManager:
    """This process's container manager (made on first use): bubblewrap copies of any image
    directory, or Docker containers with ``SWE_CONTAINER_BACKEND=docker`` (:mod:`.docker_containers`).

    Raises:
        BackendError: ``SWE_CONTAINER_BACKEND=docker`` and no Docker daemon answers.
    """
    global _MANAGER
    with _LOCK:
        if _MANAGER is None:
            limit = int(os.environ.get("SWE_MAX_CONCURRENT") or 64)
            if os.environ.get("SWE_CONTAINER_BACKEND") == "docker":
                from openclaw_rl.envs.swe.docker_containers import DockerContainerManager

                try:
                    _MANAGER = DockerContainerManager(limit)
                except ContainerError as exc:
                    raise BackendError(f"SWE_CONTAINER_BACKEND=docker: {exc.message}") from None
            else:
                _MANAGER = ContainerManager(None, max_containers=limit)
        return _MANAGER


class LocalHandle:
    """A container of this process's manager."""

    def __init__(self, manager: ContainerManager, container_id: str):
        self.manager, self.container_id, self._closed = manager, container_id, False

    def _call(self, fn, *args):
        try:
            return fn(self.container_id, *args)
        except ContainerError as exc:
            raise BackendError(f"{exc.code}: {exc.message}") from None

    def exec(self, command: str, cwd: str | None = None, timeout: float | None = None) -> dict:
        """Run a command (module docstring)."""
        return self._call(self.manager.exec, command, cwd, timeout)

    def diff(self) -> str:
        """The container's git patch."""
        return self._call(self.manager.diff)

    def evaluate(self, patch: str, eval_script: str, timeout: float = 300.0) -> dict:
        """Apply ``patch`` to a fresh copy and run ``eval_script``."""
        return self._call(self.manager.evaluate, patch, eval_script, timeout)

    def close(self) -> None:
        """Destroy the container (idempotent)."""
        if not self._closed:
            self._closed = True
            try:
                self.manager.destroy(self.container_id)
            except ContainerError:
                pass


def _post(http: httpx.Client, url: str, path: str, body: dict) -> dict:
    try:
        r = http.post(f"{url}{path}", json=body)
    except httpx.HTTPError as exc:
        raise BackendError(f"{url}{path}: {type(exc).__name__}: {exc}") from None
    if r.status_code != 200:
        try:
            err = r.json()["error"]
            msg = f"{err.get('code')}: {err.get('message')}"
        except (ValueError, KeyError, TypeError):
            msg = r.text[:300]
        exc = BackendError(f"{url}{path} answered {r.status_code}: {msg}")
        exc.status = r.status_code  # type: ignore[attr-defined]
        raise exc
    return r.json()


def _client(timeout: float) -> httpx.Client:
    key = os.environ.get("POOL_API_KEY")
    return httpx.Client(timeout=httpx.Timeout(timeout + 60.0, connect=30.0), verify=tls_context(),
                        headers={"Authorization": f"Bearer {key}"} if key else {})


class ExecServerHandle:
    """A container on an exec server (``/container/*``)."""

    def __init__(self, url: str, container_id: str, http: httpx.Client):
        self.url, self.container_id, self.http, self._closed = url, container_id, http, False

    def exec(self, command: str, cwd: str | None = None, timeout: float | None = None) -> dict:
        """Run a command (module docstring)."""
        return _post(self.http, self.url, "/container/exec", {"container_id": self.container_id, "command": command,
                                                                "cwd": cwd, "timeout": timeout})

    def diff(self) -> str:
        """The container's git patch."""
        return _post(self.http, self.url, "/container/diff", {"container_id": self.container_id})["diff"]

    def evaluate(self, patch: str, eval_script: str, timeout: float = 300.0) -> dict:
        """Apply ``patch`` to a fresh copy and run ``eval_script``."""
        return _post(self.http, self.url, "/container/evaluate", {"container_id": self.container_id, "patch": patch,
                                                                    "eval_script": eval_script, "timeout": timeout})

    def close(self) -> None:
        """Destroy the container (idempotent; a lost one is already gone)."""
        if not self._closed:
            self._closed = True
            try:
                _post(self.http, self.url, "/container/destroy", {"container_id": self.container_id})
            except BackendError:
                pass
            self.http.close()


class PoolHandle:
    """A lease on the SWE pool server (``/exec``, ``/diff``, ``/evaluate``, ``/close``)."""

    def __init__(self, url: str, lease_id: str, http: httpx.Client):
        self.url, self.lease_id, self.http, self._closed = url, lease_id, http, False

    def exec(self, command: str, cwd: str | None = None, timeout: float | None = None) -> dict:
        """Run a command (module docstring)."""
        return _post(self.http, self.url, "/exec", {"lease_id": self.lease_id, "command": command, "cwd": cwd,
                                                    "timeout": timeout})

    def diff(self) -> str:
        """The container's git patch."""
        return _post(self.http, self.url, "/diff", {"lease_id": self.lease_id})["diff"]

    def evaluate(self, patch: str, eval_script: str, timeout: float = 300.0) -> dict:
        """Apply ``patch`` to a fresh copy and run ``eval_script``."""
        return _post(self.http, self.url, "/evaluate", {"lease_id": self.lease_id, "patch": patch,
                                                        "eval_script": eval_script, "timeout": timeout})

    def close(self) -> None:
        """Close the lease (idempotent)."""
        if not self._closed:
            self._closed = True
            try:
                _post(self.http, self.url, "/close", {"lease_id": self.lease_id})
            except BackendError:
                pass
            self.http.close()


def exec_server_urls(environ: dict | None = None) -> list[str]:
    """``SWE_EXEC_SERVER_URLS`` split on commas (trailing slashes dropped)."""
    raw = (os.environ if environ is None else environ).get("SWE_EXEC_SERVER_URLS") or ""
    return [u.strip().rstrip("/") for u in raw.split(",") if u.strip()]


def create_on_exec_servers(urls: list[str], spec: dict, timeout: float):
    """A container on the first of ``urls`` (starting at the next in turn) that has room.

    Raises:
        BackendError: every server refused or failed (the last reason).
    """
    start, last = next(_TURN), None
    for k in range(len(urls)):
        url = urls[(start + k) % len(urls)]
        http = _client(timeout)
        try:
            cid = _post(http, url, "/container/create", spec)["container_id"]
            return ExecServerHandle(url, cid, http)
        except BackendError as exc:
            http.close()
            last = exc
    raise last or BackendError("no exec server")


def open_container(image: str, *, cwd: str, timeout: float, env: dict | None = None,
                   files: dict | None = None, instance_id: str = ""):
    """A fresh container of ``image`` (module docstring for where).

    Args:
        image: the repository directory (absolute path).
        cwd: where it sits in the container. timeout: default seconds per command.
        env: environment of every command. files: container path -> content planted at start.
        instance_id: the task (the pool server's ``/allocate`` names it).

    Raises:
        BackendError: the container cannot be made.
    """
    spec = {"image": image, "cwd": cwd, "timeout": timeout, "env": dict(env or {}), "files": dict(files or {})}
    pool = (os.environ.get("SWE_ENV_SERVER_URL") or "").strip().rstrip("/")
    if pool:
        http = _client(timeout)
        try:
            body = {**spec, "instance_id": instance_id, "request_id": uuid.uuid4().hex}
            return PoolHandle(pool, _post(http, pool, "/allocate", body)["lease_id"], http)
        except BackendError:
            http.close()
            raise
    urls = exec_server_urls()
    if urls:
        return create_on_exec_servers(urls, spec, timeout)
    manager = local_manager()
    try:
        return LocalHandle(manager, manager.create(image, cwd, timeout, env, files))
    except ContainerError as exc:
        raise BackendError(f"{exc.code}: {exc.message}") from None
