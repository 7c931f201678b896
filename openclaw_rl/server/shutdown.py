"""Graceful shutdown of ``python -m openclaw_rl.server`` on SIGTERM or SIGINT (Ctrl-C).

What happens, in order:

1. **Stop accepting.** uvicorn closes the listening socket at once (a new connection is refused:
   the ``openai`` SDK sees a connection error and retries, against a restarted server or a
   second replica) and closes idle keep-alive connections; a connection with a request in
   flight is closed after its response.
2. **Drain.** Requests in flight (generating or waiting for an admission slot) go on for up to
   ``--shutdown-grace-seconds`` (default 30). A request that ends within the grace is served in
   full and recorded as usual; the process leaves as soon as the last one has ended.
3. **Cut.** When the grace runs out, every generation still running stops at its next decode
   step and ends like a reply cut by a server limit: finish reason ``length`` (OpenAI's "the
   reply was cut by a token limit"; here the limit is the server's remaining lifetime), the
   final chunk and ``data: [DONE]`` on a stream, the normal JSON otherwise, and the turn is
   committed to the store like any finished turn (the token-exact ids and logprobs of what was
   sampled). A request that has not started generating by then (still queued for a running
   slot) gets 503 ``server_shutting_down`` with ``Retry-After``, an OpenAI-style error.
4. **Close.** The app's lifespan ends: the idle-session sweeper stops, the engine stops, the
   store is closed (:meth:`TrajectoryStore.close`), and the process exits 0.

A restart on the same ``--rl-buffer-dir`` resumes: sessions are found again from the store
(headers, keys or continuation matching), and the next request of a conversation links the
previous turn's next state. A second Ctrl-C forces an immediate exit (finished turns are
durable anyway); SIGKILL at any moment loses only the turns still being generated.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

import uvicorn

from openclaw_rl.server.errors import APIError

log = logging.getLogger(__name__)

__all__ = ["DEFAULT_SHUTDOWN_GRACE", "CUT_BOUND_SECONDS", "Drain", "GracefulServer"]

#: default ``--shutdown-grace-seconds``
DEFAULT_SHUTDOWN_GRACE = 30.0
#: after the grace, how long cut requests get to commit and send their last chunk before uvicorn
#: cancels what is left (a cut ends at the next decode step, so this is a safety net)
CUT_BOUND_SECONDS = 15.0


class Drain:
    """Shutdown state shared by the server (:class:`GracefulServer`) and the chat service.

    Args:
        grace_seconds: how long requests in flight may go on after the shutdown signal (>= 0).

    Attributes:
        draining: the shutdown signal arrived (no new connections are accepted).
        cut: the grace ran out: running generations stop at their next decode step and
            requests not yet generating get 503.
    """

    def __init__(self, grace_seconds: float = DEFAULT_SHUTDOWN_GRACE):
        if grace_seconds < 0:
            raise ValueError(f"the shutdown grace must be >= 0 seconds, got {grace_seconds}")
        self.grace_seconds = float(grace_seconds)
        self.draining = self.cut = False
        self._timer: asyncio.TimerHandle | None = None

    def begin(self) -> None:
        """Start the drain (called on the event loop); the cut follows after the grace."""
        if self.draining:
            return
        self.draining = True
        log.warning("shutting down: no new connections; requests in flight get %g s to finish",
                    self.grace_seconds)
        self._timer = asyncio.get_running_loop().call_later(self.grace_seconds, self.expire)

    def expire(self) -> None:
        """The grace is over: cut running generations (finish reason ``length``)."""
        if not self.cut:
            self.cut = True
            log.warning("shutdown grace of %g s is over: ending the generations still running "
                        "(finish reason 'length', turns recorded)", self.grace_seconds)

    def check(self) -> None:
        """Refuse a request that would start generating after the cut.

        Raises:
            APIError: 503 ``server_shutting_down`` with ``Retry-After`` once :attr:`cut` is set.
        """
        if self.cut:
            raise APIError(503, "the server is shutting down; retry against the restarted server",
                           type_="server_error", code="server_shutting_down", headers={"Retry-After": "5"})


class GracefulServer(uvicorn.Server):
    """``uvicorn.Server`` with the drain above; exits normally (code 0) after a signal.

    Args:
        config: the uvicorn config; its ``timeout_graceful_shutdown`` is set to the grace plus
            :data:`CUT_BOUND_SECONDS` (uvicorn cancels what is left after that).
        drain: the :class:`Drain` the chat service checks.
    """

    def __init__(self, config: uvicorn.Config, drain: Drain):
        config.timeout_graceful_shutdown = int(drain.grace_seconds + CUT_BOUND_SECONDS + 0.999)
        super().__init__(config)
        self.drain = drain

    async def shutdown(self, sockets=None) -> None:
        """Start the drain's grace timer, then uvicorn's shutdown (stop accepting, wait for the
        connections in flight, run the lifespan's shutdown)."""
        self.drain.begin()
        await super().shutdown(sockets)

    @contextlib.contextmanager
    def capture_signals(self):
        """uvicorn's signal capture, without re-raising the signal after a clean shutdown
        (which would end the process with -SIGTERM or KeyboardInterrupt instead of 0)."""
        with super().capture_signals():
            try:
                yield
            finally:
                self._captured_signals.clear()
