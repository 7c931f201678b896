"""Sending new weights to the intercept server: ``POST /admin/update_weights_from_disk`` with
bounded retries.

* The server refused the update (4xx: the folder vanished between the trainer's save and the
  server's load, or does not hold fitting weights): not retried; the server keeps serving its
  older weights (it loads and checks completely before swapping), and the caller gets
  :class:`slime.errors.PublishFailed`.
* The server is unreachable or restarting (connection refused or dropped, 5xx): retried with
  exponential backoff (0.5 s doubling, at most 10 s apart) until ``retry_s`` seconds have passed,
  then :class:`slime.errors.PublishFailed`.
* A read timeout (the server is still loading after ``timeout_s``) is not retried either: the
  load may still finish; the caller gets :class:`slime.errors.PublishFailed`.

A failed publish never stops a run: the train loop counts it and the next step publishes newer
weights (see ``slime/train.py``).
"""

from __future__ import annotations

import logging
import time
from typing import Callable

import httpx

from openclaw_rl.tls import tls_context
from slime.errors import PublishFailed, one_line

__all__ = ["post_weights"]

log = logging.getLogger(__name__)

FIRST_DELAY_S = 0.5
MAX_DELAY_S = 10.0


def _message(r: httpx.Response) -> str:
    try:
        return str(r.json()["error"]["message"])
    except Exception:  # not the server's error JSON
        return r.text


def post_weights(server_url: str, path: str, version: int, headers: dict | None = None, retry_s: float = 60.0,
                 timeout_s: float = 600.0, on_retry: Callable[[int, str], None] | None = None,
                 gate: dict | None = None) -> int:
    """Ask the server at ``server_url`` (no ``/v1``) to load the weights in ``path`` as ``version``.

    Args:
        server_url: base URL of the intercept server.
        path: the exported weights folder (a model or LoRA adapter folder).
        version: the weight version to serve them as.
        headers: request headers (the admin key).
        retry_s: keep retrying an unreachable server for this many seconds (0: one attempt).
        timeout_s: how long one attempt may take (loading a large model).
        on_retry: called with ``(attempt, reason)`` before each wait between attempts (tests
            restart the server there).
        gate: the promotion gate's metrics of this version (``gate/*`` numbers), recorded by the
            server in its version list (``GET /admin/versions``).

    Returns:
        The weight version the server now serves.

    Raises:
        slime.errors.PublishFailed: refused, timed out, or unreachable for ``retry_s`` seconds (one
            line naming why and the number of attempts).
    """
    url = f"{server_url}/admin/update_weights_from_disk"
    body = {"model_path": str(path), "weight_version": int(version)}
    if gate:
        body["gate"] = gate
    deadline = time.monotonic() + retry_s
    delay, attempt = FIRST_DELAY_S, 0
    while True:
        attempt += 1
        try:
            r = httpx.post(url, headers=headers or {}, json=body, timeout=timeout_s, verify=tls_context())
        except httpx.TimeoutException as exc:
            if not isinstance(exc, httpx.ConnectTimeout):
                raise PublishFailed(f"weight version {version}: the server did not answer within {timeout_s:.0f} s "
                                    f"({type(exc).__name__})") from exc
            reason = f"{type(exc).__name__}: {one_line(exc)}"
        except httpx.TransportError as exc:  # refused, reset, dropped mid-request: down or restarting
            reason = f"{type(exc).__name__}: {one_line(exc)}"
        else:
            if r.status_code == 200:
                return int(r.json()["weight_version"])
            if r.status_code < 500:
                raise PublishFailed(f"the server refused weight version {version} ({r.status_code}): "
                                    f"{one_line(_message(r), 300)}")
            reason = f"{r.status_code}: {one_line(_message(r), 200)}"
        left = deadline - time.monotonic()
        if left <= 0:
            raise PublishFailed(f"weight version {version}: the server at {server_url} was unreachable for "
                                f"{retry_s:.0f} s ({attempt} attempt(s); last: {reason})")
        log.info("publishing weight version %d: attempt %d failed (%s); retrying in %.1f s", version, attempt,
                 reason, min(delay, left))
        if on_retry is not None:
            on_retry(attempt, reason)
        time.sleep(min(delay, left))
        delay = min(delay * 2, MAX_DELAY_S)
