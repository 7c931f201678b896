"""The GUI environment for the text agent: the agent loop's Environment protocol over a GUI
episode, the ``gui`` family's environment (:class:`openclaw_rl.envs.gui.family.GuiFamily`).

The embedded text model plays from the a11y-tree text observation: :meth:`GuiTextEnv.reset`
gives the instruction, the action space and the screen's elements with their coordinates, and one
tool, ``computer(action)``, whose ``action`` is a pyautogui command (``pyautogui.click(68,
106)``) or ``WAIT`` / ``DONE`` / ``FAIL``; each call steps the episode and returns the new elements
(and any action error). A reply without a tool call ends the episode; ``evaluate`` is MiniWoB's
outcome (+1 / -1).

A vision-language policy sees the screenshot: with ``task["image_observations"]`` true (the family's
task setup sets it when the policy has an image processor) and a ``GUI_OBSERVATION_TYPE`` with the screenshot
(``screenshot``, ``screenshot_a11y_tree``), each observation is a list of OpenAI content parts, the
text (the element table where the type has ``a11y_tree``) then the screenshot as an ``image_url``
part (``data:image/png;base64,...``). Without it the observation is text; ``GUI_OBSERVATION_TYPE=
screenshot`` (no element text) with a text policy is refused when the environment is built
(:func:`check_policy`: one line), so a text model never plays blind.

Where the browser runs: on the GUI pool at ``GUI_ENV_SERVER_URL`` (or ``GUI_ENV_SERVER_HOST`` /
``GUI_ENV_SERVER_PORT``) through :class:`~openclaw_rl.envs.gui.client.RemoteGuiSession`, else in
this process on a warm-slot pool shared by the process's episodes. Settings: the family's flags
(:class:`~openclaw_rl.envs.gui.config.GuiFlags`, ``GUI_*`` variables as fallbacks). The pause after
each action is the task metadata's ``sleep_after_execution`` (the family's task setup puts
``--gui-sleep-after-execution`` there), else the flag; the wait after the reset is
``task_config.wait_after_reset`` (``--gui-wait-after-reset``), else the flag.
"""

from __future__ import annotations

import atexit
import json
import os
import threading
from typing import Any

from openclaw_rl.agentic.content import image_part
from openclaw_rl.envs.gui.actions import ACTION_SPACE_HELP
from openclaw_rl.envs.gui.config import GuiConfig, GuiFlags, gui_flags

__all__ = ["COMPUTER_TOOL", "GuiTextEnv", "check_model", "check_policy", "make_env", "observation_content", "observation_text"]

COMPUTER_TOOL = {
    "type": "function",
    "function": {
        "name": "computer",
        "description": "Act on the screen. " + ACTION_SPACE_HELP,
        "parameters": {"type": "object",
                       "properties": {"action": {"type": "string",
                                                 "description": "one pyautogui command, or WAIT, DONE or FAIL",
                                                 "maxLength": 200}},
                       "required": ["action"], "additionalProperties": False},
    },
}

_LOCAL: dict[Any, Any] = {}  # GuiConfig -> BrowserSlots
_LOCK = threading.Lock()


def _local_slots():
    from openclaw_rl.envs.gui.slots import BrowserSlots

    config = GuiConfig.from_env()
    with _LOCK:  # one set of browsers per settings (a job has one; tests change the environment)
        if config not in _LOCAL:
            warm = int(os.environ.get("GUI_PREWARM_ENVS") or 0)
            _LOCAL[config] = BrowserSlots(config, keep_warm=warm)
            atexit.register(_LOCAL[config].close_all)  # no browser outlives the process
        return config, _LOCAL[config]


def check_policy(observation_type: str | None, vision: bool) -> None:
    """Refuse a GUI observation type the policy cannot see.

    Args:
        observation_type: ``GUI_OBSERVATION_TYPE`` (None: the default, which has the text).
        vision: whether the policy is a vision-language model (it takes the screenshots).

    Raises:
        ValueError: ``screenshot`` (no element text) for a text policy; one line saying what to set.
    """
    if (observation_type or "").strip() == "screenshot" and not vision:
        raise ValueError("GUI_OBSERVATION_TYPE=screenshot needs a vision-language policy (a MODEL_PATH with an image "
                         "processor, e.g. Qwen2-VL / Qwen2.5-VL / Qwen3-VL); a text model plays from "
                         "GUI_OBSERVATION_TYPE=a11y_tree or screenshot_a11y_tree")


def check_model(observation_type: str | None, model_path: str) -> None:
    """:func:`check_policy` for the policy at ``model_path`` (a folder or ``builtin:`` name; vision
    when it has an image processor, :func:`openclaw_rl.vl_models.has_vision`). Used by
    gui-rl/run_gui_rl.sh before it submits a job.

    Raises:
        ValueError: see :func:`check_policy`; ``openclaw_rl.models.ModelPathError`` for a path
            that is no model.
    """
    if (observation_type or "").strip() != "screenshot":
        return
    from openclaw_rl.models import resolve_model_path
    from openclaw_rl.vl_models import has_vision

    check_policy(observation_type, has_vision(resolve_model_path(model_path)))


def observation_content(text: str, obs: dict, images: bool) -> str | list[dict]:
    """What the model is sent for one observation: ``text`` alone, or with ``images`` and a
    screenshot in ``obs``, the parts ``[text, image_url]``."""
    shot = (obs or {}).get("screenshot_b64")
    if not images or not shot:
        return text
    return [{"type": "text", "text": text}, image_part(shot)]


def observation_text(obs: dict, info: dict | None = None, *, reward: float | None = None,
                     done: bool = False, images: bool = False) -> str:
    """The text the model sees for one observation: the action error or episode error, the
    episode's end and score when it ended, then the element table (with ``images`` and no element
    text, a line saying the screenshot follows)."""
    info = info or {}
    lines = []
    if info.get("action_error"):
        lines.append(f"Action error: {info['action_error']}")
    if done:
        lines.append(f"The episode is over (score {reward:+g})." if reward is not None else "The episode is over.")
    text = (obs or {}).get("text") or ""
    if text:
        lines.append(text)
    elif images and (obs or {}).get("screenshot_b64"):
        lines.append("The screen:")
    else:
        lines.append("(no text observation: GUI_OBSERVATION_TYPE has no a11y_tree)")
    return "\n".join(lines)


class GuiTextEnv:
    """One GUI episode behind the Environment protocol (module docstring).

    Args:
        task_key: the task's key (``click-button#3``).
        task: the dataset row's metadata; ``task["task_config"]`` is the pool's task config
            (``{"task": "click-button", "seed": 3}``); ``task["image_observations"]``: send the
            screenshots to a vision-language policy (module docstring).

    Raises:
        ValueError: no ``task_config``; ``GUI_OBSERVATION_TYPE=screenshot`` without
            ``image_observations`` (:func:`check_policy`).
    """

    def __init__(self, task_key: str, task: dict, flags: GuiFlags | None = None):
        flags = gui_flags() if flags is None else flags
        config = task.get("task_config") or {}
        if not isinstance(config, dict) or not config.get("task"):
            raise ValueError(f"gui task {task_key!r}: metadata.task_config with a 'task' is required")
        self.images = bool(task.get("image_observations"))
        check_policy(flags.gui_observation_type, self.images)
        self.task_key, self.task_config = task_key, dict(config)
        sleep = task.get("sleep_after_execution")
        self.sleep_after = float(sleep) if isinstance(sleep, (int, float)) and sleep >= 0 else \
            flags.gui_sleep_after_execution
        self.task_config.setdefault("wait_after_reset", flags.gui_wait_after_reset)
        self.task_config["screenshot"] = self.images  # a text policy never sees it: the pool skips the capture
        self.session = None
        self.done, self.last_reward = False, None

    def _open(self):
        from openclaw_rl.envs.gui.client import RemoteGuiSession, server_url

        url = server_url()
        if url:
            return RemoteGuiSession(url)
        from openclaw_rl.envs.gui.session import GuiSession

        config, slots = _local_slots()
        return GuiSession(slots.acquire(), config, slots.release)

    def reset(self) -> dict:
        """Start the episode: ``{"observation": instruction + action space + elements (+ the
        screenshot for a vision-language policy), "tools": [computer]}``."""
        if self.session is None:
            self.session = self._open()
        first = self.session.reset(self.task_config)
        obs, info = first["observation"], first.get("info") or {}
        self.done = bool(info.get("error"))
        shown = ("its visible elements, with the center (x,y) to click, are listed below" if obs.get("text") else
                 "its screenshot follows (x,y are pixels from the top-left corner)")
        text = (f"Task: {obs.get('instruction') or info.get('instruction') or '(no instruction)'}\n"
                f"The screen is a web page; {shown}. Call the computer tool with one action per step. "
                f"{ACTION_SPACE_HELP}\n\n" + observation_text(obs, info, done=self.done, images=self.images))
        return {"observation": observation_content(text, obs, self.images), "tools": [COMPUTER_TOOL]}

    def exec_tool(self, tool_call: dict) -> str | list[dict]:
        """Run ``computer(action)``; returns the observation (text, or text + screenshot parts for a
        vision-language policy; never raises for bad model output)."""
        if self.done:
            return "The episode is over; reply without a tool call."
        name, args = tool_call.get("name"), tool_call.get("arguments")
        if isinstance(args, str):
            try:
                args = json.loads(args)
            except ValueError:
                return "Error: the arguments are not valid JSON; call computer with {\"action\": \"...\"}."
        if name != "computer" or not isinstance(args, dict) or not isinstance(args.get("action"), str):
            return f"Error: unknown tool call {name!r}; call computer with {{\"action\": \"pyautogui.click(x, y)\"}}."
        obs, reward, done, info = self.session.step(args["action"], self.sleep_after)
        self.done, self.last_reward = done, reward if done else None
        text = observation_text(obs, info, reward=reward if done else None, done=done, images=self.images)
        return observation_content(text, obs, self.images)

    def evaluate(self) -> float:
        """MiniWoB's outcome: +1 solved, else -1 (also when the episode never started)."""
        return -1.0 if self.session is None else float(self.session.evaluate())

    def close(self) -> None:
        """Release the browser or the lease (idempotent)."""
        if self.session is not None:
            self.session.close()


def make_env(task_key: str, task: dict) -> GuiTextEnv:
    """A ``gui`` environment with the flags from the environment variables (``GuiFamily.make_env``
    passes its own)."""
    return GuiTextEnv(task_key, task)
