"""Engine replicas behind one intercept server: session affinity and rolling weight updates.

Each replica is one engine server (vLLM or SGLang, possibly several GPUs by tensor parallelism).
:class:`ReplicaSet` chooses the replica of each completion:

* **Session affinity.** Completions with the same affinity key (the session id) go to the same
  replica, so its prefix cache still holds the conversation when the next turn comes. The choice
  is rendezvous hashing (highest random weight, Thaler & Ravishankar 1998): every replica gets a
  score ``blake2b(key, replica url)`` and the best-scoring replica that is not being updated wins.
  It needs no table, is the same in every process, and when one replica is taken out only its
  own sessions move (each to its second choice).
* **No key.** The replica with the fewest completions in flight (ties to the first).
* **Rolling weight updates.** :meth:`ReplicaSet.drained` takes one replica out of the choice,
  waits until its completions in flight have finished (on the weights they started with), and
  gives it back after the update. The other replicas keep serving meanwhile; with a single
  replica, new completions wait (they do not fail) until it is back.

Every completion is served entirely by one replica at one weight version, so
:attr:`Replica.version` at admission is the version that produced all of its tokens.
"""

from __future__ import annotations

import asyncio
import hashlib
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator, Sequence


@dataclass(eq=False)
class Replica:
    """One engine server.

    Attributes:
        url: its base URL (``http://host:port``, no trailing slash).
        version: the weight version it serves.
        in_flight: completions running on it now.
        draining: True while it is being updated (no new completions go to it).
    """

    url: str
    version: int = 0
    in_flight: int = 0
    draining: bool = False


def affinity_score(key: str, url: str) -> int:
    """Rendezvous score of ``key`` on the replica at ``url`` (a 64-bit integer; the highest wins)."""
    digest = hashlib.blake2b(f"{key}\0{url}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big")


class ReplicaSet:
    """The replicas of one engine (see the module doc).

    Args:
        replicas: at least one :class:`Replica`; their URLs must differ.

    Raises:
        ValueError: no replica, or a URL given twice.

    Thread safety: :meth:`acquire` / :meth:`release` run on the server's event loop,
    :meth:`drained` on the weight-update thread; one lock guards the counts.
    """

    def __init__(self, replicas: Sequence[Replica]):
        if not replicas:
            raise ValueError("an engine needs at least one replica")
        urls = [r.url for r in replicas]
        if len(set(urls)) != len(urls):
            raise ValueError(f"engine replica URLs must differ, got {urls}")
        self.replicas = list(replicas)
        self._cond = threading.Condition()
        self._waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Future]] = []

    def order(self, key: str | None) -> list[Replica]:
        """Replicas in order of preference for ``key`` (all of them, draining ones included):
        by rendezvous score for a key, by fewest completions in flight without one."""
        if key is None:
            return sorted(self.replicas, key=lambda r: r.in_flight)
        return sorted(self.replicas, key=lambda r: affinity_score(key, r.url), reverse=True)

    def choose(self, key: str | None) -> Replica | None:
        """The replica a completion with ``key`` goes to now (None while every replica is being
        updated); counts nothing."""
        with self._cond:
            return next((r for r in self.order(key) if not r.draining), None)

    async def acquire(self, key: str | None) -> Replica:
        """Take a running slot on the preferred replica that is not being updated, waiting while
        every replica is. Pair with :meth:`release`."""
        while True:
            with self._cond:
                replica = next((r for r in self.order(key) if not r.draining), None)
                if replica is not None:
                    replica.in_flight += 1
                    return replica
                loop = asyncio.get_running_loop()
                woken = loop.create_future()
                self._waiters.append((loop, woken))
            await woken

    def release(self, replica: Replica) -> None:
        """End a completion that :meth:`acquire` placed on ``replica``."""
        with self._cond:
            replica.in_flight -= 1
            self._cond.notify_all()

    @contextmanager
    def drained(self, replica: Replica) -> Iterator[Replica]:
        """Blocking: take ``replica`` out of the choice, wait until its completions in flight have
        ended, yield it (update it inside), then give it back and wake waiting completions."""
        with self._cond:
            replica.draining = True
            while replica.in_flight:
                self._cond.wait()
        try:
            yield replica
        finally:
            with self._cond:
                replica.draining = False
                waiters, self._waiters = self._waiters, []
            for loop, woken in waiters:
                try:
                    loop.call_soon_threadsafe(_wake, woken)
                except RuntimeError:  # that event loop is closed: nobody waits there any more
                    pass


def _wake(future: asyncio.Future) -> None:
    if not future.done():
        future.set_result(None)
