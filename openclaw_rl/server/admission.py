"""Back-pressure: at most ``--max-running-requests`` generating, ``--max-queued-requests`` waiting.

A request past both limits is refused at once with 429 ``server_busy`` and a ``Retry-After``
header (OpenAI's rate-limit shape, which the ``openai`` SDK retries on), never left to time out;
one that finds a running slot free starts, else it waits in the queue (FIFO, asyncio's semaphore).
A slot is held for the request's whole life, a stream's included, and released when it ends,
fails or its client goes away. The counts and refusals are exported on ``GET /metrics``
(Prometheus text format, ``prometheus_client``), with the served weight version.
"""

from __future__ import annotations

import asyncio
from contextlib import asynccontextmanager

from prometheus_client import CollectorRegistry, Counter, Gauge

from openclaw_rl.server.errors import APIError

__all__ = ["AdmissionControl", "DEFAULT_MAX_QUEUED", "DEFAULT_MAX_RUNNING"]

#: defaults for the transformers engine, which serves every running request at once (batches of
#: ``--max-batch-size`` rows, round robin)
DEFAULT_MAX_RUNNING = 64
DEFAULT_MAX_QUEUED = 512


class AdmissionControl:
    """Admission of requests with running and queued limits, and their metrics.

    Args:
        max_running: requests generating at once (>= 1).
        max_queued: requests waiting for a running slot (>= 0).
        retry_after: seconds suggested in ``Retry-After`` when refusing.

    Attributes:
        registry: the ``prometheus_client`` registry of this server (``GET /metrics``).
    """

    def __init__(self, max_running: int = DEFAULT_MAX_RUNNING, max_queued: int = DEFAULT_MAX_QUEUED,
                 retry_after: float = 1.0):
        if max_running < 1 or max_queued < 0:
            raise ValueError(f"need max_running >= 1 and max_queued >= 0, got {max_running}, {max_queued}")
        self.max_running, self.max_queued, self.retry_after = int(max_running), int(max_queued), float(retry_after)
        self.running = self.queued = 0
        self._sems: dict[asyncio.AbstractEventLoop, asyncio.Semaphore] = {}
        self.registry = CollectorRegistry()
        self._g_running = Gauge("openclaw_requests_running", "chat requests generating now", registry=self.registry)
        self._g_queued = Gauge("openclaw_requests_queued", "chat requests waiting for a running slot",
                               registry=self.registry)
        self._c_rejected = Counter("openclaw_requests_rejected", "chat requests refused with 429 (server busy)",
                                   registry=self.registry)
        self._c_admitted = Counter("openclaw_requests_admitted", "chat requests admitted", registry=self.registry)
        self.weight_version = Gauge("openclaw_weight_version", "weight version being served", registry=self.registry)
        Gauge("openclaw_max_running_requests", "--max-running-requests", registry=self.registry).set(max_running)
        Gauge("openclaw_max_queued_requests", "--max-queued-requests", registry=self.registry).set(max_queued)

    def _sem(self) -> asyncio.Semaphore:
        loop = asyncio.get_running_loop()
        if loop not in self._sems:
            self._sems = {loop: asyncio.Semaphore(self.max_running)}
        return self._sems[loop]

    def _update(self) -> None:
        self._g_running.set(self.running)
        self._g_queued.set(self.queued)

    @asynccontextmanager
    async def slot(self):
        """Hold a running slot for the block (waiting in the queue when all are taken).

        Raises:
            APIError: 429 ``server_busy`` with ``Retry-After`` when the running slots and the
                queue are all full.
        """
        sem = self._sem()
        if self.running >= self.max_running and self.queued >= self.max_queued:
            self._c_rejected.inc()
            raise APIError(429, f"the server is busy ({self.running} requests running, {self.queued} queued); "
                           f"retry after {self.retry_after:g} s", type_="rate_limit_error", code="server_busy",
                           headers={"Retry-After": f"{self.retry_after:g}"})
        self.queued += 1
        self._update()
        try:
            await sem.acquire()
        finally:
            self.queued -= 1
        self.running += 1
        self._c_admitted.inc()
        self._update()
        try:
            yield
        finally:
            self.running -= 1
            sem.release()
            self._update()
