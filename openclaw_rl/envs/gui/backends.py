"""The browser backend of a GUI pool slot (``SCREENSHOT_BACKEND``): ``playwright`` (default,
:class:`~openclaw_rl.envs.gui.browser.Browser`) or ``selenium``
(:class:`~openclaw_rl.envs.gui.selenium_browser.SeleniumBrowser`, the same Chromium through
chromedriver). Without the ``selenium`` package or Debian's ``chromium-driver`` the Selenium
backend is refused with one line at start-up (:func:`check_backend`)."""

from __future__ import annotations

from openclaw_rl.envs.gui.browser import Browser, BrowserError
from openclaw_rl.envs.gui.selenium_browser import SeleniumBrowser, selenium_missing

__all__ = ["check_backend", "make_browser"]


def check_backend(name: str | None) -> str:
    """Validate ``SCREENSHOT_BACKEND`` (default ``playwright``); returns it.

    Raises:
        BrowserError: ``selenium`` without the ``selenium`` package or ``chromedriver`` (Debian's
            ``chromium-driver``), one line saying what is missing; an unknown name.
    """
    name = (name or "playwright").strip().lower()
    if name == "playwright":
        return name
    if name == "selenium":
        missing = selenium_missing()
        if missing:
            raise BrowserError(f"SCREENSHOT_BACKEND=selenium needs {missing}; or use SCREENSHOT_BACKEND=playwright")
        return name
    raise BrowserError(f"SCREENSHOT_BACKEND must be playwright or selenium, got {name!r}")


def make_browser(width: int, height: int, backend: str = "playwright") -> Browser:
    """A started browser of ``backend`` (``playwright`` or ``selenium``).

    Raises:
        BrowserError: it did not start, or the backend is unusable.
    """
    if check_backend(backend) == "selenium":
        return SeleniumBrowser(width, height)
    return Browser(width, height)
