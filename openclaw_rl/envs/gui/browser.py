"""One headless Chromium per pool slot, driven by Playwright (``SCREENSHOT_BACKEND=playwright``).

The browser is Debian's ``chromium`` (``make install`` installs it; no browser download):
:class:`Browser` starts it itself, headless, with ``--remote-debugging-port=0`` in its own session
(process group), reads the DevTools address it prints, and attaches Playwright with
``connect_over_cdp``. Owning the process gives its pid (``Browser.pid``), so closing kills exactly
its process group and a test can check that nothing is left (:func:`process_group_alive`).

Every Playwright call runs on one asyncio loop in a daemon thread with one Playwright driver for
the whole process (:class:`_Driver`); the synchronous methods here submit coroutines to it, so
they may be called from any thread (the pool server's worker threads), one browser's calls at a
time. A dead browser (crashed, killed) surfaces as :class:`BrowserCrashed` on the next call.

``SCREENSHOT_BACKEND=selenium`` drives the same Chromium through chromedriver instead
(:mod:`openclaw_rl.envs.gui.selenium_browser`); :mod:`openclaw_rl.envs.gui.backends` checks the
setting and builds the configured one.
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from typing import Any

__all__ = ["Browser", "BrowserCrashed", "BrowserError", "chromium_path", "process_group_alive"]

CHROMIUM_FLAGS = ("--headless=new", "--no-first-run", "--no-default-browser-check", "--disable-gpu",
                  "--disable-dev-shm-usage", "--disable-extensions", "--disable-background-networking",
                  "--disable-sync", "--mute-audio", "--hide-scrollbars", "--allow-file-access-from-files",
                  "--disable-features=Translate,MediaRouter", "--remote-debugging-address=127.0.0.1")


SCROLL_PX = 100  # pixels per pyautogui scroll click


class BrowserError(RuntimeError):
    """The browser could not be started or did not answer (one line)."""


class BrowserCrashed(BrowserError):
    """The browser process is gone (crashed or killed) or its connection closed."""


def chromium_path() -> str:
    """The Chromium executable: ``$CHROMIUM_PATH``, else ``chromium`` / ``chromium-browser`` on PATH.

    Raises:
        BrowserError: none found (``make install`` installs Debian's ``chromium``).
    """
    for cand in (os.environ.get("CHROMIUM_PATH"), "chromium", "chromium-browser", "/usr/bin/chromium"):
        if cand and (found := shutil.which(cand)):
            return found
    raise BrowserError("no Chromium found: install Debian's chromium (make install, or apt-get install chromium) "
                       "or set CHROMIUM_PATH")


def process_group_alive(pgid: int) -> bool:
    """True when a process of process group ``pgid`` still runs (zombies, already dead and only
    waiting for init to reap them, do not count); read from ``/proc``."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] not in (b"Z", b"X"):
            return True
    return False


class _Driver:
    """The process's Playwright driver on its own event-loop thread (started on first use)."""

    _lock = threading.Lock()
    _instance: "_Driver | None" = None

    def __init__(self):
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="playwright-loop", daemon=True)
        self.thread.start()
        from playwright.async_api import async_playwright

        self.pw = self.run(async_playwright().start(), 60)

    @classmethod
    def get(cls) -> "_Driver":
        """The shared driver (created on first call)."""
        with cls._lock:
            if cls._instance is None:
                cls._instance = cls()
            return cls._instance

    def run(self, coro, timeout: float) -> Any:
        """Run ``coro`` on the driver's loop and wait at most ``timeout`` seconds for its result.

        Raises:
            TimeoutError: it took longer (the coroutine is cancelled); whatever it raises.
        """
        fut = asyncio.run_coroutine_threadsafe(coro, self.loop)
        try:
            return fut.result(timeout)
        except TimeoutError:
            fut.cancel()
            raise


class Browser:
    """A headless Chromium with one page of ``width`` x ``height`` CSS pixels.

    Args:
        width, height: the viewport (the screen the agent sees; screenshots have this size).
        executable: the Chromium binary (default :func:`chromium_path`).
        launch_timeout: seconds to wait for Chromium's DevTools address.
        call_timeout: seconds any one browser call may take before :class:`BrowserError`.

    Raises:
        BrowserError: Chromium did not start or Playwright could not attach (nothing is left running).
    """

    def __init__(self, width: int, height: int, executable: str | None = None, launch_timeout: float = 30.0,
                 call_timeout: float = 30.0):
        self.width, self.height, self.call_timeout = int(width), int(height), float(call_timeout)
        self.started = time.monotonic()
        self.user_dir = tempfile.mkdtemp(prefix="openclaw-gui-")
        log_path = os.path.join(self.user_dir, "chromium.log")
        self._log = open(log_path, "wb")
        args = [executable or chromium_path(), *CHROMIUM_FLAGS, "--remote-debugging-port=0",
                f"--user-data-dir={self.user_dir}/profile", f"--window-size={self.width},{self.height}"]
        if os.geteuid() == 0:
            args.append("--no-sandbox")  # Chromium refuses to run as root with its sandbox
        self.proc = subprocess.Popen([*args, "about:blank"], stdout=subprocess.DEVNULL, stderr=self._log,
                                     stdin=subprocess.DEVNULL, start_new_session=True)
        self.pid = self.pgid = self.proc.pid
        self._browser = self._page = self._wd = None
        try:
            self._connect(self._devtools_url(log_path, launch_timeout), launch_timeout)
        except BaseException as exc:
            self.kill()
            if isinstance(exc, BrowserError):
                raise
            raise BrowserError(f"Chromium (pid {self.pid}) did not start: {type(exc).__name__}: {exc}") from exc
        self.launch_s = time.monotonic() - self.started

    def _devtools_url(self, log_path: str, timeout: float) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with open(log_path, "rb") as f:
                m = re.search(rb"DevTools listening on (ws://\S+)", f.read())
            if m:
                return m.group(1).decode()
            if self.proc.poll() is not None:
                with open(log_path, "rb") as f:
                    tail = f.read()[-300:].decode(errors="replace").strip().replace("\n", " | ")
                raise BrowserError(f"Chromium exited with status {self.proc.returncode}: {tail}")
            time.sleep(0.02)
        raise BrowserError(f"Chromium printed no DevTools address within {timeout:g} s")

    # -- the driver connection (the Selenium backend overrides these three) --------------------
    def _connect(self, ws: str, timeout: float) -> None:
        self._driver = _Driver.get()
        self._browser, self._page = self._driver.run(self._attach(ws), timeout)

    def _connected(self) -> bool:
        return self._browser is not None and self._browser.is_connected()

    def _disconnect(self) -> None:
        browser, self._browser = self._browser, None
        if browser is not None:
            try:
                self._driver.run(browser.close(), 5)
            except Exception:
                pass

    async def _attach(self, ws: str):
        browser = await self._driver.pw.chromium.connect_over_cdp(ws)
        context = browser.contexts[0] if browser.contexts else await browser.new_context()
        page = context.pages[0] if context.pages else await context.new_page()
        await page.set_viewport_size({"width": self.width, "height": self.height})
        return browser, page

    # -- state --------------------------------------------------------------------------------
    @property
    def alive(self) -> bool:
        """The process runs and Playwright is still connected."""
        return self.proc.poll() is None and self._connected()

    def call(self, fn, timeout: float | None = None) -> Any:
        """Run ``await fn(page)`` on the driver loop (``fn``: an async function of the page).

        Raises:
            BrowserCrashed: the process or its connection is gone.
            BrowserError: the call took longer than ``timeout`` (default ``call_timeout``).
            Exception: what Playwright raises for the call itself (e.g. a navigation timeout).
        """
        if not self.alive:
            raise BrowserCrashed(self._gone())
        try:
            return self._driver.run(fn(self._page), timeout or self.call_timeout)
        except TimeoutError as exc:
            raise BrowserError(f"the browser did not answer within {timeout or self.call_timeout:g} s") from exc
        except Exception as exc:
            if not self.alive or "closed" in str(exc).lower():
                raise BrowserCrashed(self._gone()) from exc
            raise

    def _gone(self) -> str:
        code = self.proc.poll()
        return (f"the browser (pid {self.pid}) is gone" +
                (f" (exit status {code})" if code is not None else " (connection closed)"))

    # -- operations ---------------------------------------------------------------------------
    def goto(self, url: str, timeout_s: float) -> None:
        """Load ``url`` and wait for its ``load`` event. A page that does not load in time is
        abandoned for ``about:blank`` (a pending navigation blocks screenshots and scripts).

        Raises:
            BrowserError: not loaded within ``timeout_s`` (the message says so); BrowserCrashed.
        """
        async def go(page):
            await page.goto(url, wait_until="load", timeout=timeout_s * 1000)

        try:
            self.call(go, timeout_s + 5)
        except BrowserCrashed:
            raise
        except Exception as exc:
            if "Timeout" in type(exc).__name__ or "timeout" in str(exc).lower():
                try:
                    self.blank()
                except BrowserError:
                    pass
                raise BrowserError(f"the page did not load within {timeout_s:g} s") from exc
            raise BrowserError(f"loading the page failed: {str(exc).splitlines()[0]}") from exc

    def evaluate(self, js: str, arg: Any = None) -> Any:
        """``page.evaluate(js, arg)``'s result."""
        return self.call(lambda page: page.evaluate(js, arg))

    def screenshot(self) -> bytes:
        """A PNG of the viewport (``width`` x ``height``)."""
        return self.call(lambda page: page.screenshot(type="png"))

    def perform(self, op) -> None:
        """Run one input operation (:class:`openclaw_rl.envs.gui.actions.Op`, not ``sleep``) with
        Playwright's mouse and keyboard (a point is already checked to be on the screen).

        Raises:
            BrowserCrashed, BrowserError: as :meth:`call`.
        """
        async def run(page):
            mouse, kb = page.mouse, page.keyboard
            if op.x is not None and op.kind != "drag":
                await mouse.move(op.x, op.y)
            if op.kind == "click" and op.x is not None:
                await mouse.click(op.x, op.y, button=op.button, click_count=op.clicks)
            elif op.kind == "click":  # at the current pointer
                for n in range(1, op.clicks + 1):
                    await mouse.down(button=op.button, click_count=n)
                    await mouse.up(button=op.button, click_count=n)
            elif op.kind == "drag":
                await mouse.down(button=op.button)
                await mouse.move(op.x, op.y, steps=8)
                await mouse.up(button=op.button)
            elif op.kind == "mouse_down":
                await mouse.down(button=op.button)
            elif op.kind == "mouse_up":
                await mouse.up(button=op.button)
            elif op.kind == "type":
                await kb.type(op.text)
            elif op.kind == "press":
                for _ in range(op.clicks):
                    for key in op.keys:
                        await kb.press(key)
            elif op.kind == "hotkey":
                for key in op.keys:
                    await kb.down(key)
                for key in reversed(op.keys):
                    await kb.up(key)
            elif op.kind in ("key_down", "key_up"):
                await (kb.down if op.kind == "key_down" else kb.up)(op.keys[0])
            elif op.kind == "scroll":
                await mouse.wheel(0, -op.amount * SCROLL_PX)

        self.call(run)

    def blank(self) -> None:
        """Go to ``about:blank`` (a recycled slot starts clean)."""
        self.call(lambda page: page.goto("about:blank"), 10)

    def kill(self) -> None:
        """Kill the browser's whole process group and remove its profile (idempotent, never raises)."""
        self._disconnect()
        try:
            os.killpg(self.pgid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            pass
        deadline = time.monotonic() + 5
        while process_group_alive(self.pgid) and time.monotonic() < deadline:
            time.sleep(0.02)  # children reparented to init are reaped there
        try:
            self._log.close()
        except OSError:
            pass
        shutil.rmtree(self.user_dir, ignore_errors=True)
