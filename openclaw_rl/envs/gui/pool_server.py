"""The GUI environment pool: MiniWoB++ browsers behind upstream's GUI HTTP API.

Routes (JSON bodies; errors are OpenAI-style ``{"error": {...}}`` as in
:mod:`openclaw_rl.agentic.pool_server`, whose lease pool, error handlers and key check this reuses):

- ``GET /healthz`` -> ``{"status": "ok", "ok": true}``; ``GET /status`` -> the leases, the warm
  browsers and ``{"ok": true, "pool": {"total_envs", "max_envs", "warm", ...}}`` (upstream's keys).
- ``POST /allocate {request_id?, task_key?}`` -> ``{lease_id}`` (a browser from the warm slots;
  idempotent per ``request_id``; 429 ``pool_full`` with ``Retry-After`` when all slots are leased).
- ``POST /heartbeat {lease_id}``; ``POST /reset {lease_id, task_config}`` -> ``{observation, info}``
  (``task_config = {"task": "click-button", "seed": 3, ...}``; an unknown task is 422);
  ``POST /get_obs {lease_id}`` -> ``{observation}``; ``POST /step {lease_id, action,
  sleep_after_execution?}`` -> ``{observation, reward, done, info}``; ``POST /evaluate {lease_id}``
  -> ``{score}`` (+1 / -1); ``POST /close {lease_id}`` -> ``{ok: true}`` (the browser is recycled,
  or killed and replaced when it crashed).
- ``observation = {"screenshot_b64", "text", "instruction"}`` (:mod:`openclaw_rl.envs.gui.session`).

A page that never loads, a malformed action, a click outside the screen and a crashed browser are
answered with an observation saying so (and ``info["error"]`` / ``info["action_error"]``), never a
server error; the lease stays closable and its slot is recycled. Idle leases expire after
``--lease-ttl``; stopping the server kills every browser it started.

CLI: ``python -m openclaw_rl.envs.gui.pool_server [--host $GUI_ENV_SERVER_HOST] [--port
$GUI_ENV_SERVER_PORT|18080] [--max-envs $GUI_POOL_MAX_ENVS|8] [--prewarm-envs $GUI_PREWARM_ENVS|0]
[--max-steps $GUI_MAX_STEPS] [--page-load-timeout 30] [--wait-after-reset 0] [--lease-ttl 600]
[--api-key KEY]``; screen, observation type, action space and backend from ``GUI_*`` /
``SCREENSHOT_BACKEND`` (:class:`~openclaw_rl.envs.gui.config.GuiConfig`).
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import uuid
from contextlib import asynccontextmanager
from typing import Any

from fastapi import Depends, FastAPI
from pydantic import BaseModel, Field

from openclaw_rl.agentic.lease_pool import LeasePool, PoolError
from openclaw_rl.agentic.listen import add_port_file_flag, check_listen, port_number, serve
from openclaw_rl.agentic.pool_server import OneLineParser, _positive, bearer_check, install_pool_error_handlers
from openclaw_rl.envs.gui.config import GuiConfig
from openclaw_rl.envs.gui.session import GuiSession, TaskConfigError, _task_fields
from openclaw_rl.envs.gui.slots import BrowserSlots

__all__ = ["DEFAULT_PORT", "GuiPool", "build_parser", "create_app", "main"]

log = logging.getLogger(__name__)
DEFAULT_PORT = 18080


class AllocateRequest(BaseModel):
    """``POST /allocate``: an optional idempotency key and task label."""

    request_id: str | None = None
    task_key: str = ""
    env_type: str | None = None
    task: dict[str, Any] = Field(default_factory=dict)


class LeaseRequest(BaseModel):
    """Body of ``/heartbeat``, ``/get_obs``, ``/evaluate``, ``/close``."""

    lease_id: str


class ResetRequest(BaseModel):
    """``POST /reset``: the lease and the task to start."""

    lease_id: str
    task_config: dict[str, Any]


class StepRequest(BaseModel):
    """``POST /step``: the action text (its content is the environment's to judge) and the pause
    after it (seconds, capped at 10)."""

    lease_id: str
    action: Any = None
    sleep_after_execution: float = Field(0.0, ge=0)


class GuiPool:
    """Leases over warm browsers: a :class:`LeasePool` whose environments are :class:`GuiSession`\\ s.

    Args:
        config: the episode settings.
        max_envs: sessions at once.
        prewarm: idle browsers kept warm.
        lease_ttl: idle seconds before a lease expires.
    """

    def __init__(self, config: GuiConfig, max_envs: int, prewarm: int = 0, lease_ttl: float = 600.0,
                 retry_after: float = 1.0):
        self.config = config
        self.slots = BrowserSlots(config, keep_warm=min(prewarm, max_envs), capacity=max_envs)
        self.leases = LeasePool(max_envs, lease_ttl, "gui", factory=self._session, retry_after=retry_after)

    def _session(self, _env_type: str, _task_key: str, _task: dict) -> GuiSession:
        return GuiSession(self.slots.acquire(), self.config, self.slots.release)

    def status(self) -> dict:
        """The lease pool's status, the slots' and upstream's ``ok`` / ``pool`` summary."""
        leases, slots = self.leases.status(), self.slots.status()
        return {**leases, "browsers": slots, "ok": True,
                "pool": {"total_envs": slots["warm"] + len(self.leases._leases), "max_envs": self.leases.max_envs,
                         "warm": slots["warm"], "leased": len(self.leases._leases)},
                "config": {"screen": [self.config.width, self.config.height],
                           "observation_type": self.config.observation_type,
                           "action_space": self.config.action_space, "max_steps": self.config.max_steps}}


def create_app(pool: GuiPool, api_key: str | None = None) -> FastAPI:
    """The GUI pool's FastAPI app (module docstring); its lifespan prewarms and, at shutdown,
    closes every lease and kills every browser."""

    @asynccontextmanager
    async def lifespan(_app):
        pool.slots.prewarm()
        sweeper = asyncio.create_task(pool.leases.sweep_forever())
        try:
            yield
        finally:
            sweeper.cancel()
            closed = await pool.leases.close_all()
            await asyncio.to_thread(pool.slots.close_all)
            log.info("GUI pool stopped; closed %d live session(s)", closed)

    app = FastAPI(title="OpenClaw-RL GUI environment pool", lifespan=lifespan)
    install_pool_error_handlers(app)
    auth = [Depends(bearer_check(api_key))]
    leases = pool.leases

    @app.get("/healthz")
    async def healthz():
        return {"status": "ok", "ok": True}

    @app.get("/status", dependencies=auth)
    async def status():
        return pool.status()

    @app.post("/allocate", dependencies=auth)
    async def allocate(body: AllocateRequest):
        request_id = body.request_id or uuid.uuid4().hex
        return {"lease_id": await leases.allocate(body.task_key or "gui", request_id, "gui", body.task)}

    @app.post("/heartbeat", dependencies=auth)
    async def heartbeat(body: LeaseRequest):
        leases.heartbeat(body.lease_id)
        return {"ok": True}

    @app.post("/reset", dependencies=auth)
    async def reset(body: ResetRequest):
        leases.get(body.lease_id)
        try:
            _task_fields(body.task_config)
        except TaskConfigError as exc:
            raise PoolError(422, "invalid_value", str(exc)) from None
        return await leases.call(body.lease_id, "reset", body.task_config)

    @app.post("/get_obs", dependencies=auth)
    async def get_obs(body: LeaseRequest):
        return {"observation": await leases.call(body.lease_id, "get_obs")}

    @app.post("/step", dependencies=auth)
    async def step(body: StepRequest):
        obs, reward, done, info = await leases.call(body.lease_id, "step", body.action, body.sleep_after_execution)
        return {"observation": obs, "reward": reward, "done": done, "info": info}

    @app.post("/evaluate", dependencies=auth)
    async def evaluate(body: LeaseRequest):
        return {"score": float(await leases.call(body.lease_id, "evaluate"))}

    @app.post("/close", dependencies=auth)
    async def close(body: LeaseRequest):
        await leases.close(body.lease_id)
        return {"ok": True}

    return app


def build_parser() -> OneLineParser:
    """The CLI flags (defaults from the ``GUI_*`` environment variables)."""
    env = os.environ
    p = OneLineParser(prog="python -m openclaw_rl.envs.gui.pool_server",
                      description="Serve MiniWoB++ browser environments (allocate/reset/step/evaluate/close).")
    p.add_argument("--host", default=env.get("GUI_ENV_SERVER_HOST") or "127.0.0.1")
    p.add_argument("--port", type=port_number, default=env.get("GUI_ENV_SERVER_PORT") or DEFAULT_PORT)
    p.add_argument("--max-envs", type=_positive(int), default=env.get("GUI_POOL_MAX_ENVS") or "8",
                   help="browsers leased at once (default $GUI_POOL_MAX_ENVS or 8)")
    p.add_argument("--prewarm-envs", type=int, default=env.get("GUI_PREWARM_ENVS") or "0",
                   help="idle browsers kept started (default $GUI_PREWARM_ENVS or 0)")
    p.add_argument("--max-steps", type=_positive(int), default=None, help="actions per episode (default: the gui family's --gui-max-steps, from GUI_MAX_STEPS)")
    p.add_argument("--page-load-timeout", type=_positive(float), default=30.0, help="seconds a page may take to load")
    p.add_argument("--wait-after-reset", type=float, default=0.0, help="seconds to wait after a reset (default 0)")
    p.add_argument("--lease-ttl", type=_positive(float), default=600.0)
    p.add_argument("--api-key", default=env.get("POOL_API_KEY") or None)
    p.add_argument("--insecure-no-auth", action="store_true")
    p.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    add_port_file_flag(p)
    return p


def main(argv: list[str] | None = None) -> int:
    """Parse flags, check Chromium and the settings, serve until SIGTERM/SIGINT; returns the exit code."""
    from openclaw_rl.envs.gui.browser import BrowserError, chromium_path
    from openclaw_rl.envs.gui.miniwob_tasks import page_names

    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        config = GuiConfig.from_env(max_steps=args.max_steps, page_load_timeout_s=args.page_load_timeout,
                                    wait_after_reset_s=args.wait_after_reset)
        chromium_path()
        page_names()
    except (ValueError, BrowserError, RuntimeError) as exc:
        parser.error(str(exc))
    if args.prewarm_envs < 0:
        parser.error("--prewarm-envs must be >= 0")
    sock = check_listen(parser, args)
    pool = GuiPool(config, args.max_envs, args.prewarm_envs, args.lease_ttl)
    log.info("GUI pool on http://%s:%d: %d envs (%d warm), %dx%d, %s", args.host, args.port, args.max_envs,
             pool.slots.keep_warm, config.width, config.height, config.observation_type)
    serve(create_app(pool, args.api_key), sock, args.log_level)
    return 0


if __name__ == "__main__":
    sys.exit(main())
