"""SIGTERM inside :func:`openclaw_rl.interrupt.sigterm_unwinds`, including while the main thread is
inside the import machinery, where an exception raised by a signal handler is printed as "ignored"
and lost (a check was seen to run on after ``kill`` for that reason)."""

from __future__ import annotations

import os
import signal
import time

import pytest

from openclaw_rl.interrupt import Terminated, sigterm_unwinds


def _frame_in(filename: str):
    ns: dict = {}
    exec(compile("import sys\nframe = sys._getframe()", filename, "exec"), ns)
    return ns["frame"]


def test_sigterm_raises_terminated_in_ordinary_code():
    with pytest.raises(Terminated), sigterm_unwinds():
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(5)


def test_sigterm_inside_an_import_callback_is_delivered_again_and_still_unwinds():
    with sigterm_unwinds():
        handler = signal.getsignal(signal.SIGTERM)
        # what the handler sees when the signal lands in importlib's module-lock callback: raising
        # there is lost, so it must not raise; the process must still unwind right after
        try:
            handler(signal.SIGTERM, _frame_in("<frozen importlib._bootstrap>"))
        except Terminated:
            pytest.fail("Terminated raised inside the import machinery, where Python drops it")
        with pytest.raises(Terminated):
            deadline = time.time() + 5
            while time.time() < deadline:
                time.sleep(0.01)
