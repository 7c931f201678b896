"""The GUI family's settings: its flags (:class:`GuiFlags`, upstream's environment variables as
fallbacks) and the browser settings built from them (:class:`GuiConfig`).

Every GUI setting is declared once, in :class:`GuiFlags`; the trainer's command line (through the
family, :mod:`openclaw_rl.envs.gui.family`), the GUI pool server and in-process environments all
resolve it from there (a flag beats its environment variable, which beats the default):

=================================  ============================================================
``--gui-max-steps``                actions per episode before it ends unfinished
(``GUI_MAX_STEPS``)
``--gui-observation-type``         ``screenshot``, ``a11y_tree`` (text: the visible elements with
(``GUI_OBSERVATION_TYPE``)         coordinates) or ``screenshot_a11y_tree`` (both; default): a text
                                   policy reads the text, a vision-language policy also the image
``--gui-screen-width`` / ``-height``  the browser viewport = the screenshot size (MiniWoB's task
(``GUI_SCREEN_WIDTH`` / ``HEIGHT``)   area is the top-left 160 x 210)
``--gui-action-space``             ``pyautogui`` (the only one)
(``GUI_ACTION_SPACE``)
``--gui-result-dir``               when set, every finished episode writes ``<task>/<seed>-<id>.json``
(``GUI_RESULT_DIR``)               (actions, rewards, score) and its last screenshot there
``SCREENSHOT_BACKEND``             ``playwright`` (default) or ``selenium`` (chromedriver), the pool's
=================================  ============================================================

and the per-episode ones: ``--gui-sleep-after-execution``, ``--gui-wait-after-reset``,
``--gui-max-image-history-length`` (their variables ``GUI_SLEEP_AFTER_EXECUTION``,
``GUI_WAIT_AFTER_RESET``, ``GUI_MAX_IMAGE_HISTORY_LENGTH``).
"""

from __future__ import annotations

import os
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from openclaw_rl.envs.gui.backends import check_backend
from slime.config.flags import build_flags, flag, flag_specs, resolve_flags

__all__ = ["GuiConfig", "GuiFlags", "OBSERVATION_TYPES", "gui_flags"]

ObservationType = Literal["screenshot", "a11y_tree", "screenshot_a11y_tree"]
OBSERVATION_TYPES: tuple[str, ...] = typing.get_args(ObservationType)


@dataclass(frozen=True)
class GuiFlags:
    """The GUI family's flags (module docstring); every GUI default is declared here only."""

    gui_max_steps: int = flag(15, "gui-rl: actions per GUI episode", env="GUI_MAX_STEPS", ge=1)
    gui_observation_type: ObservationType = flag(
        "screenshot_a11y_tree", "gui-rl: what each observation carries (a text policy reads the element text, a "
        "vision-language policy also the screenshot; screenshot alone needs a vision-language policy)",
        env="GUI_OBSERVATION_TYPE")
    gui_screen_width: int = flag(640, "gui-rl: browser screen width in pixels", env="GUI_SCREEN_WIDTH",
                                 ge=16, le=4096)
    gui_screen_height: int = flag(480, "gui-rl: browser screen height in pixels", env="GUI_SCREEN_HEIGHT",
                                  ge=16, le=4096)
    gui_action_space: Literal["pyautogui"] = flag("pyautogui", "gui-rl: the action space", env="GUI_ACTION_SPACE")
    gui_result_dir: str | None = flag(None, "gui-rl: write each finished episode's actions, rewards and last "
                                      "screenshot here", env="GUI_RESULT_DIR")
    gui_sleep_after_execution: float = flag(0.0, "gui-rl: seconds to wait after each GUI action before the "
                                            "next observation", env="GUI_SLEEP_AFTER_EXECUTION", ge=0)
    gui_wait_after_reset: float = flag(0.0, "gui-rl: seconds to wait after a GUI reset before the first "
                                       "observation", env="GUI_WAIT_AFTER_RESET", ge=0)
    gui_max_image_history_length: int = flag(3, "gui-rl: screenshots kept in a vision-language policy's "
                                             "history (the text policy keeps every text observation)",
                                             env="GUI_MAX_IMAGE_HISTORY_LENGTH", ge=0)


def gui_flags(environ: Mapping[str, str] | None = None, **given) -> GuiFlags:
    """:class:`GuiFlags` from ``given`` values, else the environment variables (``os.environ`` by
    default), else the defaults.

    Raises:
        slime.config.flags.ConfigError: a bad value (one line naming the variable).
    """
    values, _ = resolve_flags(flag_specs(GuiFlags), {k: v for k, v in given.items() if v is not None}, environ)
    return build_flags(GuiFlags, values)


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

    width: int = GuiFlags.gui_screen_width
    height: int = GuiFlags.gui_screen_height
    observation_type: str = GuiFlags.gui_observation_type
    action_space: str = GuiFlags.gui_action_space
    max_steps: int = GuiFlags.gui_max_steps
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
    def from_flags(cls, flags: GuiFlags, backend: str | None = None, **overrides) -> "GuiConfig":
        """The browser settings of ``flags`` (``backend``: ``SCREENSHOT_BACKEND``'s value), then
        ``overrides`` (None values ignored).

        Raises:
            ValueError: a bad combination; openclaw_rl.envs.gui.browser.BrowserError: an unusable backend.
        """
        values = dict(width=flags.gui_screen_width, height=flags.gui_screen_height,
                      observation_type=flags.gui_observation_type, action_space=flags.gui_action_space,
                      max_steps=flags.gui_max_steps, backend=check_backend(backend),
                      result_dir=flags.gui_result_dir, wait_after_reset_s=flags.gui_wait_after_reset)
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**values)

    @classmethod
    def from_env(cls, environ=None, **overrides) -> "GuiConfig":
        """The settings from the environment variables (:class:`GuiFlags`' fallbacks), then ``overrides``.

        Raises:
            slime.config.flags.ConfigError (a ValueError): a variable with a bad value (one line naming it);
            openclaw_rl.envs.gui.browser.BrowserError: an unusable ``SCREENSHOT_BACKEND``.
        """
        env = os.environ if environ is None else environ
        return cls.from_flags(gui_flags(env), env.get("SCREENSHOT_BACKEND"), **overrides)
