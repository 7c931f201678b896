"""Start-up check of all four plugin hooks, before Ray or any model starts.

``python slime/train.py`` calls :func:`check_plugins` right after parsing the command line: a
missing file, a missing function, wrong parameters or a wrong return type is then a one-line
``slime/train.py: error: ...`` naming the flag and what was expected (exit code 2), instead of a
failure minutes into the run. The actors load the same plugins again where they run.
"""

from __future__ import annotations

from typing import Any

from slime.loss_plugins import load_loss_plugin, probe_loss_plugin
from slime.losses import PolicyLossConfig
from slime.plugins import PluginError
from slime.reward_plugins import RewardPlugin
from slime.rollout_plugins import LIVE_ROLLOUT, load_generate_function, load_rollout_function, rollout_spec

__all__ = ["check_plugins"]


def check_plugins(cfg: Any) -> list[str]:
    """Load and check every plugin a run uses.

    * loss: convention detected, return annotation checked, then one call on a probe batch
      (:func:`slime.loss_plugins.probe_loss_plugin`), so a wrong return type fails here;
    * rollout: parameters ``(args, rollout_id, data_source, evaluation=False)``;
    * generate: parameters ``(args, sample, sampling_params)`` and annotation; it needs a rollout
      that generates (``--prompt-data`` or a custom ``--rollout-function-path``);
    * reward: form detected and parameters checked (the simple form's model is not built here);
    * ``--prompt-data``: the file parses, a reward is given, and no ``--data-path``.

    Args:
        cfg: the parsed :class:`slime.arguments.SlimeConfig`.

    Returns:
        One line per plugin in use (``"loss: plugin x.py:compute_loss (simple convention)"``).

    Raises:
        PluginError: the first problem found (one line).
        ValueError: a bad ``--prompt-data`` file.
    """
    lines = []
    if cfg.custom_loss_function_path:
        plugin = load_loss_plugin(cfg.custom_loss_function_path, cfg)
        probe_loss_plugin(plugin, PolicyLossConfig.from_config(cfg))
        lines.append(f"loss: {plugin.plugin_name}")
    spec = rollout_spec(cfg)
    load_rollout_function(spec)
    lines.append(f"rollout: {spec}")
    if cfg.custom_generate_function_path:
        if spec == LIVE_ROLLOUT:
            raise PluginError("--custom-generate-function-path needs a rollout that generates: the default rollout "
                              "trains on live conversations; give --prompt-data (the prompt-dataset rollout) or a "
                              "--rollout-function-path that calls the generate function")
        load_generate_function(cfg.custom_generate_function_path)
        lines.append(f"generate: {cfg.custom_generate_function_path}")
    if cfg.prompt_data:
        from openclaw_rl.rollout.prompt_rollout import load_prompts

        if (getattr(cfg, "extra", None) or {}).get("data_path"):
            raise PluginError("--prompt-data generates through the intercept server; it cannot be combined with "
                              "--data-path (offline recorded sessions)")
        if not cfg.custom_rm_path:
            raise PluginError("--prompt-data needs a reward for the generated responses: give --custom-rm-path")
        load_prompts(cfg.prompt_data, cfg.input_key, cfg.label_key)
    if cfg.custom_rm_path:
        reward = RewardPlugin(cfg.custom_rm_path, cfg, build=False)
        lines.append(f"reward: {reward.name} ({reward.convention} form)")
    return lines
