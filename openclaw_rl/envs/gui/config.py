"""The GUI environment's settings, from upstream's environment variables.

==============================  =============================================================
``GUI_SCREEN_WIDTH`` / ``HEIGHT``  the browser viewport = the screenshot size (default 640 x 480;
                                   MiniWoB's task area is the top-left 160 x 210)
``GUI_OBSERVATION_TYPE``           ``screenshot``, ``a11y_tree`` (text: the visible elements with
                                   coordinates) or ``screenshot_a11y_tree`` (both; default)
``GUI_ACTION_SPACE``               ``pyautogui`` (the only one)
``GUI_MAX_STEPS``                  actions per episode before it ends unfinished (default 15)
``SCREENSHOT_BACKEND``             ``playwright`` (default) or ``selenium`` (chromedriver)
``GUI_RESULT_DIR``                 when set, every finished episode writes ``<task>/<seed>-<id>.json``
                                   (actions, rewards, score) and its last screenshot there
==============================  =============================================================
"""

from __future__ import annotations

import os
from dataclasses import dataclass

__all__ = ["GuiConfig", "OBSERVATION_TYPES"]

OBSERVATION_TYPES = ("screenshot", "a11y_tree", "screenshot_a11y_tree")


def _int(environ, name: str, default: int, low: int = 1) -> int:
    raw = (environ.get(name) or "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        value = low - 1
    if value < low:
        raise ValueError(f"{name} must be an integer >= {low}, got {raw!r}")
    return value


@dataclass(frozen=True)
class GuiConfig:
    """Settings of GUI episodes (module docstring).

    Attributes:
        width, height: the screen in pixels.
        observation_type: one of :data:`OBSERVATION_TYPES`.
        action_space: ``pyautogui``.
        max_steps: actions per episode.
        backend: ``playwright`` or ``selenium``.
        result_dir: where finished episodes are written (None: nowhere).
        page_load_timeout_s: seconds a page may take to load before the episode ends with an error.
        wait_after_reset_s: seconds to wait after a reset before the first observation.
    """

    width: int = 640
    height: int = 480
    observation_type: str = "screenshot_a11y_tree"
    action_space: str = "pyautogui"
    max_steps: int = 15
    backend: str = "playwright"
    result_dir: str | None = None
    page_load_timeout_s: float = 30.0
    wait_after_reset_s: float = 0.0

    def __post_init__(self):
        if self.observation_type not in OBSERVATION_TYPES:
            raise ValueError(f"GUI_OBSERVATION_TYPE must be one of {', '.join(OBSERVATION_TYPES)}, "
                             f"got {self.observation_type!r}")
        if self.action_space != "pyautogui":
            raise ValueError(f"GUI_ACTION_SPACE must be pyautogui, got {self.action_space!r}")
        if not (16 <= self.width <= 4096 and 16 <= self.height <= 4096):
            raise ValueError(f"screen {self.width}x{self.height}: width and height must be 16-4096")

    @property
    def wants_screenshot(self) -> bool:
        """The observation carries a screenshot."""
        return "screenshot" in self.observation_type

    @property
    def wants_text(self) -> bool:
        """The observation carries the element text (``a11y_tree``)."""
        return "a11y_tree" in self.observation_type

    @classmethod
    def from_env(cls, environ=None, **overrides) -> "GuiConfig":
        """The settings from the environment variables (module docstring), then ``overrides``.

        Raises:
            ValueError: a variable with a bad value (one line naming it);
            openclaw_rl.envs.gui.browser.BrowserError: an unusable ``SCREENSHOT_BACKEND``.
        """
        from openclaw_rl.envs.gui.browser import check_backend

        env = os.environ if environ is None else environ
        values = dict(
            width=_int(env, "GUI_SCREEN_WIDTH", cls.width), height=_int(env, "GUI_SCREEN_HEIGHT", cls.height),
            observation_type=(env.get("GUI_OBSERVATION_TYPE") or cls.observation_type).strip(),
            action_space=(env.get("GUI_ACTION_SPACE") or cls.action_space).strip(),
            max_steps=_int(env, "GUI_MAX_STEPS", cls.max_steps),
            backend=check_backend(env.get("SCREENSHOT_BACKEND")),
            result_dir=(env.get("GUI_RESULT_DIR") or "").strip() or None)
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**values)
