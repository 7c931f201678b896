"""Capture failures: counted on ``/metrics``, logged at most once a minute, never a failed request.

When the store's disk is full, read-only or failing (``sqlite3.OperationalError`` such as
``database or disk is full``, ``attempt to write a readonly database``, ``disk I/O error``, or an
``OSError``), serving goes on: the turn is not recorded, each failed store operation counts on
``openclaw_capture_failures_total{stage, error}`` (``stage``: ``attribute``, ``link``, ``record``
or ``sweep``; ``error``: SQLite's error name such as ``SQLITE_FULL``, or the errno name), and the
log gets one line per :attr:`CaptureFailures.log_interval` (60 s) with the count since the last
line, then one line when capture works again. The store reopens its connection after a failed
write (:class:`openclaw_rl.capture.store.TrajectoryStore`), so capture resumes by itself once the
disk recovers; nothing recorded before is touched (a failed transaction is rolled back).
"""

from __future__ import annotations

import errno
import logging
import sqlite3
import threading
import time

from prometheus_client import CollectorRegistry, Counter

log = logging.getLogger(__name__)

__all__ = ["CAPTURE_ERRORS", "CaptureFailures", "error_name"]

#: the errors a failing disk raises on the capture path
CAPTURE_ERRORS = (sqlite3.Error, OSError)


def error_name(exc: BaseException) -> str:
    """A short, bounded label for an error: SQLite's name (``SQLITE_FULL``, ``SQLITE_READONLY``,
    ``SQLITE_IOERR_WRITE``...), the errno name (``ENOSPC``, ``EROFS``), else the class name."""
    name = getattr(exc, "sqlite_errorname", None)
    if name:
        return str(name)
    if isinstance(exc, OSError) and exc.errno in errno.errorcode:
        return errno.errorcode[exc.errno]
    return type(exc).__name__


class CaptureFailures:
    """Counts and reports capture failures (thread-safe).

    Args:
        registry: the ``prometheus_client`` registry of ``/metrics`` (default: a private one).
        log_interval: seconds between two failure lines in the log.

    Attributes:
        total: failures so far.
    """

    def __init__(self, registry: CollectorRegistry | None = None, log_interval: float = 60.0):
        self.log_interval = float(log_interval)
        self._counter = Counter("openclaw_capture_failures", "store operations of capture that failed (the turn "
                                "or link was not recorded; serving went on)", ["stage", "error"],
                                registry=registry or CollectorRegistry())
        self._lock = threading.Lock()
        self.total = 0
        self._unreported = 0
        self._last_log: float | None = None
        self._failing = False

    def failed(self, stage: str, exc: BaseException) -> None:
        """Count one failed store operation of ``stage``; log it unless a line was written less
        than :attr:`log_interval` seconds ago."""
        name = error_name(exc)
        self._counter.labels(stage=stage, error=name).inc()
        with self._lock:
            self.total += 1
            self._unreported += 1
            self._failing = True
            now = time.monotonic()
            if self._last_log is not None and now - self._last_log < self.log_interval:
                return
            self._last_log, count, self._unreported = now, self._unreported, 0
        log.error("capture failed (%s in %s: %s): serving goes on, the turn is not recorded; %d capture "
                  "failure(s) since the last report, %d in all (next report in %g s at the earliest)",
                  name, stage, exc, count, self.total, self.log_interval)

    def succeeded(self) -> None:
        """A turn was recorded: after failures, say once that capture works again."""
        if not self._failing:
            return
        with self._lock:
            if not self._failing:
                return
            self._failing, count, self._unreported = False, self._unreported, 0
        log.warning("capture recovered: turns are recorded again (%d capture failure(s) in all; %d since the "
                    "last report)", self.total, count)
