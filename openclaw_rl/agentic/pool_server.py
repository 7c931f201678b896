"""The environment pool server: environments behind HTTP so they can live on other machines.

Upstream's API (docs/track2.md, "Environment pool servers"), every body JSON:

- ``GET /healthz`` -> ``{"status": "ok"}`` (no key needed); ``GET /status`` -> capacity, leases in
  use, per-env-type counts, totals allocated / closed / expired.
- ``POST /allocate {task_key, request_id, env_type?, task?}`` -> ``{lease_id}``; idempotent per
  ``request_id`` while the lease lives.
- ``POST /heartbeat {lease_id}`` -> ``{ok: true}``; ``POST /reset {lease_id}`` ->
  ``{observation, tools}``; ``POST /exec_tool {lease_id, tool_call}`` -> ``{observation}``;
  ``POST /evaluate {lease_id, final_response?}`` -> ``{score}``; ``POST /close {lease_id}`` -> ``{ok: true}``.

Errors are ``{"error": {"code", "message", "type", "param"}}``: a full pool is 429 ``pool_full``
with ``Retry-After``; an unknown, closed or expired lease 404 ``lease_not_found``; a body that is
not JSON 400 ``invalid_json``; missing or mistyped fields 422 ``invalid_value``; an environment
that raises 500 ``env_error`` (its lease stays live and closable); a missing or wrong key 401;
an allocation while the server stops 503 ``shutting_down``.
Environment methods run in worker threads, one lease's calls one at a time; a lease idle for
``--lease-ttl`` seconds expires and its environment is closed; stopping the server (SIGTERM,
Ctrl-C) closes every live environment.

CLI: ``python -m openclaw_rl.agentic.pool_server --port 18080 --max-envs 8 [--env-type terminal]
[--env NAME=SPEC ...] [--lease-ttl 600] [--host 127.0.0.1] [--api-key KEY]``.
"""

from __future__ import annotations

import argparse
import asyncio
import hmac
import logging
import os
import sys
from contextlib import asynccontextmanager
from typing import Any

from fastapi import Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field
from starlette.exceptions import HTTPException as StarletteHTTPException

from openclaw_rl.agentic.environment import evaluate_episode
from openclaw_rl.agentic.lease_pool import LeasePool, PoolError
from openclaw_rl.agentic.listen import add_port_file_flag, check_listen, port_number, serve
from openclaw_rl.server.errors import UnexpectedErrorMiddleware, error_body, validation_message

log = logging.getLogger(__name__)

DEFAULT_PORT = 18080


class AllocateRequest(BaseModel):
    """``POST /allocate`` body."""

    task_key: str
    request_id: str = Field(min_length=1)
    env_type: str | None = None
    task: dict[str, Any] = Field(default_factory=dict)


class LeaseRequest(BaseModel):
    """Body of ``/heartbeat``, ``/reset``, ``/evaluate``, ``/close``."""

    lease_id: str


class EvaluateRequest(BaseModel):
    """``POST /evaluate`` body: the lease and, optionally, the agent's final answer (given to an
    environment with ``submit`` before it scores; see :func:`~openclaw_rl.agentic.environment.evaluate_episode`)."""

    lease_id: str
    final_response: str | None = None


class ExecToolRequest(BaseModel):
    """``POST /exec_tool`` body: ``tool_call = {"name": str, "arguments": dict | JSON str}``
    (its content is the environment's to judge: a malformed call gets an observation)."""

    lease_id: str
    tool_call: dict[str, Any]


def pool_error_response(exc: PoolError) -> JSONResponse:
    """The JSON response of a :class:`PoolError` (with ``Retry-After`` on 429)."""
    type_ = {429: "rate_limit_error", 401: "authentication_error"}.get(
        exc.status, "server_error" if exc.status >= 500 else "invalid_request_error")
    headers = {"Retry-After": str(max(1, round(exc.retry_after)))} if exc.retry_after is not None else None
    return JSONResponse(error_body(exc.message, type_, code=exc.code), status_code=exc.status, headers=headers)


def install_pool_error_handlers(app: FastAPI) -> None:
    """Register handlers so every error is OpenAI-style JSON: PoolError, 400 invalid JSON,
    422 invalid fields, Starlette HTTP errors (404 unknown route, 405)."""

    async def on_pool_error(_: Request, exc: PoolError) -> JSONResponse:
        return pool_error_response(exc)

    async def on_validation(_: Request, exc: RequestValidationError) -> JSONResponse:
        errors = exc.errors()
        if errors and errors[0].get("type") == "json_invalid":
            return JSONResponse(error_body(f"request body is not valid JSON: {errors[0].get('msg')}",
                                           code="invalid_json"), status_code=400)
        msg, param = validation_message(errors)
        return JSONResponse(error_body(msg, param=param, code="invalid_value"), status_code=422)

    async def on_http(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        type_ = "invalid_request_error" if exc.status_code < 500 else "server_error"
        return JSONResponse(error_body(str(exc.detail), type_), status_code=exc.status_code,
                            headers=getattr(exc, "headers", None))

    app.add_exception_handler(PoolError, on_pool_error)
    app.add_exception_handler(RequestValidationError, on_validation)
    app.add_exception_handler(StarletteHTTPException, on_http)

    app.add_middleware(UnexpectedErrorMiddleware, log=log)


def bearer_check(api_key: str | None):
    """A FastAPI dependency requiring ``Authorization: Bearer <api_key>`` (no-op without a key).

    Raises:
        PoolError: 401 ``invalid_api_key``.
    """

    async def check(request: Request) -> None:
        if not api_key:
            return
        auth = request.headers.get("authorization", "")
        token = auth[7:].strip() if auth.lower().startswith("bearer ") else ""
        if not token or not hmac.compare_digest(token.encode(), api_key.encode()):
            raise PoolError(401, "invalid_api_key", "invalid or missing API key (send 'Authorization: Bearer <key>')")

    return check


def create_app(pool: LeasePool, api_key: str | None = None) -> FastAPI:
    """The pool server's FastAPI app around a :class:`LeasePool`.

    Args:
        pool: the leases (its sweeper runs while the app runs; shutdown closes every lease).
        api_key: when set, every route but ``/healthz`` needs ``Authorization: Bearer <api_key>``.
    """

    @asynccontextmanager
    async def lifespan(_app):
        sweeper = asyncio.create_task(pool.sweep_forever())
        try:
            yield
        finally:
            sweeper.cancel()
            closed = await pool.close_all()
            log.info("pool server stopped; closed %d live environment(s)", closed)

    app = FastAPI(title="OpenClaw-RL environment pool", lifespan=lifespan)
    install_pool_error_handlers(app)
    auth = [Depends(bearer_check(api_key))]

    @app.get("/healthz")
    async def healthz():
        return {"status": "ok"}

    @app.get("/status", dependencies=auth)
    async def status():
        return pool.status()

    @app.post("/allocate", dependencies=auth)
    async def allocate(body: AllocateRequest):
        lease_id = await pool.allocate(body.task_key, body.request_id, body.env_type, body.task)
        return {"lease_id": lease_id}

    @app.post("/heartbeat", dependencies=auth)
    async def heartbeat(body: LeaseRequest):
        pool.heartbeat(body.lease_id)
        return {"ok": True}

    @app.post("/reset", dependencies=auth)
    async def reset(body: LeaseRequest):
        first = await pool.call(body.lease_id, "reset")
        if not isinstance(first, dict) or "observation" not in first:
            raise PoolError(500, "env_error", "environment reset must return {'observation': str, 'tools': list}")
        return {"observation": first["observation"], "tools": first.get("tools") or []}

    @app.post("/exec_tool", dependencies=auth)
    async def exec_tool(body: ExecToolRequest):
        obs = await pool.call(body.lease_id, "exec_tool", body.tool_call)
        return {"observation": obs if isinstance(obs, list) else str(obs)}  # content parts (screenshots) as they are

    @app.post("/evaluate", dependencies=auth)
    async def evaluate(body: EvaluateRequest):
        score = await pool.call(body.lease_id, evaluate_episode, body.final_response)
        try:
            return {"score": float(score)}
        except (TypeError, ValueError) as exc:
            raise PoolError(500, "env_error", f"environment evaluate returned {score!r}, not a number") from exc

    @app.post("/close", dependencies=auth)
    async def close(body: LeaseRequest):
        await pool.close(body.lease_id)
        return {"ok": True}

    return app


class OneLineParser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line on stderr (exit status 2)."""

    def error(self, message: str):
        """Print ``prog: error: message`` and exit 2."""
        self.exit(2, f"{self.prog}: error: {message}\n")


def _env_pair(text: str) -> tuple[str, str]:
    name, sep, spec = text.partition("=")
    if not sep or not name or not spec:
        raise argparse.ArgumentTypeError(f"expected NAME=SPEC (e.g. counter=pkg.module:make_env), got {text!r}")
    return name, spec


def _positive(kind):
    def parse(text: str):
        value = kind(text)
        if value <= 0:
            raise argparse.ArgumentTypeError(f"must be > 0, got {text}")
        return value
    parse.__name__ = kind.__name__
    return parse


def build_parser() -> argparse.ArgumentParser:
    """The CLI flags (defaults from ``PARALLEL_ENVS``, ``POOL_API_KEY``)."""
    p = OneLineParser(prog="python -m openclaw_rl.agentic.pool_server",
                      description="Serve environments over HTTP (allocate/reset/exec_tool/evaluate/close).")
    p.add_argument("--host", default="127.0.0.1", help="bind address (default 127.0.0.1)")
    p.add_argument("--port", type=port_number, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT})")
    p.add_argument("--max-envs", type=_positive(int), default=os.environ.get("PARALLEL_ENVS") or "8",
                   help="capacity: live environments at once (default $PARALLEL_ENVS or 8)")
    p.add_argument("--lease-ttl", type=_positive(float), default=600.0,
                   help="seconds a lease may stay idle before it expires and its environment closes (default 600)")
    p.add_argument("--env-type", default=None, help="env_type used when /allocate names none")
    p.add_argument("--env", type=_env_pair, action="append", default=[], metavar="NAME=SPEC",
                   help="register an environment family: NAME=package.module:factory or NAME=path/file.py:factory")
    p.add_argument("--api-key", default=os.environ.get("POOL_API_KEY") or None,
                   help="require 'Authorization: Bearer KEY' (default $POOL_API_KEY; none: open)")
    p.add_argument("--retry-after", type=_positive(float), default=1.0,
                   help="seconds suggested in Retry-After when the pool is full (default 1)")
    p.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    p.add_argument("--insecure-no-auth", action="store_true",
                   help="allow a non-loopback --host without --api-key (anyone reaching the port can run code)")
    add_port_file_flag(p)
    return p


def main(argv: list[str] | None = None) -> int:
    """Parse flags, register families, serve until SIGTERM/SIGINT; returns the exit code."""
    from openclaw_rl.agentic.environment import EnvRegistryError, get_factory, load_factory, register_env

    parser = build_parser()
    args = parser.parse_args(argv)
    for name, spec in args.env:
        try:
            load_factory(spec)  # fail at start-up, not on the first allocate
        except EnvRegistryError as exc:
            parser.error(f"--env {name}={spec}: {exc}")
        register_env(name, spec)
    if args.env_type:
        try:
            get_factory(args.env_type)
        except EnvRegistryError as exc:
            parser.error(f"--env-type {args.env_type}: {exc}")
    sock = check_listen(parser, args)
    pool = LeasePool(args.max_envs, args.lease_ttl, args.env_type, retry_after=args.retry_after)
    log.info("environment pool on http://%s:%d: %d envs, lease ttl %.0f s", args.host, args.port,
             args.max_envs, args.lease_ttl)
    serve(create_app(pool, args.api_key), sock, args.log_level)
    return 0


if __name__ == "__main__":
    sys.exit(main())
