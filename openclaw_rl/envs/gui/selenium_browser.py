"""``SCREENSHOT_BACKEND=selenium``: the same Chromium, driven through chromedriver (Selenium).

The browser process is started exactly as for Playwright (:class:`~openclaw_rl.envs.gui.browser.Browser`:
headless, own process group, DevTools on a free port), and Selenium attaches to it with
``debuggerAddress`` through Debian's ``chromedriver`` (package ``chromium-driver``). Scripts run
with ``execute_script``; the viewport, screenshots and input go through the DevTools protocol
(``Emulation.setDeviceMetricsOverride``, ``Page.captureScreenshot``, ``Input.dispatchMouseEvent``,
``Input.dispatchKeyEvent``), so coordinates and images are the viewport's, as with Playwright.
Calls are synchronous in the caller's thread (one lease's calls run one at a time).
"""

from __future__ import annotations

import base64
import shutil
from typing import Any

from openclaw_rl.envs.gui.browser import SCROLL_PX, Browser, BrowserCrashed, BrowserError

__all__ = ["SeleniumBrowser", "selenium_missing"]

# key -> (code, windows virtual key code, text)
_SPECIAL = {"Enter": ("Enter", 13, "\r"), "Tab": ("Tab", 9, "\t"), "Backspace": ("Backspace", 8, ""),
            "Delete": ("Delete", 46, ""), "Escape": ("Escape", 27, ""), "ArrowUp": ("ArrowUp", 38, ""),
            "ArrowDown": ("ArrowDown", 40, ""), "ArrowLeft": ("ArrowLeft", 37, ""),
            "ArrowRight": ("ArrowRight", 39, ""), "Home": ("Home", 36, ""), "End": ("End", 35, ""),
            "PageUp": ("PageUp", 33, ""), "PageDown": ("PageDown", 34, ""), "Insert": ("Insert", 45, ""),
            "Control": ("ControlLeft", 17, ""), "Shift": ("ShiftLeft", 16, ""), "Alt": ("AltLeft", 18, ""),
            "Meta": ("MetaLeft", 91, ""), "CapsLock": ("CapsLock", 20, ""), " ": ("Space", 32, " ")}
_MODIFIER_BITS = {"Alt": 1, "Control": 2, "Meta": 4, "Shift": 8}
_GONE = ("invalid session id", "chrome not reachable", "disconnected", "no such window", "target window already closed")
_BUTTONS = {"left": "left", "right": "right", "middle": "middle"}


def selenium_missing() -> str | None:
    """What the Selenium backend lacks (``None`` when usable): the ``selenium`` package or ``chromedriver``."""
    try:
        import selenium  # noqa: F401  (only whether it imports)
    except ImportError:
        return "the selenium package (pip install selenium)"
    if not shutil.which("chromedriver"):
        return "chromedriver (Debian package chromium-driver)"
    return None


def _key_event(key: str) -> dict:
    if key in _SPECIAL:
        code, vk, text = _SPECIAL[key]
    elif len(key) == 1:
        code = f"Key{key.upper()}" if key.isalpha() else (f"Digit{key}" if key.isdigit() else "")
        vk, text = ord(key.upper()) if key.isalnum() else 0, key
    elif key.startswith("F") and key[1:].isdigit():
        code, vk, text = key, 111 + int(key[1:]), ""
    else:
        raise BrowserError(f"no key mapping for {key!r}")
    return {"key": key, "code": code, "windowsVirtualKeyCode": vk, "nativeVirtualKeyCode": vk, "text": text}


class SeleniumBrowser(Browser):
    """A headless Chromium of ``width`` x ``height`` driven by Selenium (module docstring).

    Raises:
        BrowserError: Chromium or chromedriver did not start (nothing is left running).
    """

    def _connect(self, ws: str, timeout: float) -> None:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service

        missing = selenium_missing()
        if missing:
            raise BrowserError(f"SCREENSHOT_BACKEND=selenium needs {missing}")
        options = webdriver.ChromeOptions()
        options.debugger_address = ws.split("//", 1)[1].split("/", 1)[0]
        self._service = Service(shutil.which("chromedriver"))
        self._wd = webdriver.Chrome(service=self._service, options=options)
        self._wd.set_script_timeout(self.call_timeout)
        self._cdp("Emulation.setDeviceMetricsOverride",
                  {"width": self.width, "height": self.height, "deviceScaleFactor": 1, "mobile": False})
        self._pointer, self._buttons, self._modifiers = (0.0, 0.0), set(), 0

    def _connected(self) -> bool:
        return getattr(self, "_wd", None) is not None

    def _disconnect(self) -> None:
        wd, self._wd = getattr(self, "_wd", None), None
        service = getattr(self, "_service", None)
        if service is not None:
            try:
                service.stop()  # ends chromedriver; the browser itself is killed by process group
            except Exception:
                pass
        del wd

    def _run(self, fn, *args) -> Any:
        if not self.alive:
            raise BrowserCrashed(self._gone())
        try:
            return fn(*args)
        except Exception as exc:
            text = str(exc).lower()
            if not self.alive or any(m in text for m in _GONE):
                self._disconnect()  # the session is lost: alive is False from now on
                raise BrowserCrashed(self._gone()) from exc
            if "timeout" in type(exc).__name__.lower():
                raise BrowserError(f"the browser did not answer within {self.call_timeout:g} s") from exc
            if type(exc).__module__.startswith("selenium"):
                msg = (getattr(exc, "msg", None) or str(exc)).strip().splitlines()
                raise BrowserError(f"selenium: {msg[0] if msg else type(exc).__name__}") from exc
            raise

    def _cdp(self, method: str, params: dict) -> dict:
        return self._run(self._wd.execute_cdp_cmd, method, params)

    def call(self, fn, timeout: float | None = None) -> Any:
        """Not available: Playwright page functions do not run on this backend."""
        raise BrowserError("SeleniumBrowser.call takes no Playwright page function")

    def goto(self, url: str, timeout_s: float) -> None:
        """Load ``url`` (``driver.get``, waiting for ``load``); a page not loaded within
        ``timeout_s`` is abandoned for ``about:blank``.

        Raises:
            BrowserError: not loaded in time (the message says so); BrowserCrashed.
        """
        self._run(self._wd.set_page_load_timeout, timeout_s)
        try:
            self._run(self._wd.get, url)
        except BrowserCrashed:
            raise
        except BrowserError as exc:
            if "timeout" in str(exc).lower() or "did not answer" in str(exc):
                try:
                    self._cdp("Page.stopLoading", {})
                    self.blank()
                except BrowserError:
                    pass
                raise BrowserError(f"the page did not load within {timeout_s:g} s") from exc
            raise BrowserError(f"loading the page failed: {exc}") from exc

    def evaluate(self, js: str, arg: Any = None) -> Any:
        """The result of the function ``js`` called with ``arg`` in the page."""
        return self._run(self._wd.execute_script, f"return ({js})(arguments[0]);", arg)

    def screenshot(self) -> bytes:
        """A PNG of the viewport."""
        return base64.b64decode(self._cdp("Page.captureScreenshot", {"format": "png"})["data"])

    def blank(self) -> None:
        """Go to ``about:blank``."""
        self._run(self._wd.set_page_load_timeout, 10)
        self._run(self._wd.get, "about:blank")

    def _mouse(self, kind: str, x: float, y: float, button: str = "none", clicks: int = 0) -> None:
        self._cdp("Input.dispatchMouseEvent", {"type": kind, "x": x, "y": y, "button": button,
                                               "clickCount": clicks, "modifiers": self._modifiers})
        self._pointer = (x, y)

    def _key(self, key: str, down: bool) -> None:
        event = _key_event(key)
        if key in _MODIFIER_BITS:
            bit = _MODIFIER_BITS[key]
            self._modifiers = (self._modifiers | bit) if down else (self._modifiers & ~bit)
        text = event.pop("text")
        kind = ("keyDown" if text and not (self._modifiers & 0b111) else "rawKeyDown") if down else "keyUp"
        params = {"type": kind, "modifiers": self._modifiers, **event}
        if kind == "keyDown":
            params["text"] = params["unmodifiedText"] = text
        self._cdp("Input.dispatchKeyEvent", params)

    def perform(self, op) -> None:
        """Run one input operation (:class:`openclaw_rl.envs.gui.actions.Op`) through DevTools input events.

        Raises:
            BrowserCrashed, BrowserError.
        """
        if op.x is not None and op.kind != "drag":
            self._mouse("mouseMoved", op.x, op.y)
        x, y = self._pointer
        button = _BUTTONS[op.button]
        if op.kind == "click":
            for n in range(1, op.clicks + 1):
                self._mouse("mousePressed", x, y, button, n)
                self._mouse("mouseReleased", x, y, button, n)
        elif op.kind == "drag":
            self._mouse("mousePressed", x, y, button, 1)
            for i in range(1, 9):
                self._mouse("mouseMoved", x + (op.x - x) * i / 8, y + (op.y - y) * i / 8, button)
            self._mouse("mouseReleased", op.x, op.y, button, 1)
        elif op.kind in ("mouse_down", "mouse_up"):
            self._mouse("mousePressed" if op.kind == "mouse_down" else "mouseReleased", x, y, button, 1)
        elif op.kind == "type":
            for ch in op.text:
                if ch == "\n":
                    ch = "Enter"
                if ch in _SPECIAL or ch.isalnum() or len(ch) == 1 and ord(ch) < 128:
                    self._key(ch, True)
                    self._key(ch, False)
                else:
                    self._cdp("Input.insertText", {"text": ch})
        elif op.kind == "press":
            for _ in range(op.clicks):
                for key in op.keys:
                    self._key(key, True)
                    self._key(key, False)
        elif op.kind == "hotkey":
            for key in op.keys:
                self._key(key, True)
            for key in reversed(op.keys):
                self._key(key, False)
        elif op.kind in ("key_down", "key_up"):
            self._key(op.keys[0], op.kind == "key_down")
        elif op.kind == "scroll":
            self._cdp("Input.dispatchMouseEvent", {"type": "mouseWheel", "x": x, "y": y, "deltaX": 0,
                                                   "deltaY": -op.amount * SCROLL_PX})
