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
import time

from openclaw_rl.agentic.sandbox import SandboxLimits
from openclaw_rl.envs.swe.containers import _PREPARE, SWE_LIMITS, ContainerBook, ContainerError

__all__ = ["DockerContainerManager", "docker_available"]


def docker_available() -> tuple[bool, str]:
    """``(True, "")`` when a Docker daemon answers (``docker.from_env().ping()``), else ``(False, why)``."""
    try:
        import docker

        docker.from_env(timeout=5).ping()
        return True, ""
    except Exception as exc:  # noqa: BLE001 - any failure means: no usable daemon
        return False, f"no Docker daemon ({type(exc).__name__}: {str(exc)[:120]})"


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


class DockerContainerManager(ContainerBook):
    """The Docker backend: a container is a Docker container of a Docker image (module docstring);
    ``get``, ``exec``, ``diff``, ``evaluate``, ``destroy``, ``destroy_all`` and ``status`` are
    :class:`~openclaw_rl.envs.swe.containers.ContainerBook`'s.

    Args:
        max_containers: live containers at once (``capacity`` 429 beyond; an evaluation's fresh
            container takes no slot).
        limits: memory (``memory_mb``), processes (``max_processes``), file size and output cut of
            every container; the per-command timeout is the container's.
        client: a ``docker.DockerClient`` (default ``docker.from_env()``).

    Raises:
        ContainerError: 500 ``sandbox_error`` when no daemon answers.
    """

    backend = "docker"

    def __init__(self, max_containers: int = 64, limits: SandboxLimits = SWE_LIMITS, client=None):
        super().__init__(max_containers)
        try:
            import docker

            self._client = client or docker.from_env()
            self._client.ping()
        except Exception as exc:  # noqa: BLE001
            raise ContainerError(500, "sandbox_error", f"no Docker daemon: {str(exc)[:200]}") from None
        self.limits = limits
        self.image_roots = None  # images are Docker image names, not folders

    def _fresh(self, image: str, cwd: str, env: dict, files: dict[str, str] | None, counted: bool):
        """A running, prepared container of ``image`` (the SDK's handle)."""
        import docker.errors
        import docker.types

        with self._slot(counted):
            handle = None
            try:
                try:
                    self._client.images.get(image)
                except docker.errors.ImageNotFound:
                    raise ContainerError(400, "invalid_image", f"image {image!r} is not on the Docker daemon "
                                         "(pull or build it first)") from None
                lim, fsize = self.limits, self.limits.file_size_mb << 20
                handle = self._client.containers.run(
                    image, ["sleep", "infinity"], detach=True, working_dir=cwd, environment=dict(env),
                    network_mode="none", mem_limit=f"{lim.memory_mb}m", memswap_limit=f"{lim.memory_mb}m",
                    pids_limit=lim.max_processes, ulimits=[docker.types.Ulimit(name="fsize", soft=fsize, hard=fsize)],
                    labels={"openclaw-rl": "swe"}, init=True)
                if files:
                    handle.put_archive("/", _tar(files))
                r = self._run(handle, _PREPARE, cwd, 30.0, {})
                if r["returncode"] != 0:
                    raise ContainerError(500, "sandbox_error", f"preparing the container failed: {r['output'].strip()[-200:]}")
                return handle
            except ContainerError:
                self._close(handle)
                raise
            except docker.errors.APIError as exc:
                self._close(handle)
                status = 400 if exc.is_client_error() else 500
                raise ContainerError(status, "invalid_value" if status == 400 else "sandbox_error",
                                     f"Docker: {exc.explanation or exc}"[:300]) from None

    def _run(self, handle, command: str, cwd: str, timeout: float, env: dict) -> dict:
        """``bash -c command`` in ``handle`` under ``timeout``; ``{returncode, output, timed_out, truncated}``."""
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
    def _close(handle) -> None:
        if handle is not None:
            try:
                handle.remove(force=True)
            except Exception:  # noqa: BLE001 - already gone
                pass

    def create(self, image: str, cwd: str = "/workspace", timeout: float = 60.0,
               env: dict[str, str] | None = None, files: dict[str, str] | None = None) -> str:
        """A new container of the Docker image ``image`` (the repository at ``cwd``); returns its id.

        Raises:
            ContainerError: ``invalid_image`` / ``invalid_value`` 400, ``capacity`` 429,
            ``sandbox_error`` 500.
        """
        if not cwd.startswith("/") or timeout <= 0:
            raise ContainerError(400, "invalid_value", "cwd must be absolute and timeout > 0")
        return self._add(image, cwd, timeout, env, self._fresh(image, cwd, env or {}, files, counted=True))
