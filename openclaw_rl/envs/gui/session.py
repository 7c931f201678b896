"""One GUI episode on one browser: ``reset(task_config)``, ``get_obs()``, ``step(action)``,
``evaluate()``, ``close()`` (upstream's DesktopEnv-style interface, served by the GUI pool).

* ``reset({"task": "click-button", "seed": 3, "data_mode"?, "time_limit_s"?, "wait_after_reset"?,
  "screenshot"?})`` loads the MiniWoB page and starts a seeded episode
  (:mod:`~openclaw_rl.envs.gui.miniwob_tasks`). ``"screenshot": false`` leaves the screenshot out of
  this episode's observations although ``GUI_OBSERVATION_TYPE`` has one (a text policy never sees
  it, so the pool does not take it: a PNG capture a step); absent or true: as the type says.
  A page that does not load within the page-load timeout, or a browser that is gone, does not
  raise: the episode is over (``done``), the observation text and ``info["error"]`` say why, and
  it scores -1.
* ``step(action, sleep_after_execution)`` parses the pyautogui action
  (:func:`~openclaw_rl.envs.gui.actions.parse_action`) and runs it with Playwright mouse and
  keyboard input; returns ``(observation, reward, done, info)``. A malformed action or a point
  outside the screen is not run: ``info["error"]`` says why and the episode goes on (the step
  counts). ``DONE`` / ``FAIL`` end the episode; ``WAIT`` waits. The episode also ends when the page
  ends it (MiniWoB's ``WOB_DONE_GLOBAL``), after ``max_steps`` actions, or when the browser dies.
  ``reward`` is 0 until the episode ends, then its score.
* observation: ``{"screenshot_b64": base64 PNG | None, "text": element table | "", "instruction"}``
  (screenshot and text as ``GUI_OBSERVATION_TYPE`` asks, the screenshot only when the episode wants it).
* ``evaluate()`` -> +1 when MiniWoB ended the episode with raw reward > 0, else -1.
"""

from __future__ import annotations

import base64
import json
import time
import uuid
from pathlib import Path
from typing import Any, Callable

from openclaw_rl.envs.gui import miniwob_tasks as mw
from openclaw_rl.envs.gui.actions import ActionError, Op, parse_action
from openclaw_rl.envs.gui.browser import Browser, BrowserCrashed, BrowserError
from openclaw_rl.envs.gui.config import GuiConfig
from openclaw_rl.envs.gui.dom_text import DOM_ELEMENTS_JS, render_elements

__all__ = ["GuiSession", "TaskConfigError"]

MAX_SLEEP_AFTER = 10.0


class TaskConfigError(ValueError):
    """A task config the pool cannot run (unknown task, bad seed); one line."""


def _task_fields(task_config: Any) -> tuple[str, Any, str | None, float, float | None]:
    if not isinstance(task_config, dict):
        raise TaskConfigError("task_config must be an object like {\"task\": \"click-button\", \"seed\": 0}")
    name = task_config.get("task") or task_config.get("id") or task_config.get("task_name")
    if not name:
        raise TaskConfigError("task_config needs 'task' (a MiniWoB page name, e.g. click-button)")
    try:
        name = mw.normalise_task(name)
    except ValueError as exc:
        raise TaskConfigError(str(exc)) from None
    seed = task_config.get("seed")
    if seed is not None and not isinstance(seed, (int, str)) or isinstance(seed, bool):
        raise TaskConfigError(f"seed must be an integer or a string, got {seed!r}")
    mode = task_config.get("data_mode")
    if mode is not None and mode not in ("train", "test"):
        raise TaskConfigError(f"data_mode must be train or test, got {mode!r}")
    limit = task_config.get("time_limit_s", 600)
    wait = task_config.get("wait_after_reset")
    for key, val in (("time_limit_s", limit), ("wait_after_reset", wait)):
        if val is not None and (isinstance(val, bool) or not isinstance(val, (int, float)) or val < 0):
            raise TaskConfigError(f"{key} must be a number >= 0, got {val!r}")
    shot = task_config.get("screenshot")
    if shot is not None and not isinstance(shot, bool):
        raise TaskConfigError(f"screenshot must be true or false, got {shot!r}")
    return name, seed, mode, float(limit), None if wait is None else float(wait)


class GuiSession:
    """A GUI episode over ``browser`` (module docstring).

    Args:
        browser: a started :class:`~openclaw_rl.envs.gui.browser.Browser` (this session drives it
            until :meth:`close`).
        config: screen size, observation type, step limit, result dir, timeouts.
        release: called once by :meth:`close` as ``release(browser, healthy)`` to hand the browser
            back (recycle it when healthy, else kill it); default: kill it.
    """

    def __init__(self, browser: Browser, config: GuiConfig,
                 release: Callable[[Browser, bool], None] | None = None):
        self.browser, self.config = browser, config
        self._release = release or (lambda b, _healthy: b.kill())
        self.id = uuid.uuid4().hex[:12]
        self.task = self.seed = None
        self.instruction, self.error = "", None
        self.done, self.started, self.crashed, self.closed = False, False, False, False
        self.steps = 0
        self.raw_reward: float | None = None
        self.reason: str | None = None
        self.history: list[dict] = []
        self.reset_s = 0.0
        self.wants_screenshot = config.wants_screenshot  # per episode from reset's task config

    # -- episode -------------------------------------------------------------------------------
    def reset(self, task_config: dict) -> dict:
        """Start the task (module docstring); returns ``{"observation", "info"}``.

        Raises:
            TaskConfigError: an unknown task or a bad field (nothing is loaded).
        """
        name, seed, mode, limit_s, wait = _task_fields(task_config)
        self.wants_screenshot = self.config.wants_screenshot and task_config.get("screenshot") is not False
        t0 = time.monotonic()
        self.task, self.seed, self.started = name, seed, True
        self.done, self.error, self.steps, self.raw_reward, self.reason, self.history = False, None, 0, None, None, []
        self.instruction = ""
        try:
            self.browser.goto(mw.page_url(name), self.config.page_load_timeout_s)
            deadline = time.monotonic() + 5
            while not self.browser.evaluate(mw.RESET_JS, [seed, mode, int(limit_s * 1000)]):
                if time.monotonic() > deadline:
                    raise BrowserError("the page has no MiniWoB core (not a MiniWoB page?)")
                time.sleep(0.05)
            while not (self.browser.evaluate(mw.STATE_JS) or {}).get("ready", True):
                if time.monotonic() > deadline:
                    raise BrowserError("the MiniWoB task did not become ready within 5 s")
                time.sleep(0.05)
            wait = self.config.wait_after_reset_s if wait is None else wait
            if wait:
                time.sleep(min(wait, 60.0))
            self.instruction = str(self.browser.evaluate(mw.UTTERANCE_JS) or "")
        except BrowserError as exc:  # includes BrowserCrashed
            self._end_with_error(exc)
        self.reset_s = time.monotonic() - t0
        return {"observation": self.get_obs(), "info": self._info()}

    def _end_with_error(self, exc: BaseException) -> None:
        self.crashed = self.crashed or isinstance(exc, BrowserCrashed) or not self.browser.alive
        self.error = f"{'browser crashed' if self.crashed else 'error'}: {exc}"
        self.done = True

    def _state(self) -> dict | None:
        try:
            return self.browser.evaluate(mw.STATE_JS)
        except BrowserError as exc:
            self._end_with_error(exc)
            return None

    def _latch(self) -> None:
        """Record MiniWoB's outcome the moment the page ends the episode (clicking its START
        cover afterwards would begin a new one)."""
        if self.raw_reward is not None:
            return
        state = self._state()
        if state and state.get("done"):
            self.raw_reward, self.reason, self.done = float(state.get("raw_reward") or 0.0), state.get("reason"), True

    def get_obs(self) -> dict:
        """The current observation ``{"screenshot_b64", "text", "instruction"}`` (``text`` carries
        the error when the episode ended on one)."""
        shot, text = None, ""
        if self.error is None or self.browser.alive:
            try:
                if self.wants_screenshot:
                    shot = base64.b64encode(self.browser.screenshot()).decode()
                if self.config.wants_text:
                    text = render_elements(self.browser.evaluate(DOM_ELEMENTS_JS, 200))
            except BrowserError as exc:
                self._end_with_error(exc)
        if self.error:
            text = f"{self.error}\n{text}".strip()
        return {"screenshot_b64": shot, "text": text, "instruction": self.instruction}

    def _info(self, **extra) -> dict:
        return {"task": self.task, "seed": self.seed, "instruction": self.instruction, "step": self.steps,
                "raw_reward": self.raw_reward, "reason": self.reason, "error": self.error,
                "crashed": self.crashed, "browser_pid": self.browser.pid, **extra}

    def _check_point(self, op: Op) -> None:
        if op.x is None:
            return
        if not (0 <= op.x < self.config.width and 0 <= op.y < self.config.height):
            raise ActionError(f"({op.x:g}, {op.y:g}) is outside the screen ({self.config.width}x{self.config.height}; "
                              f"x in 0-{self.config.width - 1}, y in 0-{self.config.height - 1})")

    def _run_op(self, op: Op) -> None:
        if op.kind == "sleep":
            time.sleep(op.amount)
        elif op.kind != "move" or op.x is not None:
            self.browser.perform(op)

    def step(self, action: Any, sleep_after_execution: float = 0.0) -> tuple[dict, float, bool, dict]:
        """Run one action (module docstring); returns ``(observation, reward, done, info)``."""
        if not self.started:
            return self.get_obs(), 0.0, False, self._info(action_error="reset the environment before stepping")
        if self.done:
            return self.get_obs(), 0.0, True, self._info(action_error="the episode is already over")
        self.steps += 1
        action_error = None
        try:
            ops = parse_action(action)
            for op in ops:
                self._check_point(op)
            for op in ops:
                if op.kind in ("DONE", "FAIL"):
                    self.done = True
                    break
                if op.kind == "WAIT":
                    time.sleep(1.0)
                    continue
                self._run_op(op)
                self._latch()
                if self.done:
                    break
        except ActionError as exc:
            action_error = str(exc)
        except BrowserError as exc:
            self._end_with_error(exc)
        if not self.done:
            pause = sleep_after_execution if isinstance(sleep_after_execution, (int, float)) else 0.0
            if pause > 0:
                time.sleep(min(float(pause), MAX_SLEEP_AFTER))
        if not self.crashed:
            self._latch()
        if self.steps >= self.config.max_steps and not self.done:
            self.done = True
            action_error = action_error or f"step limit reached ({self.config.max_steps} actions)"
        self.history.append({"action": action if isinstance(action, str) else repr(action), "error": action_error})
        obs = self.get_obs()
        if action_error:
            obs["text"] = f"action error: {action_error}\n{obs['text']}".strip()
        reward = self.evaluate() if self.done else 0.0
        return obs, reward, self.done, self._info(action_error=action_error)

    def evaluate(self) -> float:
        """+1.0 when MiniWoB ended the episode with raw reward > 0, else -1.0 (never raises)."""
        if not self.crashed and self.started:
            self._latch()
        return 1.0 if (self.raw_reward or 0.0) > 0 else -1.0

    # -- end -----------------------------------------------------------------------------------
    def _write_result(self) -> None:
        root = self.config.result_dir
        if not root or not self.task:
            return
        folder = Path(root) / self.task
        folder.mkdir(parents=True, exist_ok=True)
        stem = f"{self.seed}-{self.id}"
        record = {"task": self.task, "seed": self.seed, "instruction": self.instruction, "steps": self.steps,
                  "score": self.evaluate(), "raw_reward": self.raw_reward, "reason": self.reason,
                  "error": self.error, "actions": self.history, "reset_s": round(self.reset_s, 3),
                  "browser_pid": self.browser.pid}
        (folder / f"{stem}.json").write_text(json.dumps(record, indent=1))
        if self.browser.alive:
            try:
                (folder / f"{stem}.png").write_bytes(self.browser.screenshot())
            except BrowserError:
                pass

    def close(self) -> None:
        """Write the result (``GUI_RESULT_DIR``) and hand the browser back (idempotent, never raises)."""
        if self.closed:
            return
        self.closed = True
        try:
            self._write_result()
        except OSError:
            pass
        healthy = not self.crashed and self.browser.alive
        try:
            self._release(self.browser, healthy)
        except Exception:
            self.browser.kill()
