"""Bounded output capture: keep the head and the tail of a stream, count what was dropped."""

from __future__ import annotations

import os
import select
import time


class HeadTail:
    """Keeps at most ``limit`` bytes of a stream: the first half and the last half.

    Args:
        limit: bytes kept in all (>= 2); what falls between head and tail is dropped and counted.
    """

    def __init__(self, limit: int):
        self.limit = max(2, int(limit))
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def add(self, data: bytes) -> None:
        """Append ``data`` to the stream."""
        self.total += len(data)
        half = self.limit // 2
        room = half - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        if data:
            self.tail += data
            if len(self.tail) > self.limit - half:
                del self.tail[: len(self.tail) - (self.limit - half)]

    @property
    def truncated(self) -> bool:
        """Whether bytes were dropped."""
        return self.total > len(self.head) + len(self.tail)

    def text(self) -> str:
        """The kept bytes decoded as UTF-8 (errors replaced); a marker line where bytes were dropped."""
        if not self.truncated:
            return (bytes(self.head) + bytes(self.tail)).decode("utf-8", errors="replace")
        dropped = self.total - len(self.head) - len(self.tail)
        return (bytes(self.head).decode("utf-8", errors="replace")
                + f"\n[... output truncated: {dropped} bytes omitted ...]\n"
                + bytes(self.tail).decode("utf-8", errors="replace"))


def pump(fd: int, sink: HeadTail, deadline: float, *, quiet: float | None = None,
         stop=None, done=None) -> str:
    """Read ``fd`` into ``sink`` until EOF, the deadline, quiet, or ``stop(sink)`` says so.

    Args:
        fd: a readable file descriptor (pipe or pty master), blocking or not.
        sink: where the bytes go.
        deadline: ``time.monotonic()`` value to give up at.
        quiet: seconds without new bytes after which to return (``None``: wait for EOF).
        stop: optional predicate on the bytes read so far (``bytes``) that ends reading early.
        done: optional predicate polled every 50 ms: once true (the writer process exited while
            something it started in the background still holds the pipe), read only what
            arrives within 0.05 s of quiet (at most 0.5 s more) and return ``"done"``.

    Returns:
        ``"eof"``, ``"deadline"``, ``"quiet"``, ``"stop"`` or ``"done"``.
    """
    seen = bytearray()
    last = time.monotonic()
    finishing = False
    while True:
        now = time.monotonic()
        if now >= deadline:
            return "done" if finishing else "deadline"
        if done is not None and not finishing and done():
            finishing, quiet, last = True, 0.05, now
            deadline = min(deadline, now + 0.5)
        wait = deadline - now
        if done is not None:
            wait = min(wait, 0.05)
        if quiet is not None:
            wait = min(wait, max(0.0, last + quiet - now))
            if wait <= 0:
                return "done" if finishing else "quiet"
        ready, _, _ = select.select([fd], [], [], wait)
        if not ready:
            continue
        try:
            data = os.read(fd, 65536)
        except OSError:  # a pty master reads EIO once the other side is closed
            return "eof"
        if not data:
            return "eof"
        sink.add(data)
        last = time.monotonic()
        if stop is not None:
            seen += data
            if len(seen) > 65536:
                del seen[:-4096]
            if stop(bytes(seen)):
                return "stop"
