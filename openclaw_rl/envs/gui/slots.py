"""Warm browsers for the GUI pool: prewarmed, handed to sessions, recycled after close.

:class:`BrowserSlots` keeps up to ``keep_warm`` idle browsers. :meth:`acquire` takes a live idle
one (or starts one); :meth:`release` gets it back when the session closes: a healthy browser goes
to ``about:blank`` and back to the idle list (while there is room), a crashed or surplus one is
killed (its process group, by pid), and a replacement is started in the background so the warm
count holds. Every browser started is tracked by pid (:meth:`pids`), so the server and tests can
check that nothing leaks.
"""

from __future__ import annotations

import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from openclaw_rl.envs.gui.backends import make_browser
from openclaw_rl.envs.gui.browser import Browser, BrowserError
from openclaw_rl.envs.gui.config import GuiConfig

__all__ = ["BrowserSlots"]

log = logging.getLogger(__name__)


class BrowserSlots:
    """Idle browsers kept warm (module docstring).

    Args:
        config: screen size (every browser's viewport).
        keep_warm: idle browsers to keep (``GUI_PREWARM_ENVS``; 0: start one per session).
        capacity: the most browsers alive at once, idle and leased (warming never exceeds it;
            None: no bound).
        prewarm_concurrency: browsers started at once while warming.
    """

    def __init__(self, config: GuiConfig, keep_warm: int = 0, capacity: int | None = None,
                 prewarm_concurrency: int = 4):
        self.config, self.keep_warm, self.capacity = config, max(0, int(keep_warm)), capacity
        self._idle: list[Browser] = []
        self._live: dict[int, Browser] = {}
        self._lock = threading.Condition()
        self._warming = 0
        self._stopped = False
        self._executor = ThreadPoolExecutor(max(1, prewarm_concurrency), thread_name_prefix="gui-warm")
        self.started = self.recycled = self.killed = self.crashed = 0
        self.launch_s: list[float] = []

    def _launch(self) -> Browser:
        browser = make_browser(self.config.width, self.config.height, self.config.backend)
        with self._lock:
            self._live[browser.pid] = browser
            self.started += 1
            self.launch_s.append(browser.launch_s)
        return browser

    def _warm_one(self) -> None:
        try:
            browser = self._launch()
        except BrowserError as exc:
            log.warning("prewarming a browser failed: %s", exc)
            with self._lock:
                self._warming -= 1
                self._lock.notify_all()
            return
        with self._lock:
            self._warming -= 1
            keep = not self._stopped and len(self._idle) < self.keep_warm
            if keep:
                self._idle.append(browser)
            self._lock.notify_all()
        if not keep:
            self._kill(browser)

    def prewarm(self) -> None:
        """Start browsers in the background until ``keep_warm`` are idle or warming, within
        ``capacity`` (returns at once)."""
        with self._lock:
            missing = self.keep_warm - len(self._idle) - self._warming
            if self.capacity is not None:
                missing = min(missing, self.capacity - len(self._live) - self._warming)
            if self._stopped or missing <= 0:
                return
            self._warming += missing
        for _ in range(missing):
            self._executor.submit(self._warm_one)

    def acquire(self) -> Browser:
        """A live browser for a session: an idle one, else one being warmed (waited for), else a
        fresh one; then warming resumes.

        Raises:
            BrowserError: a fresh browser did not start.
        """
        browser = None
        deadline = time.monotonic() + 60
        with self._lock:
            while browser is None:
                while self._idle:
                    cand = self._idle.pop()
                    if cand.alive:
                        browser = cand
                        break
                    self._live.pop(cand.pid, None)
                    cand.kill()
                if browser is not None or self._warming == 0 or time.monotonic() > deadline:
                    break
                self._lock.wait(1.0)
        if browser is None:
            browser = self._launch()
        self.prewarm()
        return browser

    def release(self, browser: Browser, healthy: bool) -> None:
        """Take a browser back from a closed session (module docstring)."""
        if healthy and browser.alive:
            try:
                browser.blank()
            except BrowserError:
                healthy = False
        with self._lock:
            keep = healthy and browser.alive and not self._stopped and len(self._idle) < self.keep_warm
            if keep:
                self._idle.append(browser)
                self.recycled += 1
            elif not healthy:
                self.crashed += 1
        if not keep:
            self._kill(browser)
        self.prewarm()

    def _kill(self, browser: Browser) -> None:
        browser.kill()
        with self._lock:
            self._live.pop(browser.pid, None)
            self.killed += 1

    def pids(self) -> list[int]:
        """Pids of every browser started and not yet killed (idle and leased)."""
        with self._lock:
            return sorted(self._live)

    def status(self) -> dict:
        """``{warm, warming, live, pids, keep_warm, started, recycled, killed, crashed, launch_s_mean}``."""
        with self._lock:
            mean = sum(self.launch_s) / len(self.launch_s) if self.launch_s else None
            return {"warm": len(self._idle), "warming": self._warming, "live": len(self._live),
                    "pids": sorted(self._live),
                    "keep_warm": self.keep_warm, "started": self.started, "recycled": self.recycled,
                    "killed": self.killed, "crashed": self.crashed,
                    "launch_s_mean": None if mean is None else round(mean, 3)}

    def close_all(self, wait: float = 30.0) -> None:
        """Stop warming and kill every browser this pool started (idle and leased)."""
        with self._lock:
            self._stopped = True
        self._executor.shutdown(wait=True, cancel_futures=True)
        deadline = time.monotonic() + wait
        with self._lock:
            browsers = list(self._live.values())
            self._idle.clear()
        for browser in browsers:
            self._kill(browser)
            if time.monotonic() > deadline:
                break
