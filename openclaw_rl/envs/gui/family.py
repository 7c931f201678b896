"""The ``gui`` agent family (gui-rl): MiniWoB++ web tasks in headless Chromium.

Data: MiniWoB++ pages x seeds, pages split by base task (``GUI_TRAIN_META_PATH`` /
``GUI_EVAL_META_PATH`` name other pages, :mod:`.data`). Flags: :class:`~.config.GuiFlags` (every GUI
setting, upstream's ``GUI_*`` variables as fallbacks). Task setup (the same in training and
``openclaw-rl eval``): the per-episode waits, and ``image_observations`` when the policy is a
vision-language model and the observation type has the screenshot, so such a policy sees the
screenshots as image parts (only the last ``--gui-max-image-history-length`` kept as images); a
text policy with ``screenshot`` alone is refused with one line. Reward: MiniWoB's outcome, +1 / -1.
"""

from __future__ import annotations

from pathlib import Path

from openclaw_rl.agentic.family import AgentFamily, Split
from openclaw_rl.agentic.generate import policy_processor
from openclaw_rl.envs.gui.config import GuiFlags
from openclaw_rl.envs.gui.data import dataset_path
from openclaw_rl.envs.gui.env import GuiTextEnv, check_policy
from openclaw_rl.envs.gui.prompts import SYSTEM_PROMPT

__all__ = ["GuiFamily"]


class GuiFamily(AgentFamily):
    """MiniWoB++ web tasks (module docstring)."""

    name = "gui"
    env_type = "gui"
    Flags = GuiFlags
    job_env = ("GUI_ENV_SERVER_URL", "SCREENSHOT_BACKEND", "POOL_API_KEY")

    def dataset_path(self, split: Split) -> Path:
        """The pages x seeds of ``split`` (:func:`openclaw_rl.envs.gui.data.dataset_path`)."""
        return dataset_path(split)

    def make_env(self, task_key: str, task: dict) -> GuiTextEnv:
        """A :class:`~.env.GuiTextEnv` with this family's flags."""
        return GuiTextEnv(task_key, task, self.flags)

    def max_turns(self) -> int:
        """``--gui-max-steps``."""
        return self.flags.gui_max_steps

    def system_prompt(self) -> str:
        """The GUI agent's system message."""
        return SYSTEM_PROMPT

    def prepare_task(self, metadata: dict, policy_path: str | None) -> dict:
        """The row's task with ``task_config.wait_after_reset``, ``sleep_after_execution`` and
        ``image_observations`` (a vision-language policy and an observation type with the screenshot).

        Raises:
            ValueError: ``--gui-observation-type screenshot`` with a text policy (one line).
        """
        meta = dict(metadata)
        config = dict(meta.get("task_config") or {})
        config.setdefault("wait_after_reset", self.flags.gui_wait_after_reset)
        meta["task_config"] = config
        meta["sleep_after_execution"] = self.flags.gui_sleep_after_execution
        observation_type = self.flags.gui_observation_type
        vision = "screenshot" in observation_type and policy_processor(policy_path) is not None
        check_policy(observation_type, vision)
        meta["image_observations"] = vision
        return meta

    def max_images(self, metadata: dict) -> int | None:
        """``--gui-max-image-history-length`` for a vision-language policy; None (all text) otherwise."""
        return self.flags.gui_max_image_history_length if metadata.get("image_observations") else None
