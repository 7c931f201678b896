"""SWE containers on a Docker daemon: the exec server's optional backend (``--backend docker``).

The same API as :class:`~openclaw_rl.envs.swe.containers.ContainerManager` (``create``, ``exec``,
``diff``, ``evaluate``, ``destroy``, ``destroy_all``, ``status``, the same :class:`ContainerError`
codes), so the exec server, the pool server and the agent loop do not know which one runs. Here
an *image* is a Docker image that already holds the repository at ``cwd`` at its base commit (a
SWE-bench instance's image, e.g. ``/testbed``); the bubblewrap backend's image is a local
directory instead. Images are used as the daemon has them (no pull: an unknown image is 400
``invalid_image``), through the ``docker`` SDK (``DOCKER_HOST`` etc. as the docker CLI reads them).

Each container runs ``sleep infinity`` with no network (``network_mode=none``), the memory, process
and file-size limits of :data:`~openclaw_rl.envs.swe.containers.SWE_LIMITS`, and ``env`` in its
environment; ``files`` are written in before the first command. A command runs as
``timeout -k 2 <t> bash -c <command>`` (coreutils: TERM to the command's whole process group at
``t``, KILL 2 s later; code 124 with ``timed_out``); its output is cut at ``output_bytes``. ``evaluate`` starts a *fresh* container of
the image, writes the patch in, ``git apply``s it and runs the eval script (resolved = exit 0),
then removes it.
"""

from __future__ import annotations

import io
import posixpath
import tarfile
import threading
import time
import uuid
from dataclasses import dataclass, field

from openclaw_rl.agentic.sandbox import SandboxLimits
from openclaw_rl.envs.swe.containers import _PATCH_FILE, _PREPARE, SWE_LIMITS, ContainerError

__all__ = ["DockerContainerManager", "docker_available"]

_DIFF = "git add -A >/dev/null 2>&1; git -c core.pager=cat diff --cached --binary --no-color HEAD"


def docker_available() -> tuple[bool, str]:
    """``(True, "")`` when a Docker daemon answers (``docker.from_env().ping()``), else ``(False, why)``."""
    try:
        import docker

        docker.from_env(timeout=5).ping()
        return True, ""
    except Exception as exc:  # noqa: BLE001 - any failure means: no usable daemon
        return False, f"no Docker daemon ({type(exc).__name__}: {str(exc)[:120]})"


@dataclass
class _Live:
    container_id: str
    image: str
    cwd: str
    timeout: float
    env: dict
    handle: object  # docker.models.containers.Container
    created: float = field(default_factory=time.time)
    lock: threading.Lock = field(default_factory=threading.Lock)
    eval_lock: threading.Lock = field(default_factory=threading.Lock)


def _tar(files: dict[str, str]) -> bytes:
    """A tar archive (rooted at ``/``) holding ``files`` (absolute path -> text) and their folders."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        folders: set[str] = set()
        for path in files:
            parent = posixpath.dirname(path.lstrip("/"))
            while parent and parent not in folders:
                folders.add(parent)
                parent = posixpath.dirname(parent)
        for folder in sorted(folders):
            info = tarfile.TarInfo(folder)
            info.type, info.mode = tarfile.DIRTYPE, 0o755
            tar.addfile(info)
        for path, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(path.lstrip("/"))
            info.size, info.mode, info.mtime = len(data), 0o644, int(time.time())
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


class DockerContainerManager:
    """The containers of one process on a Docker daemon (module docstring).

    Args:
        max_containers: live containers at once (``capacity`` 429 beyond; an evaluation's fresh
            container takes no slot).
        limits: memory (``memory_mb``), processes (``max_processes``), file size and output cut of
            every container; the per-command timeout is the container's.
        client: a ``docker.DockerClient`` (default ``docker.from_env()``).

    Raises:
        ContainerError: 500 ``sandbox_error`` when no daemon answers.
    """

    def __init__(self, max_containers: int = 64, limits: SandboxLimits = SWE_LIMITS, client=None):
        try:
            import docker

            self._client = client or docker.from_env()
            self._client.ping()
        except Exception as exc:  # noqa: BLE001
            raise ContainerError(500, "sandbox_error", f"no Docker daemon: {str(exc)[:200]}") from None
        self.max_containers, self.limits = max_containers, limits
        self.image_roots = None  # images are Docker image names, not folders
        self._live: dict[str, _Live] = {}
        self._lock = threading.Lock()
        self._reserved = 0
        self.created = self.destroyed = self.evaluated = 0

    # -- helpers --------------------------------------------------------------------------------
    def _start(self, image: str, cwd: str, env: dict, files: dict[str, str] | None, counted: bool):
        """A running, prepared container of ``image`` (its id, the SDK handle)."""
        import docker.errors

        with self._lock:
            if counted and len(self._live) + self._reserved >= self.max_containers:
                raise ContainerError(429, "capacity", f"{len(self._live)}/{self.max_containers} containers live; "
                                     "destroy one or retry later")
            self._reserved += counted
        handle = None
        try:
            try:
                self._client.images.get(image)
            except docker.errors.ImageNotFound:
                raise ContainerError(400, "invalid_image", f"image {image!r} is not on the Docker daemon "
                                     "(pull or build it first)") from None
            lim = self.limits
            handle = self._client.containers.run(
                image, ["sleep", "infinity"], detach=True, working_dir=cwd, environment=dict(env),
                network_mode="none", mem_limit=f"{lim.memory_mb}m", memswap_limit=f"{lim.memory_mb}m",
                pids_limit=lim.max_processes, ulimits=[docker.types.Ulimit(
                    name="fsize", soft=lim.file_size_mb << 20, hard=lim.file_size_mb << 20)],
                labels={"openclaw-rl": "swe"}, init=True)
            if files:
                handle.put_archive("/", _tar(files))
            r = self._run(handle, _PREPARE, cwd, 30.0, {})
            if r["returncode"] != 0:
                raise ContainerError(500, "sandbox_error", f"preparing the container failed: {r['output'].strip()[-200:]}")
            return handle
        except ContainerError:
            self._remove(handle)
            raise
        except docker.errors.APIError as exc:
            self._remove(handle)
            status = 400 if exc.is_client_error() else 500
            raise ContainerError(status, "invalid_value" if status == 400 else "sandbox_error",
                                 f"Docker: {exc.explanation or exc}"[:300]) from None
        finally:
            with self._lock:
                self._reserved -= counted

    def _run(self, handle, command: str, cwd: str, timeout: float, env: dict) -> dict:
        """``bash -c command`` in ``handle`` under ``timeout``; the result dict of :meth:`exec`."""
        wall = max(0.1, float(timeout))
        t0 = time.monotonic()
        code, out = handle.exec_run(["timeout", "-k", "2", f"{wall:g}", "bash", "-c", command],
                                    workdir=cwd, environment=dict(env), demux=False)
        out = out or b""
        cut = len(out) > self.limits.output_bytes
        text = out[: self.limits.output_bytes].decode(errors="replace")
        # 124: TERM at the timeout; 137 past it: KILL 2 s later (a command that ignored TERM)
        timed_out = code == 124 or (code == 137 and time.monotonic() - t0 >= wall)
        return {"returncode": 124 if timed_out else code, "output": text, "timed_out": timed_out, "truncated": cut}

    @staticmethod
    def _remove(handle) -> None:
        if handle is not None:
            try:
                handle.remove(force=True)
            except Exception:  # noqa: BLE001 - already gone
                pass

    def get(self, container_id: str) -> _Live:
        """The live container ``container_id``. Raises ContainerError 404 ``container_not_found``."""
        with self._lock:
            c = self._live.get(container_id)
        if c is None:
            raise ContainerError(404, "container_not_found", f"container {container_id!r} not found (unknown or destroyed)")
        return c

    # -- API (as ContainerManager) --------------------------------------------------------------
    def create(self, image: str, cwd: str = "/workspace", timeout: float = 60.0,
               env: dict[str, str] | None = None, files: dict[str, str] | None = None) -> str:
        """A new container of the Docker image ``image`` (the repository at ``cwd``); returns its id.

        Raises:
            ContainerError: ``invalid_image`` / ``invalid_value`` 400, ``capacity`` 429,
            ``sandbox_error`` 500.
        """
        if not cwd.startswith("/") or timeout <= 0:
            raise ContainerError(400, "invalid_value", "cwd must be absolute and timeout > 0")
        handle = self._start(image, cwd, env or {}, files, counted=True)
        cid = f"ctr-{uuid.uuid4().hex[:16]}"
        with self._lock:
            self._live[cid] = _Live(cid, image, cwd, float(timeout), dict(env or {}), handle)
            self.created += 1
        return cid

    def exec(self, container_id: str, command: str, cwd: str | None = None, timeout: float | None = None,
             env: dict[str, str] | None = None) -> dict:
        """Run ``bash -c command``; ``{"returncode", "output", "timed_out", "truncated"}`` (124 on timeout).

        Raises:
            ContainerError: 404 unknown container.
        """
        c = self.get(container_id)
        with c.lock:
            return self._run(c.handle, command, cwd or c.cwd, c.timeout if timeout is None else timeout,
                             {**c.env, **(env or {})})

    def diff(self, container_id: str) -> str:
        """The container's changes against its base commit as a git patch (``git add -A``; ``git diff
        --cached --binary HEAD``). Raises ContainerError 404 unknown; 500 ``diff_failed``."""
        c = self.get(container_id)
        with c.lock:
            r = self._run(c.handle, _DIFF, c.cwd, 60.0, {})
        if r["returncode"] != 0 or r["truncated"]:
            raise ContainerError(500, "diff_failed", f"git diff failed ({r['returncode']}): {r['output'].strip()[-200:]}")
        return r["output"]

    def evaluate(self, container_id: str, patch: str, eval_script: str, timeout: float = 300.0) -> dict:
        """``patch`` on a *fresh* container of the image, then ``eval_script``: ``{"resolved",
        "applied", "returncode", "output"}`` (resolved: applied and exit 0).

        Raises:
            ContainerError: 404 unknown container; ``sandbox_error`` for the fresh container.
        """
        c = self.get(container_id)
        with c.eval_lock:
            handle = self._start(c.image, c.cwd, c.env, {_PATCH_FILE: patch or ""}, counted=False)
            try:
                applied, out = True, ""
                if (patch or "").strip():
                    r = self._run(handle, f"git apply --whitespace=nowarn {_PATCH_FILE}", c.cwd, 60.0, {})
                    applied, out = r["returncode"] == 0, r["output"]
                if not applied:
                    result = {"resolved": False, "applied": False, "returncode": None,
                              "output": f"patch does not apply: {out.strip()[-1000:]}"}
                else:
                    r = self._run(handle, f"rm -f {_PATCH_FILE}; {eval_script}", c.cwd, max(1.0, float(timeout)), c.env)
                    tail = r["output"][-4000:] + (f"\n[timed out after {timeout:g} s]" if r["timed_out"] else "")
                    result = {"resolved": r["returncode"] == 0, "applied": True, "returncode": r["returncode"],
                              "output": tail}
            finally:
                self._remove(handle)
        with self._lock:
            self.evaluated += 1
        return result

    def destroy(self, container_id: str) -> None:
        """Remove the container (killing what runs in it). Raises ContainerError 404."""
        with self._lock:
            c = self._live.pop(container_id, None)
        if c is None:
            raise ContainerError(404, "container_not_found", f"container {container_id!r} not found (unknown or destroyed)")
        self._remove(c.handle)
        with self._lock:
            self.destroyed += 1

    def destroy_all(self) -> int:
        """Destroy every live container (shutdown); returns how many."""
        with self._lock:
            ids = list(self._live)
        for cid in ids:
            try:
                self.destroy(cid)
            except ContainerError:
                pass
        return len(ids)

    def status(self) -> dict:
        """``{live, capacity, created, destroyed, evaluated, backend: "docker", containers: [...]}``."""
        now = time.time()
        with self._lock:
            items = [{"container_id": c.container_id, "image": c.image, "age_s": round(now - c.created, 1)}
                     for c in self._live.values()]
            return {"live": len(items), "capacity": self.max_containers, "created": self.created,
                    "destroyed": self.destroyed, "evaluated": self.evaluated, "backend": "docker",
                    "containers": items}
