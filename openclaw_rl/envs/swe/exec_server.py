"""The SWE exec server: sandboxed repository containers over HTTP (upstream's API), one per machine.

Every body is JSON; errors are OpenAI-style ``{"error": {"code", "message", "type", "param"}}``:

- ``GET /healthz`` -> ``{"status": "ok"}`` (no key); ``GET /status`` -> live containers, capacity,
  totals (:meth:`~openclaw_rl.envs.swe.containers.ContainerManager.status`).
- ``POST /container/create {image, cwd?, timeout?, env?, files?}`` -> ``{container_id}``: a fresh
  sandboxed copy of the repository directory ``image`` at ``cwd`` (default ``/workspace``);
  ``timeout`` is the default seconds per command.
- ``POST /container/exec {container_id, command, cwd?, timeout?, env?}`` -> ``{returncode, output,
  timed_out, truncated}`` (a command past its timeout is killed with its process tree: code 124).
- ``POST /container/diff {container_id}`` -> ``{diff}`` (git patch against the base commit).
- ``POST /container/evaluate {container_id, patch, eval_script, timeout?}`` -> ``{resolved,
  applied, returncode, output}``: a *fresh* copy of the image, the patch applied, the eval script
  run; resolved = the patch applied and the script exited 0.
- ``POST /container/destroy {container_id}`` -> ``{ok: true}``.

An unknown or destroyed container is 404 ``container_not_found``; an image that is not a
directory under ``--image-root`` 400 ``invalid_image``; a full server 429 ``capacity``; missing
fields 422; a body that is not JSON 400. Stopping the server destroys every container.

CLI: ``python -m openclaw_rl.envs.swe.exec_server --port 18091 [--max-containers 64]
[--image-root DIR ...] [--host 127.0.0.1] [--api-key KEY] [--backend bwrap|docker]``. With
``--backend docker`` (or ``SWE_CONTAINER_BACKEND=docker``) an image is a Docker image on the daemon
(:mod:`.docker_containers`, e.g. a SWE-bench instance image) instead of a repository folder.
"""

from __future__ import annotations

import logging
import os
import sys
from contextlib import asynccontextmanager

from fastapi import Depends, FastAPI, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field

from openclaw_rl.agentic.listen import add_port_file_flag, check_listen, port_number, serve
from openclaw_rl.agentic.pool_server import OneLineParser, bearer_check, install_pool_error_handlers
from openclaw_rl.envs.swe.containers import ContainerError, ContainerManager
from openclaw_rl.envs.swe.docker_containers import DockerContainerManager
from openclaw_rl.models import cache_root
from openclaw_rl.server.errors import error_body

log = logging.getLogger(__name__)
DEFAULT_PORT = 18091


class CreateRequest(BaseModel):
    """``/container/create`` body."""

    image: str = Field(min_length=1)
    cwd: str = "/workspace"
    timeout: float = Field(default=60.0, gt=0)
    env: dict[str, str] = Field(default_factory=dict)
    files: dict[str, str] = Field(default_factory=dict)


class ContainerRequest(BaseModel):
    """``/container/diff`` and ``/container/destroy`` body."""

    container_id: str


class ExecRequest(BaseModel):
    """``/container/exec`` body."""

    container_id: str
    command: str
    cwd: str | None = None
    timeout: float | None = Field(default=None, gt=0)
    env: dict[str, str] = Field(default_factory=dict)


class EvaluateRequest(BaseModel):
    """``/container/evaluate`` body."""

    container_id: str
    patch: str = ""
    eval_script: str = Field(min_length=1)
    timeout: float = Field(default=300.0, gt=0)


def container_error_response(exc: ContainerError) -> JSONResponse:
    """The JSON response of a :class:`ContainerError`."""
    type_ = {429: "rate_limit_error"}.get(exc.status, "server_error" if exc.status >= 500 else "invalid_request_error")
    headers = {"Retry-After": "1"} if exc.status == 429 else None
    return JSONResponse(error_body(exc.message, type_, code=exc.code), status_code=exc.status, headers=headers)


def create_app(manager: ContainerManager | DockerContainerManager, api_key: str | None = None) -> FastAPI:
    """The exec server's FastAPI app around a :class:`ContainerManager` (module docstring).

    Handlers are plain functions, so FastAPI runs each in its worker threads: a long command
    blocks only its own request.
    """

    @asynccontextmanager
    async def lifespan(_app):
        try:
            yield
        finally:
            log.info("exec server stopped; destroyed %d container(s)", manager.destroy_all())

    app = FastAPI(title="OpenClaw-RL SWE exec server", lifespan=lifespan)
    install_pool_error_handlers(app)

    async def on_container_error(_: Request, exc: ContainerError) -> JSONResponse:
        return container_error_response(exc)

    app.add_exception_handler(ContainerError, on_container_error)
    auth = [Depends(bearer_check(api_key))]

    @app.get("/healthz")
    def healthz():
        return {"status": "ok"}

    @app.get("/status", dependencies=auth)
    def status():
        return manager.status()

    @app.post("/container/create", dependencies=auth)
    def create(body: CreateRequest):
        return {"container_id": manager.create(body.image, body.cwd, body.timeout, body.env, body.files)}

    @app.post("/container/exec", dependencies=auth)
    def exec_(body: ExecRequest):
        return manager.exec(body.container_id, body.command, body.cwd, body.timeout, body.env)

    @app.post("/container/diff", dependencies=auth)
    def diff(body: ContainerRequest):
        return {"diff": manager.diff(body.container_id)}

    @app.post("/container/evaluate", dependencies=auth)
    def evaluate(body: EvaluateRequest):
        return manager.evaluate(body.container_id, body.patch, body.eval_script, body.timeout)

    @app.post("/container/destroy", dependencies=auth)
    def destroy(body: ContainerRequest):
        manager.destroy(body.container_id)
        return {"ok": True}

    return app


def default_image_roots() -> list[str]:
    """The image roots when ``--image-root`` is not given: the SWE data cache and ``SWE_BENCH_PATH``'s folder."""
    roots = [str(cache_root() / "swe")]
    bench = os.environ.get("SWE_BENCH_PATH")
    if bench:
        roots.append(os.path.dirname(os.path.abspath(bench)) if os.path.isfile(bench) else os.path.abspath(bench))
    return roots


def add_backend_flag(parser) -> None:
    """``--backend bwrap|docker`` (default ``$SWE_CONTAINER_BACKEND`` or ``bwrap``)."""
    parser.add_argument("--backend", choices=["bwrap", "docker"], default=os.environ.get("SWE_CONTAINER_BACKEND") or "bwrap",
                        help="bwrap: an image is a repository folder, copied into a bubblewrap sandbox (default); "
                             "docker: an image is a Docker image on the daemon DOCKER_HOST names "
                             "(default $SWE_CONTAINER_BACKEND or bwrap)")


def make_manager(parser, backend: str, image_roots: list[str] | None, max_containers: int):
    """The container manager of ``--backend``; a missing daemon or a misplaced flag is
    ``parser.error`` (one line, exit 2)."""
    if backend != "docker":
        return ContainerManager(image_roots or default_image_roots(), max_containers)
    if image_roots:
        parser.error("--image-root is for --backend bwrap (a Docker image is a name, not a folder)")
    try:
        return DockerContainerManager(max_containers)
    except ContainerError as exc:
        parser.error(f"--backend docker: {exc.message}")


def main(argv: list[str] | None = None) -> int:
    """Parse flags and serve until SIGTERM/SIGINT; returns the exit code."""
    p = OneLineParser(prog="python -m openclaw_rl.envs.swe.exec_server",
                      description="Serve sandboxed repository containers (upstream's /container/* API).")
    p.add_argument("--host", default="127.0.0.1", help="bind address (default 127.0.0.1)")
    p.add_argument("--port", type=port_number, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT})")
    p.add_argument("--max-containers", type=int, default=64, help="live containers at once (default 64)")
    add_backend_flag(p)
    p.add_argument("--image-root", action="append", default=None,
                   help="directory images must lie under (repeatable; default the SWE data cache and SWE_BENCH_PATH)")
    p.add_argument("--api-key", default=os.environ.get("POOL_API_KEY") or None, help="require 'Authorization: Bearer KEY'")
    p.add_argument("--insecure-no-auth", action="store_true", help="allow a non-loopback --host without --api-key")
    p.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    add_port_file_flag(p)
    args = p.parse_args(argv)
    if args.max_containers < 1:
        p.error("--max-containers must be >= 1")
    manager = make_manager(p, args.backend, args.image_root, args.max_containers)
    sock = check_listen(p, args)
    log.info("SWE exec server on http://%s:%d (%s backend, images %s)", args.host, args.port, args.backend,
             "on the Docker daemon" if args.backend == "docker" else f"under {manager.image_roots}")
    serve(create_app(manager, args.api_key), sock, args.log_level)
    return 0


if __name__ == "__main__":
    sys.exit(main())
