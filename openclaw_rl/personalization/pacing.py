"""Pacing: a person's next session starts once what they said so far has been learned from.

A person does not open ten sessions a second: between two sessions the judges and the trainer
catch up. On CPU the simulated users would otherwise outrun the trainer many times over and every
method would score like no training at all. :class:`Pacer` is the users' ``before_session`` hook
(:class:`openclaw_rl.main_job.user.UserDriver`): before counted session ``i > 0`` starts it waits
until the store (:class:`openclaw_rl.capture.store.TrajectoryStore`) shows the run caught up:

* ``train`` (``combine``, ``rl``, ``opd``): no turn is waiting to be judged (``ready``,
  ``judging``) or to be taken by the trainer (``judged``), and the trainer is not in a step (fewer
  than ``batch_size`` turns ``claimed``): every full batch the sessions so far made was trained on.
  Publishing the step's weights follows the step, so a session can still meet the previous version.
* ``judge`` (``memory``): no turn is waiting to be judged, and, when a new lesson was filed, the
  server's lesson cache (:data:`openclaw_rl.capture.lessons.LESSONS_REFRESH_S`) has expired.
* ``none``: no wait.

A wait that passes ``timeout_s`` gives up (counted in :attr:`Pacer.timeouts`), so nothing hangs.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

from openclaw_rl.capture.lessons import LESSONS_REFRESH_S
from openclaw_rl.capture.records import TurnStatus
from openclaw_rl.capture.store import TrajectoryStore

__all__ = ["PACING_MODES", "Pacer"]

PACING_MODES = ("train", "judge", "none")


class Pacer:
    """The ``before_session`` hook of a run's users (module docstring).

    Args:
        buffer_dir: the run's ``--rl-buffer-dir``. mode: one of :data:`PACING_MODES`.
        batch_size: the trainer's ``--rollout-batch-size`` (``train`` mode).
        counted: sessions ``>= counted`` (the uncounted rest, if any) never wait.
        timeout_s: the longest wait before a session starts anyway.
        poll_s: how often the store is read while waiting.

    Raises:
        ValueError: unknown ``mode``.
    """

    def __init__(self, buffer_dir: Path, mode: str, batch_size: int, counted: int, timeout_s: float = 300.0,
                 poll_s: float = 0.5):
        if mode not in PACING_MODES:
            raise ValueError(f"pacing mode must be one of {PACING_MODES}, got {mode!r}")
        self.buffer_dir, self.mode, self.batch_size, self.counted = Path(buffer_dir), mode, batch_size, counted
        self.timeout_s, self.poll_s = timeout_s, poll_s
        self.timeouts = 0
        self.waited_s = 0.0
        self._lessons_seen = 0
        self._lock = threading.Lock()

    def caught_up(self, counts: dict[str, int]) -> bool:
        """Whether ``counts`` (:meth:`TrajectoryStore.counts`) show the run caught up (module docstring)."""
        pending = counts.get(TurnStatus.READY, 0) + counts.get(TurnStatus.JUDGING, 0)
        if self.mode == "judge":
            return pending == 0
        return (pending + counts.get(TurnStatus.JUDGED, 0) == 0
                and counts.get(TurnStatus.CLAIMED, 0) < self.batch_size)

    def __call__(self, session: int) -> None:
        """Wait before session ``session`` until the run caught up, or ``timeout_s`` passed."""
        if self.mode == "none" or session == 0 or session >= self.counted:
            return
        t0 = time.monotonic()
        store = TrajectoryStore(self.buffer_dir)
        try:
            while not self.caught_up(store.counts()):
                if time.monotonic() - t0 > self.timeout_s:
                    with self._lock:
                        self.timeouts += 1
                    break
                time.sleep(self.poll_s)
            if self.mode == "judge":
                (lessons,) = store.read("SELECT COUNT(*) FROM lessons")[0]
                with self._lock:
                    fresh, self._lessons_seen = lessons != self._lessons_seen, lessons
                if fresh:
                    time.sleep(LESSONS_REFRESH_S)
        finally:
            store.close()
        with self._lock:
            self.waited_s += time.monotonic() - t0
