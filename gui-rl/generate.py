"""gui-rl's plugins (upstream names): ``generate`` (``--custom-generate-function-path``) and
``reward_func`` (``--custom-rm-path``, with ``--reward-key score``).

``generate`` runs one MiniWoB++ episode per sample: the text policy plays from the a11y-tree text
observation (the page's visible elements with their coordinates) and acts with the ``computer``
tool (a pyautogui command per call), at most ``--gui-max-steps`` actions; every step goes through
the intercept server (:func:`openclaw_rl.agentic.generate.generate_agent`), so the trained ids and
logprobs are the sampled ones. The browser runs on the GUI pool at ``GUI_ENV_SERVER_URL`` (the
launch script starts one) or in the job. ``--gui-sleep-after-execution`` and
``--gui-wait-after-reset`` reach the environment through the sample's metadata. With
``--prm-enable`` the step PRM judges each step from the instruction (the first observation), the
history of actions and observations and the step's next observation.

A vision-language policy (a ``--model-path`` with an image processor: Qwen2-VL / Qwen2.5-VL /
Qwen3-VL, ``builtin:tiny-qwen2-vl``) sees the screenshots when ``GUI_OBSERVATION_TYPE`` has them
(``screenshot``, ``screenshot_a11y_tree``): each observation goes to the server as an ``image_url``
part, only the last ``--gui-max-image-history-length`` screenshots stay images in the history
(older ones become a text placeholder, which splits the trajectory there: a prefix break), and
the policy's processor (loaded once per process) rebuilds each sample's ``pixel_values`` /
``image_grid_thw`` from the recorded images. A text policy with ``GUI_OBSERVATION_TYPE=screenshot``
is refused with one line (the launch script checks it before submitting).

``reward_func`` returns MiniWoB's outcome ``{"score": +1 | -1, "acc": 1 | 0}`` (an episode that
could not be scored gets -1).
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

from openclaw_rl.agentic.families import family
from openclaw_rl.agentic.generate import generate_agent, policy_processor
from openclaw_rl.envs.gui.env import check_policy
from slime.sample import Sample


def _flag(args: Any, name: str, default):
    value = getattr(args, name, None)
    return default if value is None else value


async def generate(args: Any, sample: Sample, sampling_params: dict) -> list[Sample]:
    """One GUI episode for ``sample`` (its metadata names the page and seed); returns its samples.

    Raises:
        ValueError: ``GUI_OBSERVATION_TYPE=screenshot`` with a text policy (one line).
    """
    fam = family("gui")
    meta = dict(sample.metadata)
    config = dict(meta.get("task_config") or {})
    config.setdefault("wait_after_reset", float(_flag(args, "gui_wait_after_reset", 0.0)))
    meta["task_config"] = config
    meta["sleep_after_execution"] = float(_flag(args, "gui_sleep_after_execution", 0.0))
    observation_type = os.environ.get("GUI_OBSERVATION_TYPE") or "screenshot_a11y_tree"
    vision = "screenshot" in observation_type and (
        await asyncio.to_thread(policy_processor, getattr(args, "model_path", None))) is not None
    check_policy(observation_type, vision)
    meta["image_observations"] = vision
    sample.metadata = meta
    return await generate_agent(args, sample, sampling_params, max_turns=int(_flag(args, "gui_max_steps", fam.max_turns())),
                                system_prompt=fam.system(),
                                max_images=int(_flag(args, "gui_max_image_history_length", 3)) if vision else None)


async def reward_func(args: Any, sample: Sample) -> dict:
    """``{"score": +1 | -1, "acc": 1 | 0}`` from the environment's score."""
    score = sample.metadata.get("env_score")
    score = -1.0 if score is None else float(score)
    return {"score": score, "acc": 1.0 if score > 0 else 0.0}
