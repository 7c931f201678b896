"""Calling a hook that may be sync or ``async``: the one adapter every hook loader uses.

Plugins (rollout, generate, reward) may be plain functions, ``async def`` functions, or plain
functions that return an awaitable. :func:`call_async` calls any of them from a coroutine (a
plain function runs in a worker thread, so it never blocks the event loop); :func:`call_sync`
calls any of them from plain code (an awaitable result is run to completion on a fresh loop).
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable
from typing import Any

__all__ = ["call_async", "call_sync"]


async def call_async(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Await ``fn(*args, **kwargs)`` whatever its kind; returns its (awaited) result.

    Raises:
        Exception: whatever ``fn`` raised.
    """
    if inspect.iscoroutinefunction(fn):
        return await fn(*args, **kwargs)
    out = await asyncio.to_thread(fn, *args, **kwargs)
    return await out if inspect.isawaitable(out) else out


def call_sync(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Call ``fn(*args, **kwargs)`` from synchronous code; an awaitable result is run with
    :func:`asyncio.run` (so this must not be called from inside a running event loop).

    Raises:
        Exception: whatever ``fn`` raised.
    """
    out = fn(*args, **kwargs)
    if inspect.isawaitable(out):
        async def _wait():
            return await out
        return asyncio.run(_wait())
    return out
