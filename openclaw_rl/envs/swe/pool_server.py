"""The SWE pool server: leases over repository containers (upstream's swe-rl API), port 18090.

- ``GET /healthz``, ``GET /status`` (capacity, leases, totals: :meth:`LeasePool.status`);
- ``POST /allocate {image, instance_id, cwd?, timeout?, env?, files?, request_id?}`` ->
  ``{lease_id}``: a fresh container of ``image`` (a repository directory), on the exec servers
  ``--exec-server-urls`` / ``SWE_EXEC_SERVER_URLS`` name, else in this process; idempotent per
  ``request_id`` while the lease lives;
- ``POST /heartbeat {lease_id}``; ``POST /exec {lease_id, command, cwd?, timeout?}`` ->
  ``{returncode, output, timed_out, truncated}``; ``POST /diff {lease_id}`` -> ``{diff}``;
  ``POST /evaluate {lease_id, patch, eval_script, timeout?}`` -> ``{resolved, applied, returncode,
  output}``; ``POST /close {lease_id}``.

Semantics are :class:`openclaw_rl.agentic.lease_pool.LeasePool`'s (the generic pool server's): a
full pool is 429 ``pool_full`` with ``Retry-After``; an unknown, closed or expired lease 404
``lease_not_found``; a container call that fails 500 ``env_error`` (the lease stays closable);
leases idle for ``--lease-ttl`` seconds expire and their containers are destroyed; stopping the
server destroys every container.

CLI: ``python -m openclaw_rl.envs.swe.pool_server [--port $SWE_ENV_SERVER_PORT (18090)]
[--max-envs $SWE_MAX_CONCURRENT (8)] [--exec-server-urls URLS] [--lease-ttl 600] [--api-key KEY]``.
"""

from __future__ import annotations

import logging
import os
import sys
import uuid
from typing import Any

from fastapi import Depends, FastAPI
from pydantic import BaseModel, Field

from openclaw_rl.agentic.lease_pool import LeasePool, PoolError
from openclaw_rl.agentic.pool_server import OneLineParser, bearer_check, create_app as _generic_app
from openclaw_rl.agentic.listen import add_port_file_flag, check_listen, port_number, serve
from openclaw_rl.envs.swe.backends import BackendError, LocalHandle, create_on_exec_servers, exec_server_urls
from openclaw_rl.envs.swe.containers import ContainerError, ContainerManager

log = logging.getLogger(__name__)
DEFAULT_PORT = 18090


class AllocateRequest(BaseModel):
    """``/allocate`` body."""

    image: str = Field(min_length=1)
    instance_id: str = Field(min_length=1)
    cwd: str = "/workspace"
    timeout: float = Field(default=60.0, gt=0)
    env: dict[str, str] = Field(default_factory=dict)
    files: dict[str, str] = Field(default_factory=dict)
    request_id: str | None = None


class LeaseRequest(BaseModel):
    """``/heartbeat``, ``/diff``, ``/close`` body."""

    lease_id: str


class ExecRequest(BaseModel):
    """``/exec`` body."""

    lease_id: str
    command: str
    cwd: str | None = None
    timeout: float | None = Field(default=None, gt=0)


class EvaluateRequest(BaseModel):
    """``/evaluate`` body."""

    lease_id: str
    patch: str = ""
    eval_script: str = Field(min_length=1)
    timeout: float = Field(default=300.0, gt=0)


class ContainerFactory:
    """The pool's environment factory: ``(env_type, instance_id, spec) -> container handle``
    (on ``exec_urls`` when given, else in ``manager``)."""

    def __init__(self, exec_urls: list[str], manager: ContainerManager | None = None):
        self.exec_urls, self.manager = exec_urls, manager

    def __call__(self, _env_type: str, _instance_id: str, spec: dict) -> Any:
        """Make the container. Raises BackendError / ContainerError (the pool answers 500 env_error)."""
        args = {k: spec[k] for k in ("image", "cwd", "timeout", "env", "files")}
        if self.exec_urls:
            return create_on_exec_servers(self.exec_urls, args, float(args["timeout"]))
        if self.manager is None:
            raise BackendError("no exec servers and no local containers")
        try:
            return LocalHandle(self.manager, self.manager.create(**args))
        except ContainerError as exc:  # a bad image is the caller's fault: a 4xx
            if exc.status < 500:
                raise PoolError(exc.status, exc.code, exc.message) from None
            raise


def create_app(pool: LeasePool, api_key: str | None = None) -> FastAPI:
    """The SWE pool server's app (module docstring): the generic pool server's lifespan, error
    handlers, ``/healthz``, ``/status``, ``/heartbeat`` and ``/close``, plus the SWE routes."""
    app = _generic_app(pool, api_key)
    # the generic /allocate, /reset, /exec_tool and /evaluate take other bodies: drop them
    app.router.routes = [r for r in app.router.routes
                         if getattr(r, "path", None) not in ("/allocate", "/reset", "/exec_tool", "/evaluate")]
    app.title = "OpenClaw-RL SWE pool"
    auth = [Depends(bearer_check(api_key))]

    @app.post("/allocate", dependencies=auth)
    async def allocate(body: AllocateRequest):
        lease_id = await pool.allocate(body.instance_id, body.request_id or uuid.uuid4().hex, "swe_container",
                                       body.model_dump())
        return {"lease_id": lease_id}

    @app.post("/exec", dependencies=auth)
    async def exec_(body: ExecRequest):
        return await pool.call(body.lease_id, "exec", body.command, body.cwd, body.timeout)

    @app.post("/diff", dependencies=auth)
    async def diff(body: LeaseRequest):
        return {"diff": await pool.call(body.lease_id, "diff")}

    @app.post("/evaluate", dependencies=auth)
    async def evaluate(body: EvaluateRequest):
        return await pool.call(body.lease_id, "evaluate", body.patch, body.eval_script, body.timeout)

    return app


def main(argv: list[str] | None = None) -> int:
    """Parse flags and serve until SIGTERM/SIGINT; returns the exit code."""
    from openclaw_rl.envs.swe.exec_server import add_backend_flag, make_manager

    p = OneLineParser(prog="python -m openclaw_rl.envs.swe.pool_server",
                      description="Lease SWE repository containers (allocate/exec/diff/evaluate/close).")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=port_number, default=int(os.environ.get("SWE_ENV_SERVER_PORT") or DEFAULT_PORT),
                   help=f"port (default $SWE_ENV_SERVER_PORT or {DEFAULT_PORT})")
    p.add_argument("--max-envs", type=int, default=int(os.environ.get("SWE_MAX_CONCURRENT") or 8),
                   help="leases at once (default $SWE_MAX_CONCURRENT or 8)")
    p.add_argument("--exec-server-urls", default=None, help="comma-separated exec servers (default $SWE_EXEC_SERVER_URLS; "
                   "none: containers in this process)")
    p.add_argument("--image-root", action="append", default=None, help="local containers: allowed image directories")
    add_backend_flag(p)
    p.add_argument("--lease-ttl", type=float, default=600.0, help="idle seconds before a lease expires (default 600)")
    p.add_argument("--api-key", default=os.environ.get("POOL_API_KEY") or None)
    p.add_argument("--insecure-no-auth", action="store_true")
    p.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    add_port_file_flag(p)
    args = p.parse_args(argv)
    if args.max_envs < 1 or args.lease_ttl <= 0:
        p.error("--max-envs must be >= 1 and --lease-ttl > 0")
    urls = exec_server_urls({"SWE_EXEC_SERVER_URLS": args.exec_server_urls}) if args.exec_server_urls is not None \
        else exec_server_urls()
    manager = None if urls else make_manager(p, args.backend, args.image_root, args.max_envs)
    sock = check_listen(p, args)
    factory = ContainerFactory(urls, manager)
    pool = LeasePool(args.max_envs, args.lease_ttl, "swe_container", factory=factory)
    log.info("SWE pool on http://%s:%d: %d leases, containers %s", args.host, args.port, args.max_envs,
             ", ".join(urls) if urls else "in this process")
    serve(create_app(pool, args.api_key), sock, args.log_level)
    return 0


if __name__ == "__main__":
    sys.exit(main())
