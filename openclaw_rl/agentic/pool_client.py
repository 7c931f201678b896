"""Async client of the environment pool server (or router), and a local stand-in with the same API.

:class:`PoolClient` allocates leases and returns :class:`EnvHandle` objects whose async methods
mirror :class:`openclaw_rl.agentic.environment.Environment` (``reset``, ``exec_tool``, ``evaluate``,
``close``); :class:`LocalEnvHandle` wraps an in-process Environment behind the same async methods
(running them with ``asyncio.to_thread``), so the agent loop takes either.

Where an episode's environment runs (:func:`open_env`): remotely when ``ENV_SERVER_URL`` (one pool
server or router) or ``WORKER_URLS`` (comma-separated pool workers) is set, through one shared
:class:`PoolClient` per process and URL list; else in this process.

Retries: ``allocate`` is retried on 429 (honouring ``Retry-After``), on 502/503 and on connection
errors, with exponential backoff and jitter, trying each URL in turn, until ``retry_timeout``
seconds have passed; then :class:`PoolUnavailableError` says what the last answer was. Lease calls
are retried only when the request could not have reached the server (connect errors), since
``exec_tool`` is not idempotent. A lease the server no longer knows raises :class:`LeaseLostError`.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import random
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

import httpx

from openclaw_rl.agentic.env_protocol import Environment, evaluate_episode
from openclaw_rl.tls import tls_context

log = logging.getLogger(__name__)

__all__ = ["env_urls", "open_env", "PoolClient", "EnvHandle", "LocalEnvHandle", "PoolClientError", "LeaseLostError",
           "PoolUnavailableError"]


class PoolClientError(RuntimeError):
    """The pool answered with an error.

    Attributes:
        status: HTTP status (0 when no answer came).
        code: the error JSON's ``code`` (``pool_full``, ``env_error``, ...) or None.
    """

    def __init__(self, message: str, status: int = 0, code: str | None = None):
        super().__init__(message)
        self.status, self.code = status, code


class LeaseLostError(PoolClientError):
    """The lease is unknown to the pool (closed, expired after its idle TTL, or the worker restarted)."""


class PoolUnavailableError(PoolClientError):
    """Retries ran out: the pool stayed full or unreachable for the whole retry timeout."""


_CONNECT_ERRORS = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)
_RETRY_STATUS = (429, 502, 503)


def http_clients(n: int, headers: dict, timeout: float) -> list[httpx.AsyncClient]:
    """``n`` async HTTP clients sharing the process's TLS context (:func:`openclaw_rl.tls.tls_context`)."""
    return [httpx.AsyncClient(headers=headers, timeout=timeout, verify=tls_context(),
                              limits=httpx.Limits(max_connections=None, max_keepalive_connections=64))
            for _ in range(max(1, n))]


def _error_of(r: httpx.Response, what: str) -> PoolClientError:
    try:
        err = r.json().get("error") or {}
    except (ValueError, AttributeError):
        err = {}
    code, msg = err.get("code"), err.get("message") or r.text[:200]
    cls = LeaseLostError if r.status_code == 404 and code == "lease_not_found" else PoolClientError
    return cls(f"{what}: HTTP {r.status_code} {code or ''}: {msg}".replace("  ", " "), r.status_code, code)


def _retry_after(r: httpx.Response) -> float | None:
    try:
        return float(r.headers["retry-after"])
    except (KeyError, ValueError):
        return None


class PoolClient:
    """Client of one or more pool servers or routers.

    Args:
        urls: base URL(s) (``http://host:port``), a list or one comma-separated string; allocation
            goes round-robin over them, moving on when one is full or unreachable.
        api_key: sent as ``Authorization: Bearer``.
        timeout: seconds per HTTP call (environment calls can be slow).
        retry_timeout: total seconds ``allocate`` keeps retrying a full or unreachable pool.
        backoff_base, backoff_max: the backoff before retry ``n`` is
            ``min(backoff_max, backoff_base * 2**n)``, jittered to ``[1/2, 1]`` of that, and at
            least the server's ``Retry-After``.
        heartbeat_interval: seconds between heartbeats of a held lease (keep it well under the
            server's ``--lease-ttl``; None or 0: no heartbeat).
        shards: HTTP connection pools the handles are spread over (httpcore's pool costs
            O(connections x waiting requests) per request, so one pool for many concurrent
            episodes spends most of its CPU there; see ``benchmarks/env_pool.py``).
    """

    def __init__(self, urls: list[str] | str, *, api_key: str | None = None, timeout: float = 600.0,
                 retry_timeout: float = 600.0, backoff_base: float = 0.25, backoff_max: float = 10.0,
                 heartbeat_interval: float | None = 60.0, shards: int = 8):
        self.urls = [u.strip().rstrip("/") for u in (urls.split(",") if isinstance(urls, str) else urls) if u.strip()]
        if not self.urls:
            raise ValueError("PoolClient needs at least one URL")
        self.retry_timeout, self.backoff_base, self.backoff_max = retry_timeout, backoff_base, backoff_max
        self.heartbeat_interval = heartbeat_interval
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._shards = http_clients(shards, headers, timeout)
        self.http = self._shards[0]
        self._next = self._next_shard = 0

    async def __aenter__(self) -> "PoolClient":
        return self

    async def __aexit__(self, *exc) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the HTTP connections (handles still held should be closed first)."""
        await asyncio.gather(*(h.aclose() for h in self._shards))

    def shard(self) -> httpx.AsyncClient:
        """The next HTTP client, round-robin (one per handle; a handle's calls are sequential)."""
        self._next_shard += 1
        return self._shards[self._next_shard % len(self._shards)]

    def backoff(self, attempt: int, retry_after: float | None = None) -> float:
        """Seconds to wait before retry ``attempt`` (0-based): exponential, jittered, >= Retry-After."""
        delay = min(self.backoff_max, self.backoff_base * 2 ** attempt)
        delay = delay / 2 + random.uniform(0, delay / 2)
        return max(delay, retry_after or 0.0)

    async def status(self) -> list[dict]:
        """``/status`` of every URL, in order. Raises PoolClientError on an error answer."""
        out = []
        for url in self.urls:
            r = await self.http.get(f"{url}/status")
            if r.status_code != 200:
                raise _error_of(r, f"{url}/status")
            out.append(r.json())
        return out

    async def allocate(self, task_key: str, *, env_type: str | None = None, task: dict | None = None,
                       request_id: str | None = None) -> "EnvHandle":
        """Lease an environment for a task, retrying while the pool is full or unreachable.

        Args:
            task_key: the task (dataset row ``metadata.task_key``).
            env_type: the family (None: the server's ``--env-type``).
            task: the dataset row's ``metadata`` dict.
            request_id: idempotency key (default: a fresh UUID, reused across this call's retries).

        Returns:
            An :class:`EnvHandle` (heartbeating in the background until closed).

        Raises:
            PoolUnavailableError: still full / unreachable after ``retry_timeout`` seconds.
            PoolClientError: any other error answer (bad request, env_type unknown, factory failed).
        """
        request_id = request_id or uuid.uuid4().hex
        body = {"task_key": task_key, "request_id": request_id, "env_type": env_type, "task": task or {}}
        deadline, attempt, start = time.monotonic() + self.retry_timeout, 0, time.monotonic()
        while True:
            retry_after, last = None, ""
            for _ in range(len(self.urls)):
                url = self.urls[self._next % len(self.urls)]
                self._next += 1
                try:
                    r = await self.shard().post(f"{url}/allocate", json=body)
                except (httpx.TransportError,) as exc:  # allocate is idempotent per request_id
                    last = f"{url}: {type(exc).__name__}: {exc}"
                    continue
                if r.status_code == 200:
                    return EnvHandle(self, url, r.json()["lease_id"], task_key)
                if r.status_code not in _RETRY_STATUS:
                    raise _error_of(r, f"allocate on {url}")
                last = str(_error_of(r, url))
                retry_after = max(retry_after or 0.0, _retry_after(r) or 0.0)
            wait = self.backoff(attempt, retry_after)
            if time.monotonic() + wait > deadline:
                raise PoolUnavailableError(
                    f"no environment for task {task_key!r} after {attempt + 1} round(s) over "
                    f"{time.monotonic() - start:.1f} s (retry timeout {self.retry_timeout:g} s); last: {last}",
                    status=429 if "pool_full" in last else 0, code="pool_full" if "pool_full" in last else None)
            log.debug("allocate %s: retrying in %.2f s (%s)", task_key, wait, last)
            await asyncio.sleep(wait)
            attempt += 1

    async def post(self, url: str, path: str, payload: dict, http: httpx.AsyncClient | None = None) -> dict:
        """POST a lease call (on ``http``, default the first shard); retried on connect errors only
        (until ``retry_timeout``).

        Raises:
            LeaseLostError: 404 ``lease_not_found``.
            PoolClientError: any other error answer, or no connection within the retry timeout.
        """
        deadline, attempt = time.monotonic() + self.retry_timeout, 0
        while True:
            try:
                r = await (http or self.http).post(f"{url}/{path}", json=payload)
                break
            except _CONNECT_ERRORS as exc:
                wait = self.backoff(attempt)
                if time.monotonic() + wait > deadline:
                    raise PoolClientError(f"{path} on {url}: cannot connect: {type(exc).__name__}: {exc}") from exc
                await asyncio.sleep(wait)
                attempt += 1
            except httpx.TransportError as exc:
                raise PoolClientError(f"{path} on {url}: {type(exc).__name__}: {exc}") from exc
        if r.status_code != 200:
            raise _error_of(r, f"{path} on {url}")
        return r.json()


class EnvHandle:
    """A leased remote environment with the Environment methods, async.

    Heartbeats run in the background while the handle is held; :meth:`close` is idempotent, always
    attempted (also from ``async with``), and never raises for a lease already gone.

    Attributes:
        url: the server (or router) holding the lease.
        lease_id: the lease.
        task_key: the task it was allocated for.
        lost: True once the server said the lease is gone.
    """

    def __init__(self, client: PoolClient, url: str, lease_id: str, task_key: str):
        self.client, self.url, self.lease_id, self.task_key = client, url, lease_id, task_key
        self.http = client.shard()
        self.closed = self.lost = False
        interval = client.heartbeat_interval
        self._heartbeat = asyncio.create_task(self._beat(interval)) if interval else None

    async def __aenter__(self) -> "EnvHandle":
        return self

    async def __aexit__(self, *exc) -> None:
        await self.close()

    async def _beat(self, interval: float) -> None:
        while True:
            await asyncio.sleep(interval)
            try:
                r = await self.http.post(f"{self.url}/heartbeat", json={"lease_id": self.lease_id})
            except httpx.HTTPError as exc:  # the next call will tell; keep trying
                log.warning("heartbeat of %s failed: %s", self.lease_id, exc)
                continue
            if r.status_code == 404:  # expired or closed elsewhere: the next call raises LeaseLostError
                log.warning("lease %s is gone (heartbeat got 404)", self.lease_id)
                self.lost = True
                return

    async def _call(self, path: str, **extra: Any) -> dict:
        if self.closed:
            raise PoolClientError(f"{path}: lease {self.lease_id} is already closed")
        try:
            return await self.client.post(self.url, path, {"lease_id": self.lease_id, **extra}, self.http)
        except LeaseLostError:
            self.lost = True
            self._stop_heartbeat()
            raise

    async def reset(self) -> dict:
        """Start the episode: ``{"observation": str, "tools": list[dict]}``."""
        return await self._call("reset")

    async def exec_tool(self, tool_call: dict) -> str | list[dict]:
        """Run one tool call (``{"name", "arguments"}``); returns the observation (text, or
        content parts with images)."""
        return (await self._call("exec_tool", tool_call=tool_call))["observation"]

    async def evaluate(self, final_response: str | None = None) -> float:
        """The episode's outcome score (``final_response``: the agent's answer, for environments
        that score one)."""
        extra = {"final_response": final_response} if final_response is not None else {}
        return float((await self._call("evaluate", **extra))["score"])

    def _stop_heartbeat(self) -> None:
        if self._heartbeat is not None:
            self._heartbeat.cancel()
            self._heartbeat = None

    async def close(self) -> None:
        """Release the lease (idempotent; a lease already gone is fine; other failures are logged)."""
        self._stop_heartbeat()
        if self.closed:
            return
        self.closed = True
        if self.lost:
            return
        try:
            await self.client.post(self.url, "close", {"lease_id": self.lease_id}, self.http)
        except LeaseLostError:
            pass
        except (PoolClientError, httpx.HTTPError) as exc:
            log.warning("closing lease %s failed (it will expire on its own): %s", self.lease_id, exc)


class LocalEnvHandle:
    """An in-process :class:`Environment` behind the :class:`EnvHandle` async interface.

    Methods run in a thread (``asyncio.to_thread``), one at a time; ``close`` is idempotent.
    Environment errors propagate unchanged.
    """

    lease_id = None

    def __init__(self, env: Environment, task_key: str = ""):
        self.env, self.task_key = env, task_key
        self.closed = self.lost = False
        self._lock = asyncio.Lock()

    async def __aenter__(self) -> "LocalEnvHandle":
        return self

    async def __aexit__(self, *exc) -> None:
        await self.close()

    async def _run(self, fn, *args):
        if self.closed:
            raise PoolClientError(f"{fn.__name__}: the environment is already closed")
        async with self._lock:
            return await asyncio.to_thread(fn, *args)

    async def reset(self) -> dict:
        """``env.reset()``: ``{"observation": str, "tools": list[dict]}``."""
        return await self._run(self.env.reset)

    async def exec_tool(self, tool_call: dict) -> str | list[dict]:
        """``env.exec_tool(tool_call)``: the observation (text, or content parts with images)."""
        return await self._run(self.env.exec_tool, tool_call)

    async def evaluate(self, final_response: str | None = None) -> float:
        """:func:`~openclaw_rl.agentic.environment.evaluate_episode` (``submit`` the answer when the
        environment takes one, then ``evaluate``) as a float."""
        return float(await self._run(functools.partial(evaluate_episode, self.env, final_response)))

    async def close(self) -> None:
        """``env.close()`` once (later calls do nothing)."""
        if self.closed:
            return
        self.closed = True
        async with self._lock:
            await asyncio.to_thread(self.env.close)


def env_urls(environ: dict | None = None) -> list[str]:
    """The pool servers to use: ``ENV_SERVER_URL``, else ``WORKER_URLS`` split on commas, else []
    (in-process environments)."""
    environ = os.environ if environ is None else environ
    one = (environ.get("ENV_SERVER_URL") or "").strip()
    if one:
        return [one]
    return [u.strip() for u in (environ.get("WORKER_URLS") or "").split(",") if u.strip()]


_POOLS: dict[tuple[str, ...], PoolClient] = {}
_POOLS_LOCK = threading.Lock()


async def open_env(env_type: str, task_key: str, task: dict, request_id: str,
                   make_local: Callable[[str, dict], Environment]) -> "EnvHandle | LocalEnvHandle":
    """An environment handle for one episode: a lease on the pool servers :func:`env_urls` names
    (built there by ``env_type``), else ``make_local(task_key, task)`` in this process.

    Raises:
        whatever ``make_local`` raises for a task it cannot build; :class:`PoolClientError` when no
        lease can be had (a full pool past the client's patience, an unreachable server).
    """
    urls = env_urls()
    if not urls:
        return LocalEnvHandle(make_local(task_key, task))
    key = tuple(urls)
    with _POOLS_LOCK:
        if key not in _POOLS:
            _POOLS[key] = PoolClient(urls)
        pool = _POOLS[key]
    return await pool.allocate(task_key=task_key, request_id=request_id, env_type=env_type, task=task)
