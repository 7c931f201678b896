"""A router in front of several environment pool workers, with the pool server's own API.

``POST /allocate`` asks every worker for ``/status`` and allocates on the least-loaded one with free
capacity (lowest ``in_use / capacity``, then most free slots); a worker that answers 429 anyway (a
race) is skipped for the next. When every worker is full or unreachable the router answers 429
``pool_full`` with ``Retry-After``. It remembers ``request_id -> (worker, lease)`` (so a retried
allocate is idempotent) and ``lease_id -> worker``, and forwards ``/heartbeat``, ``/reset``,
``/exec_tool``, ``/evaluate`` and ``/close`` to the lease's worker, passing the worker's status and
JSON through unchanged (a 404 or a close drops the router's record of the lease). A lease the
router does not know is 404 ``lease_not_found``; a worker that cannot be reached is 502
``worker_unavailable``. ``GET /status`` sums the workers' and lists each.

CLI: ``WORKER_URLS=http://h1:18080,http://h2:18080 ROUTER_PORT=18090 python -m openclaw_rl.agentic.router``
(or ``--worker-urls``, ``--port``; ``--host`` 127.0.0.1 by default; ``--api-key`` protects the
router, ``--worker-api-key`` (default: the same key) is sent to the workers).
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import zlib
from collections import Counter
from contextlib import asynccontextmanager

import httpx
from fastapi import Depends, FastAPI
from fastapi.responses import JSONResponse

from openclaw_rl.agentic.lease_pool import PoolError
from openclaw_rl.agentic.listen import add_port_file_flag, port_number
from openclaw_rl.agentic.pool_client import http_clients
from openclaw_rl.agentic.pool_server import (AllocateRequest, EvaluateRequest, ExecToolRequest, LeaseRequest,
                                             OneLineParser, bearer_check, install_pool_error_handlers)

log = logging.getLogger(__name__)

DEFAULT_ROUTER_PORT = 18090


class Router:
    """Routing state: the workers, and which worker holds each lease.

    Args:
        worker_urls: base URLs of the pool workers (``http://host:port``).
        worker_api_key: Bearer key sent to the workers (None: none).
        timeout: seconds per forwarded call (environment calls can be slow).
        status_timeout: seconds to wait for a worker's ``/status`` when allocating.
        retry_after: seconds suggested when every worker is full.
        shards: HTTP connection pools, a lease's calls always on the same one (by lease id).
    """

    def __init__(self, worker_urls: list[str], worker_api_key: str | None = None, timeout: float = 600.0,
                 status_timeout: float = 5.0, retry_after: float = 1.0, shards: int = 8):
        if not worker_urls:
            raise ValueError("at least one worker URL is needed")
        self.workers = [u.rstrip("/") for u in worker_urls]
        headers = {"Authorization": f"Bearer {worker_api_key}"} if worker_api_key else {}
        self.shards = http_clients(shards, headers, timeout)  # see PoolClient's ``shards``
        self.http = self.shards[0]
        self.status_timeout, self.retry_after = status_timeout, retry_after
        self.lease_worker: dict[str, str] = {}
        self.request_lease: dict[str, tuple[str, str]] = {}

    def _http(self, key: str) -> httpx.AsyncClient:
        return self.shards[zlib.crc32(key.encode()) % len(self.shards)]

    async def worker_status(self, url: str) -> dict | None:
        """A worker's ``/status`` JSON, or None when it does not answer with 200."""
        try:
            r = await self.http.get(f"{url}/status", timeout=self.status_timeout)
            return r.json() if r.status_code == 200 else None
        except (httpx.HTTPError, ValueError):
            return None

    async def statuses(self) -> list[tuple[str, dict | None]]:
        """``[(url, status or None)]`` for every worker, asked concurrently."""
        results = await asyncio.gather(*(self.worker_status(u) for u in self.workers))
        return list(zip(self.workers, results))

    async def allocate(self, body: AllocateRequest) -> JSONResponse:
        """Allocate on the least-loaded worker with room; 429 ``pool_full`` when none has room."""
        known = self.request_lease.get(body.request_id)
        if known is not None:  # retried allocate: ask the same worker (idempotent there too)
            candidates = [known[0]]
        else:
            ranked = [(s.get("in_use", 0) / max(1, s.get("capacity", 1)), -s["available"], i, url)
                      for i, (url, s) in enumerate(await self.statuses())
                      if s is not None and s.get("available", 0) > 0]
            candidates = [url for *_, url in sorted(ranked)]
        for url in candidates:
            try:
                r = await self._http(body.request_id).post(f"{url}/allocate", json=body.model_dump())
            except httpx.HTTPError as exc:
                log.warning("worker %s: allocate failed: %s", url, exc)
                continue
            if r.status_code == 200:
                lease_id = r.json()["lease_id"]
                self.lease_worker[lease_id] = url
                self.request_lease[body.request_id] = (url, lease_id)
                return JSONResponse(r.json())
            if r.status_code != 429:
                return _passthrough(r)
        raise PoolError(429, "pool_full", f"all {len(self.workers)} pool worker(s) are full or unreachable;"
                        " retry later", retry_after=self.retry_after)

    async def forward(self, path: str, lease_id: str, payload: dict) -> JSONResponse:
        """Forward a lease call to the worker holding the lease; its answer passes through.

        Raises:
            PoolError: 404 ``lease_not_found`` (unknown here), 502 ``worker_unavailable``.
        """
        url = self.lease_worker.get(lease_id)
        if url is None:
            raise PoolError(404, "lease_not_found", f"lease {lease_id!r} not found (unknown, closed or expired)")
        try:
            r = await self._http(lease_id).post(f"{url}/{path}", json=payload)
        except httpx.HTTPError as exc:
            raise PoolError(502, "worker_unavailable", f"pool worker {url} did not answer /{path}: "
                            f"{type(exc).__name__}: {exc}") from exc
        if r.status_code == 404 or (path == "close" and r.status_code == 200):
            self._forget(lease_id)
        return _passthrough(r)

    def _forget(self, lease_id: str) -> None:
        url = self.lease_worker.pop(lease_id, None)
        for req, (w, lid) in list(self.request_lease.items()):
            if lid == lease_id and w == url:
                del self.request_lease[req]

    async def status(self) -> dict:
        """Sum of the workers' status, plus ``workers: [{url, ok, status}]``."""
        rows = await self.statuses()
        live = [s for _, s in rows if s]
        by_type: Counter = Counter()
        for s in live:
            by_type.update(s.get("by_env_type", {}))
        total = {k: sum(s.get(k, 0) for s in live)
                 for k in ("capacity", "in_use", "available", "allocating", "closing", "allocated", "closed",
                           "expired")}
        return {**total, "by_env_type": dict(by_type), "leases_routed": len(self.lease_worker),
                "workers": [{"url": u, "ok": s is not None, "status": s} for u, s in rows]}


def _passthrough(r: httpx.Response) -> JSONResponse:
    try:
        content = r.json()
    except ValueError:
        content = {"error": {"message": f"worker answered {r.status_code} without JSON", "type": "server_error",
                             "param": None, "code": "worker_error"}}
    headers = {k: v for k, v in r.headers.items() if k.lower() == "retry-after"}
    return JSONResponse(content, status_code=r.status_code, headers=headers or None)


def create_router_app(router: Router, api_key: str | None = None) -> FastAPI:
    """The router's FastAPI app (same routes and errors as the pool server).

    Args:
        router: routing state (its HTTP client is closed on shutdown).
        api_key: when set, every route but ``/healthz`` needs ``Authorization: Bearer <api_key>``.
    """

    @asynccontextmanager
    async def lifespan(_app):
        yield
        await asyncio.gather(*(h.aclose() for h in router.shards))

    app = FastAPI(title="OpenClaw-RL environment pool router", lifespan=lifespan)
    install_pool_error_handlers(app)
    auth = [Depends(bearer_check(api_key))]

    @app.get("/healthz")
    async def healthz():
        return {"status": "ok", "workers": len(router.workers)}

    @app.get("/status", dependencies=auth)
    async def status():
        return await router.status()

    @app.post("/allocate", dependencies=auth)
    async def allocate(body: AllocateRequest):
        return await router.allocate(body)

    def forwarder(path: str, model: type):
        async def forward(body):
            return await router.forward(path, body.lease_id, body.model_dump())

        forward.__name__, forward.__annotations__ = path, {"body": model}  # the body model FastAPI validates
        return forward

    # the lease calls go to the lease's worker with their whole body (the worker validates it too)
    for path, model in (("heartbeat", LeaseRequest), ("reset", LeaseRequest), ("exec_tool", ExecToolRequest),
                        ("evaluate", EvaluateRequest), ("close", LeaseRequest)):
        app.post(f"/{path}", dependencies=auth)(forwarder(path, model))

    return app


def build_parser() -> OneLineParser:
    """The router's CLI flags (defaults from ``WORKER_URLS``, ``ROUTER_PORT``, ``POOL_API_KEY``)."""
    p = OneLineParser(prog="python -m openclaw_rl.agentic.router",
                      description="Route environment pool calls over several pool workers.")
    p.add_argument("--worker-urls", default=os.environ.get("WORKER_URLS", ""),
                   help="comma-separated worker base URLs (default $WORKER_URLS)")
    p.add_argument("--host", default="127.0.0.1", help="bind address (default 127.0.0.1)")
    p.add_argument("--port", type=port_number, default=os.environ.get("ROUTER_PORT") or str(DEFAULT_ROUTER_PORT),
                   help=f"port (default $ROUTER_PORT or {DEFAULT_ROUTER_PORT})")
    p.add_argument("--api-key", default=os.environ.get("POOL_API_KEY") or None,
                   help="require 'Authorization: Bearer KEY' from clients (default $POOL_API_KEY)")
    p.add_argument("--worker-api-key", default=None, help="key sent to the workers (default: --api-key)")
    p.add_argument("--timeout", type=float, default=600.0, help="seconds per forwarded call (default 600)")
    p.add_argument("--retry-after", type=float, default=1.0, help="Retry-After seconds when all are full")
    p.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    p.add_argument("--insecure-no-auth", action="store_true",
                   help="allow a non-loopback --host without --api-key (anyone reaching the port can run code)")
    add_port_file_flag(p)
    return p


def main(argv: list[str] | None = None) -> int:
    """Parse flags and serve the router until SIGTERM/SIGINT; returns the exit code."""
    from openclaw_rl.agentic.listen import check_listen, serve

    parser = build_parser()
    args = parser.parse_args(argv)
    urls = [u.strip() for u in args.worker_urls.split(",") if u.strip()]
    if not urls:
        parser.error("no workers: set WORKER_URLS or --worker-urls (comma-separated http://host:port)")
    bad = [u for u in urls if not u.startswith(("http://", "https://"))]
    if bad:
        parser.error(f"worker URL {bad[0]!r} must start with http:// or https://")
    sock = check_listen(parser, args)
    router = Router(urls, args.worker_api_key or args.api_key, timeout=args.timeout, retry_after=args.retry_after)
    log.info("pool router on http://%s:%d over %d worker(s)", args.host, args.port, len(urls))
    serve(create_router_app(router, args.api_key), sock, args.log_level)
    return 0


if __name__ == "__main__":
    sys.exit(main())
