"""What happens when a generate or reward plugin (or a judge) raises during training.

One failing sample never stops a run: :func:`mark_failed` sets its status to
:attr:`~slime.record.sample.SampleStatus.FAILED` (the backend never trains on it), zeroes its loss mask,
gives it reward 0.0 and keeps the error and traceback in ``metadata``; the traceback goes to the
log. A :class:`FailureBudget` counts attempts and failures per step and raises
:class:`PluginFailureError` when more than ``--max-plugin-failure-fraction`` of a step failed.
"""

from __future__ import annotations

import logging
import threading
import traceback

from slime.errors import LossPluginError, error_line, one_line
from slime.plugins.loader import PluginError
from slime.record.sample import Sample, SampleStatus

__all__ = ["FailureBudget", "PluginFailureError", "mark_failed", "plugin_error_message"]

log = logging.getLogger(__name__)


class PluginFailureError(RuntimeError):
    """Too many samples of one step failed in a plugin; the run stops (one-line message)."""


def mark_failed(sample: Sample, stage: str, exc: BaseException, where: str | None = None) -> Sample:
    """Mark ``sample`` failed in ``stage`` (e.g. ``"--custom-rm-path x.py:reward"``).

    Sets ``status = FAILED``, ``reward = 0.0``, an all-zero ``loss_mask``, and
    ``metadata["error"]`` / ``metadata["traceback"]``; logs the traceback at ERROR level, naming
    the sample by ``where`` (default its ``turn_id``). Returns the same sample.
    """
    tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__, limit=8))
    log.error("%s failed on sample %s; it is marked failed and not trained:\n%s",
              stage, where or sample.turn_id or "?", tb)
    sample.status = SampleStatus.FAILED
    sample.reward = 0.0
    sample.loss_mask = [0] * sample.response_length
    sample.metadata["error"] = f"{stage}: {error_line(exc)}"
    sample.metadata["traceback"] = tb
    return sample


class FailureBudget:
    """Counts a step's plugin attempts and failures; refuses more than ``max_fraction`` failed.

    Thread-safe. A *window* is one step: :meth:`check` with ``end_of_step=True`` (or once
    ``step_size`` attempts were counted) compares ``failures / attempts`` with ``max_fraction``
    and starts a new window.

    Args:
        max_fraction: ``--max-plugin-failure-fraction`` in [0, 1].
        what: the plugin or judge, for the message (``"--custom-rm-path x.py:reward"``).
        step_size: attempts that make one step's worth (``--rollout-batch-size``); 0 disables the
            automatic window end.
    """

    def __init__(self, max_fraction: float, what: str, step_size: int = 0):
        self.max_fraction, self.what, self.step_size = float(max_fraction), what, int(step_size)
        self.attempts = self.failures = 0
        self.total_attempts = self.total_failures = 0
        self.last_error: str | None = None
        self._lock = threading.Lock()

    def record(self, failed: bool, error: str | None = None) -> None:
        """Count one attempt (and its failure, with its one-line error)."""
        with self._lock:
            self.attempts += 1
            self.total_attempts += 1
            if failed:
                self.failures += 1
                self.total_failures += 1
                self.last_error = error or self.last_error

    def check(self, end_of_step: bool = False) -> None:
        """End the window if the step is complete; raise if too much of it failed.

        Raises:
            PluginFailureError: ``N of M samples failed in <what> in one step (more than
                --max-plugin-failure-fraction F); last error: ...``.
        """
        with self._lock:
            attempts, failures = self.attempts, self.failures
            full = end_of_step or (self.step_size > 0 and attempts >= self.step_size)
            if not full or attempts == 0:
                return
            self.attempts = self.failures = 0
        if failures / attempts > self.max_fraction:
            raise PluginFailureError(
                f"{failures} of {attempts} samples failed in {self.what} in one step (more than "
                f"--max-plugin-failure-fraction {self.max_fraction:g}); the run stops. Last error: "
                f"{self.last_error}")


def plugin_error_message(exc: BaseException) -> str | None:
    """The one-line message of a plugin failure that stopped a run, else ``None``.

    Looks through Ray's task errors (``.cause``) and chained exceptions for a
    :class:`PluginFailureError`, :class:`slime.errors.LossPluginError` or
    :class:`slime.plugins.loader.PluginError`.
    """
    seen: set[int] = set()
    todo: list[BaseException | None] = [exc]
    while todo:
        e = todo.pop()
        if e is None or id(e) in seen:
            continue
        seen.add(id(e))
        cause = getattr(e, "cause", None)
        if isinstance(cause, BaseException):
            todo.append(cause)
        elif isinstance(e, (PluginFailureError, LossPluginError, PluginError)):
            return one_line(e)
        todo += [e.__cause__, e.__context__]
    return None
