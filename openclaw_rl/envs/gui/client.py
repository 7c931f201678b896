"""A synchronous client of the GUI pool (:mod:`openclaw_rl.envs.gui.pool_server`) with the
:class:`~openclaw_rl.envs.gui.session.GuiSession` methods, so the text agent's environment runs
the same code on a local browser or on a pool server (``GUI_ENV_SERVER_URL``).

``allocate`` is retried while the pool is full (429, honouring ``Retry-After``) or unreachable,
up to ``retry_timeout`` seconds; other calls are not retried (a step is not idempotent).
"""

from __future__ import annotations

import os
import random
import time
import uuid
from typing import Any

import httpx

__all__ = ["GuiPoolError", "RemoteGuiSession", "server_url"]


class GuiPoolError(RuntimeError):
    """The GUI pool answered an error, or could not be reached in time (one line)."""


def server_url(environ=None) -> str | None:
    """``GUI_ENV_SERVER_URL``, else ``http://$GUI_ENV_SERVER_HOST:$GUI_ENV_SERVER_PORT`` when either
    is set, else None (run browsers in this process)."""
    env = os.environ if environ is None else environ
    url = (env.get("GUI_ENV_SERVER_URL") or "").strip()
    if url:
        return url.rstrip("/")
    host, port = (env.get("GUI_ENV_SERVER_HOST") or "").strip(), (env.get("GUI_ENV_SERVER_PORT") or "").strip()
    if host or port:
        return f"http://{host or '127.0.0.1'}:{port or 18080}"
    return None


class RemoteGuiSession:
    """One lease on a GUI pool (module docstring).

    Args:
        url: the pool's base URL.
        api_key: sent as ``Authorization: Bearer`` (default ``$POOL_API_KEY``).
        timeout: seconds per call.
        retry_timeout: seconds ``allocate`` keeps retrying a full or unreachable pool.

    Raises:
        GuiPoolError: no lease within ``retry_timeout``, or an error answer.
    """

    def __init__(self, url: str, api_key: str | None = None, timeout: float = 120.0, retry_timeout: float = 600.0):
        key = api_key or os.environ.get("POOL_API_KEY")
        self.url = url.rstrip("/")
        self.http = httpx.Client(timeout=timeout, headers={"Authorization": f"Bearer {key}"} if key else {})
        self.lease_id = self._allocate(retry_timeout)
        self.closed = False

    def _allocate(self, retry_timeout: float) -> str:
        body = {"request_id": uuid.uuid4().hex, "task_key": "gui"}
        deadline, attempt, last = time.monotonic() + retry_timeout, 0, ""
        while True:
            try:
                r = self.http.post(f"{self.url}/allocate", json=body)
                if r.status_code == 200:
                    return r.json()["lease_id"]
                if r.status_code not in (429, 502, 503):
                    self.http.close()
                    raise GuiPoolError(self._message(r, "allocate"))
                last, wait = self._message(r, "allocate"), float(r.headers.get("retry-after") or 0)
            except httpx.TransportError as exc:
                last, wait = f"allocate on {self.url}: {type(exc).__name__}: {exc}", 0.0
            wait = max(wait, min(10.0, 0.25 * 2 ** attempt) * random.uniform(0.5, 1.0))
            if time.monotonic() + wait > deadline:
                self.http.close()
                raise GuiPoolError(f"no GUI environment after {retry_timeout:g} s; last: {last}")
            time.sleep(wait)
            attempt += 1

    @staticmethod
    def _message(r: httpx.Response, what: str) -> str:
        try:
            err = r.json().get("error") or {}
        except ValueError:
            err = {}
        return f"{what}: HTTP {r.status_code} {err.get('code') or ''}: {err.get('message') or r.text[:200]}"

    def _post(self, path: str, **payload: Any) -> dict:
        if self.closed:
            raise GuiPoolError(f"{path}: the lease is closed")
        try:
            r = self.http.post(f"{self.url}/{path}", json={"lease_id": self.lease_id, **payload})
        except httpx.TransportError as exc:
            raise GuiPoolError(f"{path} on {self.url}: {type(exc).__name__}: {exc}") from exc
        if r.status_code != 200:
            raise GuiPoolError(self._message(r, path))
        return r.json()

    def reset(self, task_config: dict) -> dict:
        """``/reset``: ``{"observation", "info"}``."""
        return self._post("reset", task_config=task_config)

    def get_obs(self) -> dict:
        """``/get_obs``: the observation."""
        return self._post("get_obs")["observation"]

    def step(self, action: Any, sleep_after_execution: float = 0.0) -> tuple[dict, float, bool, dict]:
        """``/step``: ``(observation, reward, done, info)``."""
        out = self._post("step", action=action, sleep_after_execution=sleep_after_execution)
        return out["observation"], float(out["reward"]), bool(out["done"]), out.get("info") or {}

    def evaluate(self) -> float:
        """``/evaluate``: the score."""
        return float(self._post("evaluate")["score"])

    def close(self) -> None:
        """``/close`` (idempotent; a failure is ignored: the lease expires on the server)."""
        if self.closed:
            return
        try:
            self._post("close")
        except GuiPoolError:
            pass
        finally:
            self.closed = True
            self.http.close()
