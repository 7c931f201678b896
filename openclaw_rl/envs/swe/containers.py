"""SWE "containers": a bubblewrap sandbox holding a fresh copy of a task repository.

A container is made from an *image*, here a local directory (a git repository at its base
commit, as :mod:`.convert` writes them; SWE-bench names a Docker image in the same place), copied
into a fresh copy-on-write sandbox (:class:`openclaw_rl.agentic.sandbox.Sandbox`: no network, own
pid/mount namespaces, rlimits, a pids cgroup, a wall-clock timeout that kills the whole process
tree) at ``cwd``. ``python`` is made an alias of ``python3`` inside (the images' scripts call
both). :class:`ContainerManager` keeps the live containers of one process, thread-safe; the exec
server (:mod:`.exec_server`) serves it over HTTP. :class:`ContainerBook` is what it shares with
the Docker backend (:mod:`.docker_containers`): the bookkeeping and the methods that do not depend
on where a container runs.

Errors are :class:`ContainerError` with an HTTP status and a code: ``container_not_found`` (404),
``invalid_image`` (400, not a directory or outside the allowed image roots), ``invalid_value``
(400, a ``cwd`` or planted file path the sandbox cannot hold), ``capacity`` (429),
``sandbox_error`` (500).
"""

from __future__ import annotations

import shlex
import threading
import time
import uuid
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from openclaw_rl.agentic.sandbox import Sandbox, SandboxError, SandboxLimits

__all__ = ["SWE_LIMITS", "Container", "ContainerBook", "ContainerError", "ContainerManager"]

SWE_LIMITS = SandboxLimits(cpu_seconds=120, memory_mb=2048, max_processes=256, wall_seconds=60.0,
                           output_bytes=32768, file_size_mb=128)
_PREPARE = ("[ -e /usr/local/bin/python ] || ln -s /usr/bin/python3 /usr/local/bin/python; "
            "git config --global --add safe.directory '*'; git config --global user.email agent@example.invalid; "
            "git config --global user.name agent")
_PATCH_FILE = "/tmp/oc_swe_patch.diff"
_DIFF = "git add -A >/dev/null 2>&1; git -c core.pager=cat diff --cached --binary --no-color HEAD"


class ContainerError(RuntimeError):
    """A container request that cannot be served: ``status`` (HTTP), ``code``, one-line message."""

    def __init__(self, status: int, code: str, message: str):
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


@dataclass
class Container:
    """One live container: its backend handle (a :class:`Sandbox`, or a Docker container), image,
    working directory and defaults."""

    container_id: str
    image: str
    cwd: str
    timeout: float
    env: dict
    box: object
    created: float = field(default_factory=time.time)
    lock: threading.Lock = field(default_factory=threading.Lock)
    eval_lock: threading.Lock = field(default_factory=threading.Lock)


class ContainerBook:
    """What both backends share: the live containers of one process (thread-safe), the capacity
    slots, the counters, and the API methods that are the same on both (``get``, ``exec``, ``diff``,
    ``evaluate``, ``destroy``, ``destroy_all``, ``status``). A backend implements ``_fresh(image, cwd, env,
    files, counted)`` (a started, prepared handle), ``_run(handle, command, cwd, timeout, env)``
    (``{returncode, output, timed_out, truncated}``) and ``_close(handle)``.

    Args:
        max_containers: live containers at once (``capacity`` 429 beyond).
    """

    backend = "?"

    def __init__(self, max_containers: int):
        self.max_containers = max_containers
        self._live: dict[str, Container] = {}
        self._lock = threading.Lock()
        self._reserved = 0
        self.created = self.destroyed = self.evaluated = 0

    @contextmanager
    def _slot(self, counted: bool):
        """Hold one capacity slot while a container starts (``counted`` False: an evaluation's
        scratch copy, at most one per live container, takes none). Raises ContainerError 429."""
        with self._lock:
            if counted and len(self._live) + self._reserved >= self.max_containers:
                raise ContainerError(429, "capacity", f"{len(self._live)}/{self.max_containers} containers live; "
                                     "destroy one or retry later")
            self._reserved += counted
        try:
            yield
        finally:
            with self._lock:
                self._reserved -= counted

    def _add(self, image: str, cwd: str, timeout: float, env: dict | None, box) -> str:
        cid = f"ctr-{uuid.uuid4().hex[:16]}"
        with self._lock:
            self._live[cid] = Container(cid, image, cwd, float(timeout), dict(env or {}), box)
            self.created += 1
        return cid

    def get(self, container_id: str) -> Container:
        """The live container ``container_id``. Raises ContainerError 404 ``container_not_found``."""
        with self._lock:
            c = self._live.get(container_id)
        if c is None:
            raise ContainerError(404, "container_not_found", f"container {container_id!r} not found (unknown or destroyed)")
        return c

    def exec(self, container_id: str, command: str, cwd: str | None = None, timeout: float | None = None,
             env: dict[str, str] | None = None) -> dict:
        """Run ``bash -c command`` in the container.

        Returns:
            ``{"returncode", "output", "timed_out", "truncated"}``; a command past its timeout is
            killed with its whole process tree and returns code 124 with the output so far.

        Raises:
            ContainerError: 404 unknown container.
        """
        c = self.get(container_id)
        wall = c.timeout if timeout is None else float(timeout)
        with c.lock:
            return self._run(c.box, command, cwd or c.cwd, max(0.1, wall), {**c.env, **(env or {})})

    def diff(self, container_id: str) -> str:
        """The container's changes against its base commit as a git patch (new files included,
        ignored files not): ``git add -A && git diff --cached --binary HEAD``.

        Raises:
            ContainerError: 404 unknown container; 500 when git fails.
        """
        c = self.get(container_id)
        with c.lock:
            r = self._run(c.box, _DIFF, c.cwd, 60.0, {})
        if r["returncode"] != 0 or r["truncated"]:
            raise ContainerError(500, "diff_failed", f"git diff failed ({r['returncode']}): {r['output'].strip()[-200:]}")
        return r["output"]

    def evaluate(self, container_id: str, patch: str, eval_script: str, timeout: float = 300.0) -> dict:
        """Apply ``patch`` to a *fresh* copy of the container's image and run ``eval_script``.

        Returns:
            ``{"resolved", "applied", "returncode", "output"}``: resolved when the patch applied
            and the script exited 0; a patch that does not apply is unresolved with git's reason.
            One evaluation per container at a time; its scratch copy takes no capacity slot.

        Raises:
            ContainerError: 404 unknown container; ``capacity`` / ``sandbox_error`` for the copy.
        """
        c = self.get(container_id)
        with c.eval_lock:
            box = self._fresh(c.image, c.cwd, c.env, {_PATCH_FILE: patch or ""}, counted=False)
            try:
                applied, out = True, ""
                if (patch or "").strip():
                    r = self._run(box, f"git apply --whitespace=nowarn {_PATCH_FILE}", c.cwd, 60.0, {})
                    applied, out = r["returncode"] == 0, r["output"]
                if not applied:
                    result = {"resolved": False, "applied": False, "returncode": None,
                              "output": f"patch does not apply: {out.strip()[-1000:]}"}
                else:
                    r = self._run(box, f"rm -f {_PATCH_FILE}; {eval_script}", c.cwd, max(1.0, float(timeout)), c.env)
                    tail = r["output"][-4000:] + (f"\n[timed out after {timeout:g} s]" if r["timed_out"] else "")
                    result = {"resolved": r["returncode"] == 0, "applied": True, "returncode": r["returncode"],
                              "output": tail}
            finally:
                self._close(box)
        with self._lock:
            self.evaluated += 1
        return result

    def destroy(self, container_id: str) -> None:
        """Kill everything of the container and remove it. Raises ContainerError 404."""
        with self._lock:
            c = self._live.pop(container_id, None)
        if c is None:
            raise ContainerError(404, "container_not_found", f"container {container_id!r} not found (unknown or destroyed)")
        self._close(c.box)
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
        """``{live, capacity, created, destroyed, evaluated, backend, containers: [{id, image, age_s}]}``."""
        now = time.time()
        with self._lock:
            items = [{"container_id": c.container_id, "image": c.image, "age_s": round(now - c.created, 1)}
                     for c in self._live.values()]
            return {"live": len(items), "capacity": self.max_containers, "created": self.created,
                    "destroyed": self.destroyed, "evaluated": self.evaluated, "backend": self.backend,
                    "containers": items}


class ContainerManager(ContainerBook):
    """The bubblewrap backend: a container is a sandbox over a copy of a repository folder.

    Args:
        image_roots: directories an image must lie under (None: any directory).
        max_containers: live containers at once (``capacity`` error beyond).
        limits: sandbox limits of every container (the per-command timeout is the container's).
    """

    backend = "bwrap"

    def __init__(self, image_roots: list[str | Path] | None = None, max_containers: int = 64,
                 limits: SandboxLimits = SWE_LIMITS):
        super().__init__(max_containers)
        self.image_roots = [Path(r).resolve() for r in image_roots] if image_roots else None
        self.limits = limits

    def _image_dir(self, image: str) -> Path:
        path = Path(image).expanduser()
        if not path.is_absolute() or not path.is_dir():
            raise ContainerError(400, "invalid_image", f"image {image!r} is not an absolute path of a repository directory")
        path = path.resolve()
        if self.image_roots is not None and not any(path == r or r in path.parents for r in self.image_roots):
            raise ContainerError(400, "invalid_image", f"image {image!r} is outside the allowed image roots "
                                 f"({', '.join(map(str, self.image_roots))})")
        return path

    def _fresh(self, image: str, cwd: str, env: dict, files: dict[str, str] | None, counted: bool) -> Sandbox:
        """A prepared sandbox with a copy of the folder ``image`` at ``cwd``."""
        with self._slot(counted):
            try:
                box = Sandbox(copy_dirs={image: cwd}, files=files, limits=self.limits, workdir=cwd)
                r = box.run(_PREPARE, timeout=30)
                if r.returncode != 0:
                    box.close()
                    raise ContainerError(500, "sandbox_error", f"preparing the container failed: {r.output.strip()[-200:]}")
                return box
            except SandboxError as exc:
                raise ContainerError(500, "sandbox_error", str(exc)) from None
            except ValueError as exc:  # a cwd or file path the sandbox cannot hold (/, /proc/...)
                raise ContainerError(400, "invalid_value", str(exc)) from None

    @staticmethod
    def _run(box: Sandbox, command: str, cwd: str, timeout: float, env: dict) -> dict:
        r = box.run(command, cwd=cwd, timeout=timeout, env=env)
        return {"returncode": r.returncode, "output": r.output, "timed_out": r.timed_out, "truncated": r.truncated}

    @staticmethod
    def _close(box: Sandbox) -> None:
        box.close()

    def create(self, image: str, cwd: str = "/workspace", timeout: float = 60.0,
               env: dict[str, str] | None = None, files: dict[str, str] | None = None) -> str:
        """A new container with a fresh copy of ``image`` at ``cwd``.

        Args:
            image: absolute path of the repository directory.
            cwd: where the copy sits in the container (the commands' default working directory).
            timeout: default wall-clock seconds of one command.
            env: environment variables of every command (e.g. planted canaries).
            files: absolute container path -> content, written before start (e.g. a canary file).

        Returns:
            The container id.

        Raises:
            ContainerError: ``invalid_image`` 400, ``capacity`` 429, ``sandbox_error`` 500.
        """
        if not cwd.startswith("/") or timeout <= 0:
            raise ContainerError(400, "invalid_value", "cwd must be absolute and timeout > 0")
        image_dir = str(self._image_dir(image))
        return self._add(image_dir, cwd, timeout, env, self._fresh(image_dir, cwd, env or {}, files, counted=True))


def quote(text: str) -> str:
    """Shell-quote ``text`` (re-exported for callers building commands)."""
    return shlex.quote(text)
