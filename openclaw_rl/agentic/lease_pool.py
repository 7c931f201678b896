"""Leases over live environments: capacity, idempotent allocation, per-lease locks, idle expiry.

The state behind :mod:`openclaw_rl.agentic.pool_server`, kept apart from HTTP. All bookkeeping runs
on the event loop; environment methods run in a dedicated thread pool (one thread per possible
concurrent call, so a slow environment never blocks the loop nor starves another lease), and one
``asyncio.Lock`` per lease serialises that lease's calls (environments need not be thread-safe).

Errors are :class:`PoolError` with an HTTP status, a machine code and a one-line message:
``pool_full`` (429), ``lease_not_found`` (404), ``invalid_env_type`` / ``missing_env_type`` (400),
``env_error`` (500), ``shutting_down`` (503).
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Callable

from openclaw_rl.agentic.environment import Environment, EnvRegistryError, make_env

log = logging.getLogger(__name__)


class PoolError(Exception):
    """An error the pool server returns as ``{"error": {"code", "message", "type"}}``.

    Attributes:
        status: HTTP status.
        code: machine-readable reason (``pool_full``, ``lease_not_found``, ...).
        message: one line for people.
        retry_after: seconds (set for ``pool_full``; sent as the ``Retry-After`` header).
    """

    def __init__(self, status: int, code: str, message: str, retry_after: float | None = None):
        super().__init__(message)
        self.status, self.code, self.message, self.retry_after = status, code, message, retry_after


@dataclass
class Lease:
    """One leased environment: who asked for it, its lock and its idle clock."""

    lease_id: str
    request_id: str
    env_type: str
    task_key: str
    env: Environment
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    last_used: float = field(default_factory=time.monotonic)
    busy: int = 0  # calls in flight; a busy lease never expires


def _exc_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


class LeasePool:
    """The leases of one pool worker.

    Args:
        max_envs: capacity (live leases plus allocations being built).
        lease_ttl: seconds a lease may stay idle (no call, no heartbeat) before it expires; its
            environment is then closed.
        default_env_type: used when ``allocate`` names no ``env_type`` (None: it must be named).
        factory: ``(env_type, task_key, task) -> Environment`` (default :func:`make_env`).
        retry_after: seconds suggested to a caller turned away by a full pool.
    """

    def __init__(self, max_envs: int, lease_ttl: float = 600.0, default_env_type: str | None = None,
                 factory: Callable[[str, str, dict], Environment] = make_env, retry_after: float = 1.0):
        if max_envs < 1 or lease_ttl <= 0:
            raise ValueError("max_envs must be >= 1 and lease_ttl > 0")
        self.max_envs, self.lease_ttl, self.retry_after = max_envs, lease_ttl, retry_after
        self.default_env_type, self._factory = default_env_type, factory
        self._leases: dict[str, Lease] = {}
        self._by_request: dict[str, str] = {}
        self._pending: dict[str, asyncio.Future] = {}  # request_id -> build task (-> lease_id)
        self._executor = ThreadPoolExecutor(max_envs + 4, thread_name_prefix="env")
        self.allocated = self.closed = self.expired = 0
        self._stopping = False
        self._closing = 0

    # -- running environment code off the loop ---------------------------------------------
    async def _in_thread(self, fn: Callable, *args) -> Any:
        return await asyncio.get_running_loop().run_in_executor(self._executor, fn, *args)

    def _close_quietly(self, env: Environment, why: str) -> None:
        try:
            env.close()
        except Exception:  # a failing close must not take the pool down
            log.exception("closing an environment (%s) failed", why)

    # -- allocation ------------------------------------------------------------------------
    @property
    def in_use(self) -> int:
        """Live leases plus allocations in progress plus environments still closing."""
        return len(self._leases) + len(self._pending) + self._closing

    async def allocate(self, task_key: str, request_id: str, env_type: str | None = None,
                       task: dict | None = None) -> str:
        """Lease a fresh environment for a task; the same ``request_id`` gets the same lease.

        Returns:
            The lease id.

        Raises:
            PoolError: 429 ``pool_full``, 400 ``invalid_env_type`` / ``missing_env_type``,
                500 ``env_error`` when the factory raises (nothing stays reserved).
        """
        if request_id in self._by_request:
            lease_id = self._by_request[request_id]
            self._leases[lease_id].last_used = time.monotonic()
            return lease_id
        if request_id in self._pending:  # a concurrent retry of an allocation being built
            return await asyncio.shield(self._pending[request_id])
        if self._stopping:
            raise PoolError(503, "shutting_down", "the pool server is stopping")
        env_type = env_type or self.default_env_type
        if not env_type:
            raise PoolError(400, "missing_env_type", "env_type is required (this pool has no --env-type default)")
        if self.in_use >= self.max_envs:
            raise PoolError(429, "pool_full", f"pool full: {self.in_use}/{self.max_envs} environments "
                            "leased; retry later", retry_after=self.retry_after)
        # the build runs as its own task: a caller that goes away (client disconnect) does not
        # abandon a half-built environment; the lease is registered and a retry gets it
        build = asyncio.ensure_future(self._build(task_key, request_id, env_type, dict(task or {})))
        build.add_done_callback(lambda t: t.cancelled() or t.exception())  # retrieved, no warning
        self._pending[request_id] = build
        return await asyncio.shield(build)

    async def _build(self, task_key: str, request_id: str, env_type: str, task: dict) -> str:
        try:
            env = await self._in_thread(self._factory, env_type, task_key, task)
        except EnvRegistryError as exc:
            raise PoolError(400, "invalid_env_type", str(exc)) from exc
        except PoolError:  # a factory that judged the request itself (e.g. a bad image: 400)
            raise
        except Exception as exc:
            log.exception("building %s environment for task %s failed", env_type, task_key)
            raise PoolError(500, "env_error", f"building the {env_type} environment for task "
                            f"{task_key!r} failed: {_exc_line(exc)}") from exc
        finally:
            self._pending.pop(request_id, None)
        if self._stopping:  # built while the server stops: nobody can use it
            await self._in_thread(self._close_quietly, env, "shutdown")
            raise PoolError(503, "shutting_down", "the pool server is stopping")
        lease_id = f"lease-{uuid.uuid4().hex}"
        self._leases[lease_id] = Lease(lease_id, request_id, env_type, task_key, env)
        self._by_request[request_id] = lease_id
        self.allocated += 1
        return lease_id

    def get(self, lease_id: str) -> Lease:
        """The live lease ``lease_id``.

        Raises:
            PoolError: 404 ``lease_not_found`` (unknown, closed or expired).
        """
        lease = self._leases.get(lease_id)
        if lease is None:
            raise PoolError(404, "lease_not_found", f"lease {lease_id!r} not found (unknown, closed or expired)")
        return lease

    # -- calls -----------------------------------------------------------------------------
    def heartbeat(self, lease_id: str) -> None:
        """Reset the lease's idle clock. Raises PoolError 404 for an unknown lease."""
        self.get(lease_id).last_used = time.monotonic()

    async def call(self, lease_id: str, method: str | Callable[..., Any], *args) -> Any:
        """Run ``env.<method>(*args)`` (or ``method(env, *args)`` for a function) in a worker
        thread under the lease's lock.

        Raises:
            PoolError: 404 for an unknown lease (also one closed while waiting for the lock),
                500 ``env_error`` when the environment raises (the lease stays live and closable).
        """
        lease = self.get(lease_id)
        lease.busy += 1
        try:
            async with lease.lock:
                if self._leases.get(lease_id) is not lease:
                    raise PoolError(404, "lease_not_found", f"lease {lease_id!r} was closed")
                fn = getattr(lease.env, method) if isinstance(method, str) else functools.partial(method, lease.env)
                name = method if isinstance(method, str) else method.__name__
                try:
                    return await self._in_thread(fn, *args)
                except Exception as exc:
                    log.warning("lease %s: %s.%s raised %s", lease_id, lease.env_type, name, _exc_line(exc))
                    raise PoolError(500, "env_error", f"environment {name} failed: {_exc_line(exc)}") from exc
        finally:
            lease.busy -= 1
            lease.last_used = time.monotonic()

    async def close(self, lease_id: str) -> None:
        """Close the lease and its environment (after any call in flight on it).

        Raises:
            PoolError: 404 for an unknown lease.
        """
        lease = self.get(lease_id)
        await self._drop(lease, "close")
        self.closed += 1

    async def _drop(self, lease: Lease, why: str) -> None:
        if self._leases.get(lease.lease_id) is not lease:
            return
        del self._leases[lease.lease_id]  # no new call gets in
        self._by_request.pop(lease.request_id, None)
        self._closing += 1  # the slot is free once the environment is closed
        try:
            async with lease.lock:
                await self._in_thread(self._close_quietly, lease.env, why)
        finally:
            self._closing -= 1

    # -- expiry and shutdown ----------------------------------------------------------------
    async def expire_idle(self) -> int:
        """Close every lease idle for longer than the TTL; returns how many expired."""
        now = time.monotonic()
        stale = [lease for lease in self._leases.values()
                 if lease.busy == 0 and now - lease.last_used > self.lease_ttl]
        for lease in stale:
            log.info("lease %s (%s, task %s) expired after %.0f s idle", lease.lease_id,
                     lease.env_type, lease.task_key, now - lease.last_used)
        await asyncio.gather(*(self._drop(lease, "expired") for lease in stale))
        self.expired += len(stale)
        return len(stale)

    async def sweep_forever(self) -> None:
        """Expire idle leases every ``min(ttl / 4, 5)`` seconds until cancelled."""
        interval = max(0.05, min(self.lease_ttl / 4, 5.0))
        while True:
            await asyncio.sleep(interval)
            try:
                await self.expire_idle()
            except Exception:
                log.exception("lease sweep failed")

    async def close_all(self) -> int:
        """Close every live environment (graceful stop); returns how many were closed."""
        self._stopping = True
        leases = list(self._leases.values())
        await asyncio.gather(*(self._drop(lease, "shutdown") for lease in leases))
        await asyncio.gather(*self._pending.values(), return_exceptions=True)  # builds close themselves
        self._executor.shutdown(wait=False, cancel_futures=True)
        return len(leases)

    def status(self) -> dict:
        """``{capacity, in_use, available, by_env_type, allocating, closing, allocated, closed, expired,
        lease_ttl}``: ``in_use`` counts live leases, allocations being built and environments
        still closing; ``allocated`` / ``closed`` / ``expired`` are totals since start."""
        by_type = Counter(lease.env_type for lease in self._leases.values())
        return {"capacity": self.max_envs, "in_use": self.in_use,
                "available": max(0, self.max_envs - self.in_use), "by_env_type": dict(by_type),
                "allocating": len(self._pending), "closing": self._closing,
                "allocated": self.allocated, "closed": self.closed,
                "expired": self.expired, "lease_ttl": self.lease_ttl}
