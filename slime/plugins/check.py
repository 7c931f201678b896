"""Start-up check of every plugin a run uses, before Ray or any model starts.

``python slime/train.py`` calls :func:`check_plugins` right after parsing the command line: a
missing file, a missing function, wrong parameters or a wrong return type is then a one-line
``slime/train.py: error: ...`` naming the flag and what was expected (exit code 2), instead of a
failure minutes into the run. The actors load the same plugins again where they run.
"""

from __future__ import annotations

from typing import Any

from slime.plugins.loader import PluginError
from slime.record.prompt_data import load_prompts
from slime.plugins.reward import RewardPlugin
from slime.plugins.rollout import load_generate_function, load_rollout_function, rollout_choice
from slime.trainer.registry import load_train_backend

__all__ = ["check_plugins"]


def check_plugins(cfg: Any, method: Any = None) -> list[str]:
    """Load and check every plugin a run uses.

    * loss (``--custom-loss-function-path``, else the method's own loss): convention detected,
      return annotation checked, then one call on a probe batch by the run's training backend
      (``--train-backend``, :meth:`slime.trainer.backend.TrainingBackend.check_loss`), so a wrong
      return type fails here;
    * rollout: parameters ``(args, rollout_id, data_source, evaluation=False)``;
    * generate: parameters ``(args, sample, sampling_params)`` and annotation; it needs a rollout
      that generates (``--prompt-data`` or a custom ``--rollout-function-path``);
    * reward: form detected and parameters checked (the simple form's model is not built here);
    * ``--prompt-data``: the file parses and a reward is given.

    Args:
        cfg: the parsed :class:`slime.config.arguments.SlimeConfig`.
        method: the run's :class:`slime.methods.Method` (for its loss), or None.

    Returns:
        One line per plugin in use (``"loss: plugin x.py:compute_loss (simple convention)"``).

    Raises:
        PluginError: the first problem found (one line).
        ValueError: a bad ``--prompt-data`` file.
    """
    lines = []
    loss_spec = cfg.custom_loss_function_path or (method.loss_function() if method is not None else None)
    if loss_spec:
        # the backend that will call it probes it (torch loads here, only for a run with a loss plugin)
        lines.append(f"loss: {load_train_backend(cfg.train_backend).check_loss(loss_spec, cfg)}")
    choice = rollout_choice(cfg)
    load_rollout_function(choice.spec)
    lines.append(f"rollout: {choice.spec}")
    if cfg.custom_generate_function_path:
        if not choice.generates:
            raise PluginError("--custom-generate-function-path needs a rollout that generates: the default rollout "
                              "trains on live conversations; give --prompt-data (the prompt-dataset rollout) or a "
                              "--rollout-function-path that calls the generate function")
        load_generate_function(cfg.custom_generate_function_path)
        lines.append(f"generate: {cfg.custom_generate_function_path}")
    if cfg.prompt_data:

        if not cfg.custom_rm_path:
            raise PluginError("--prompt-data needs a reward for the generated responses: give --custom-rm-path")
        load_prompts(cfg.prompt_data, cfg.input_key, cfg.label_key, cfg.metadata_key)
    if cfg.custom_rm_path:
        reward = RewardPlugin(cfg.custom_rm_path, cfg, build=False)
        lines.append(f"reward: {reward.name} ({reward.convention} form)")
    return lines
