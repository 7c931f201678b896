"""gui-rl's plugins (upstream names): ``generate`` (``--custom-generate-function-path``) and
``reward_func`` (``--custom-rm-path``, with ``--reward-key score``), both the ``gui`` family's
(:class:`openclaw_rl.envs.gui.family.GuiFamily`, the same task setup and episode as
``openclaw-rl eval --eval-tasks gui``).

``generate`` runs one MiniWoB++ episode per sample: the text policy plays from the a11y-tree text
observation (the page's visible elements with their coordinates) and acts with the ``computer``
tool (a pyautogui command per call), at most ``--gui-max-steps`` actions; every step goes through
the intercept server, so the trained ids and logprobs are the sampled ones. The browser runs on the
GUI pool at ``GUI_ENV_SERVER_URL`` (the launch script starts one) or in the job. With
``--prm-enable`` the step PRM judges each step from the instruction (the first observation), the
history of actions and observations and the step's next observation.

A vision-language policy (a ``--model-path`` with an image processor: Qwen2-VL / Qwen2.5-VL /
Qwen3-VL, ``builtin:tiny-qwen2-vl``) sees the screenshots when ``--gui-observation-type`` has them
(``screenshot``, ``screenshot_a11y_tree``): each observation goes to the server as an ``image_url``
part, only the last ``--gui-max-image-history-length`` screenshots stay images in the history
(older ones become a text placeholder, which splits the trajectory there: a prefix break), and
the policy's processor rebuilds each sample's ``pixel_values`` / ``image_grid_thw`` from the
recorded images. A text policy with ``screenshot`` alone is refused with one line.

``reward_func`` returns MiniWoB's outcome ``{"score": +1 | -1, "acc": 1 | 0}`` (an episode that
could not be scored gets -1).
"""

from __future__ import annotations

from openclaw_rl.agentic.generate import family_plugins

generate, reward_func = family_plugins("gui")
