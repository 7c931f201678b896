"""SIGTERM unwinds a long-running command the way Ctrl-C does.

Python's default SIGTERM ends the process at once: the ``with`` and ``finally`` blocks that started
a policy server, a Ray cluster or simulated-user threads never run, and those processes outlive
the command that started them. Inside :func:`sigterm_unwinds`, SIGTERM raises :class:`Terminated`
(a :class:`KeyboardInterrupt`) in the main thread instead, so every such block stops what it
started. Used by ``openclaw-rl eval`` and the main job (``make run``); exit code 143 by convention
(128 + SIGTERM).
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["SIGTERM_EXIT", "Terminated", "sigterm_unwinds"]

#: the exit code of a command ended by SIGTERM (128 + 15)
SIGTERM_EXIT = 143


class Terminated(KeyboardInterrupt):
    """Raised in the main thread on SIGTERM inside :func:`sigterm_unwinds`."""


@contextmanager
def sigterm_unwinds() -> Iterator[None]:
    """While inside: SIGTERM raises :class:`Terminated` (the previous handler is put back after).
    A no-op outside the main thread (``signal.signal`` only works there)."""
    def handler(signum, frame):
        if frame is not None and frame.f_code.co_filename.startswith("<frozen importlib"):
            # inside the import machinery's callbacks (a module lock's weakref callback) Python
            # prints an exception raised here as "ignored" and goes on: deliver the signal again
            # once the import has moved on, so it unwinds from ordinary code
            threading.Timer(0.05, os.kill, (os.getpid(), signum)).start()
            return
        raise Terminated()

    try:
        previous = signal.signal(signal.SIGTERM, handler)
    except ValueError:  # not the main thread
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
