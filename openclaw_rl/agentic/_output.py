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
         stop=None) -> str:
    """Read ``fd`` into ``sink`` until EOF, the deadline, quiet, or ``stop(sink)`` says so.

    Args:
        fd: a readable file descriptor (pipe or pty master), blocking or not.
        sink: where the bytes go.
        deadline: ``time.monotonic()`` value to give up at.
        quiet: seconds without new bytes after which to return (``None``: wait for EOF).
        stop: optional predicate on the bytes read so far (``bytes``) that ends reading early.

    Returns:
        ``"eof"``, ``"deadline"``, ``"quiet"`` or ``"stop"``.
    """
    seen = bytearray()
    last = time.monotonic()
    while True:
        now = time.monotonic()
        if now >= deadline:
            return "deadline"
        wait = deadline - now
        if quiet is not None:
            wait = min(wait, max(0.0, last + quiet - now))
            if wait <= 0:
                return "quiet"
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
