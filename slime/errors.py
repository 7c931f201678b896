"""One-line error text: the one way every part of the trainer flattens an exception or a message.

* :func:`one_line`: any text with all whitespace runs (newlines included) collapsed to one space.
* :func:`error_line`: ``"Type: message"`` of an exception on one line (what a failed sample, a
  failed judgement or a plugin error records).
* :class:`PublishFailed`: a weight publish that did not happen and that the run survives.
* :class:`LossPluginError`: a loss function that raised or returned an unusable loss (raised by
  :func:`slime.guards.loss.checked_loss`; here so that code classifying failures needs no torch).
* :func:`root_cause_line`: the innermost ``Name: message`` of an exception that stopped a run,
  looking through Ray's task and actor errors (``.cause``) and tracebacks embedded in messages.
"""

from __future__ import annotations

import re
import traceback

__all__ = ["LossPluginError", "PublishFailed", "error_line", "one_line", "root_cause_line"]


class PublishFailed(RuntimeError):
    """New weights did not reach serving (the server refused them, e.g. their folder vanished, or
    it stayed unreachable past the retry bound); serving keeps its older weights. A rollout
    service's ``publish_weights`` raises it for a failure the run survives: the train loop logs
    one line, counts it (``publish/failures``) and goes on; the next step publishes newer weights."""


class LossPluginError(RuntimeError):
    """The loss function raised, or returned a non-finite loss or one without a gradient graph.

    Raised by :meth:`TrainingBackend.train_step` before ``optimizer.step()``: the weights and the
    optimizer state are unchanged and the gradients are cleared. ``function`` names the loss.
    """

    def __init__(self, function: str, message: str):
        super().__init__(f"loss function {function}: {message}; optimizer step skipped, weights unchanged")
        self.function = function
        self.detail = message

    def __reduce__(self):  # picklable across Ray actors (the default would call __init__(full message))
        return (type(self), (self.function, self.detail))


_ERROR_LINE = re.compile(r"^(?:[\w.]+\.)?(\w*(?:Error|Exception|Exit)\w*): (.+)$")


def one_line(text: object, limit: int | None = None) -> str:
    """``str(text)`` with every run of whitespace replaced by one space, cut to ``limit`` characters."""
    out = " ".join(str(text).split())
    return out if limit is None else out[:limit]


def error_line(exc: BaseException, limit: int | None = 500) -> str:
    """``"Type: message"`` of ``exc`` on one line (at most ``limit`` characters; None: no limit)."""
    return one_line(f"{type(exc).__name__}: {exc}", limit)


def root_cause_line(exc: BaseException) -> str:
    """One line for an exception that stopped a run.

    Follows ``.cause`` links (Ray task / actor errors) to the innermost exception, then takes the
    last ``Name: message`` line of its formatted traceback (an actor's creation error embeds the
    remote traceback in its message); without one, ``"Type: message"`` of the exception.
    """
    seen, e = set(), exc
    while getattr(e, "cause", None) is not None and id(e) not in seen:  # Ray task errors
        seen.add(id(e))
        e = e.cause
    text = "".join(traceback.format_exception(e)) if e is not exc else str(exc)
    lines = [m.group(1) + ": " + m.group(2) for m in map(_ERROR_LINE.match, text.splitlines()) if m]
    if e is exc and not lines:
        return error_line(exc, None)
    return one_line(lines[-1]) if lines else error_line(e, None)
