"""Rollout and generate plugins (``--rollout-function-path``, ``--custom-generate-function-path``).

Both follow slime (THUDM/slime, ``slime/rollout/sglang_rollout.py``):

* ``generate_rollout(args, rollout_id, data_source, evaluation=False)`` returns the step's samples
  grouped per prompt, ``list[list[Sample]]`` (a flat ``list[Sample]`` is read as groups of one),
  optionally with metrics: ``(groups, metrics)``, or an object with ``.samples`` and ``.metrics``
  (slime's ``RolloutFnTrainOutput``). Sync or ``async``. Default: the rollout service's choice
  for the config (:meth:`slime.plugins.hooks.RolloutService.default_rollout`; OpenClaw-RL's: live
  conversations, or with ``--prompt-data`` the prompt-dataset rollout, which calls the generate
  hook).
* ``async generate(args, sample, sampling_params) -> Sample | list[Sample]``: generate one
  prompt's response (or several samples, e.g. an agent's turns). ``sample.prompt`` holds the
  prompt (text or chat messages), ``sample.label`` the dataset label; ``sampling_params`` is a dict
  ``temperature``, ``top_p``, ``max_new_tokens``, ``stop``. The returned samples must carry the
  exact token ids (``tokens`` = prompt + response, ``response_length``, ``rollout_log_probs``).
  Default: the rollout service's (:meth:`slime.plugins.hooks.RolloutService.default_generate`;
  OpenClaw-RL's goes through the intercept server and reads the turn back token-exactly).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from slime.plugins.calls import call_async
from slime.plugins.hooks import RolloutChoice
from slime.plugins.loader import PluginError, check_parameters, check_return_annotation, load_function
from slime.record.sample import Sample, SampleStatus
from slime.orchestration.services import load_service_class

__all__ = ["GENERATE_FLAG", "ROLLOUT_FLAG", "call_generate", "load_generate_function", "load_rollout_function",
           "normalize_rollout_output", "rollout_choice", "rollout_spec"]

ROLLOUT_FLAG = "--rollout-function-path"
GENERATE_FLAG = "--custom-generate-function-path"


def rollout_choice(cfg: Any) -> RolloutChoice:
    """The rollout of a run: ``--rollout-function-path`` (taken to yield groups and to call the
    generate hook), else the rollout service's default for ``cfg``.

    Raises:
        ConfigError / PluginError: the rollout service does not load.
    """
    if cfg.rollout_function_path:
        return RolloutChoice(cfg.rollout_function_path, groups=True, generates=True)
    return load_service_class(getattr(cfg, "rollout_service", None)).default_rollout(cfg)


def rollout_spec(cfg: Any) -> str:
    """The rollout function spec of a run (:func:`rollout_choice`)."""
    return rollout_choice(cfg).spec


def load_rollout_function(spec: str) -> Callable:
    """Load and check a rollout function (default name ``generate_rollout``).

    Raises:
        PluginError: missing file / function, or parameters other than
            ``(args, rollout_id, data_source, evaluation=False)``.
    """
    fn = load_function(spec, ROLLOUT_FLAG, default_name="generate_rollout")
    check_parameters(fn, f"{ROLLOUT_FLAG} {spec}", ("args", "rollout_id", "data_source"), optional=("evaluation",))
    return fn


def load_generate_function(spec: str) -> Callable:
    """Load and check a generate function (default name ``generate`` when a file names none).

    Raises:
        PluginError: missing file / function, parameters other than ``(args, sample,
            sampling_params)``, or a return annotation that is neither ``Sample`` nor a list.
    """
    fn = load_function(spec, GENERATE_FLAG, default_name="generate")
    where = f"{GENERATE_FLAG} {spec}"
    check_parameters(fn, where, ("args", "sample", "sampling_params"))
    check_return_annotation(fn, where, (Sample, list, tuple), "a Sample or a list of Samples")
    return fn


async def call_generate(fn: Callable, name: str, args: Any, sample: Sample, sampling_params: dict) -> list[Sample]:
    """Call a generate function (``async``, or sync in a worker thread) and check its result.

    Returns:
        The generated samples (validated; ``PENDING`` becomes ``COMPLETED``).

    Raises:
        Exception: whatever the plugin raised; ``ValueError`` naming ``name`` for a result that
            is not a non-empty Sample / list of Samples, or a sample with an empty prompt.
    """
    out = await call_async(fn, args, sample, sampling_params)
    samples = out if isinstance(out, (list, tuple)) else [out]
    if not samples or not all(isinstance(s, Sample) for s in samples):
        raise ValueError(f"{name} returned {type(out).__name__}; expected a Sample or a non-empty list of Samples")
    for s in samples:
        s.validate()
        if s.response_length > 0 and s.prompt_length < 1:
            raise ValueError(f"{name} returned a sample without prompt tokens (tokens must be prompt + response ids)")
        if s.status == SampleStatus.PENDING:
            s.status = SampleStatus.COMPLETED
    return list(samples)


def normalize_rollout_output(out: Any, spec: str) -> tuple[list[list[Sample]], dict]:
    """``(groups, metrics)`` from whatever a rollout function returned (see module doc).

    Raises:
        PluginError: ``--rollout-function-path <spec> returned ...; expected ...``.
    """
    metrics: Any = {}
    if hasattr(out, "samples") and not isinstance(out, (list, tuple)):
        out, metrics = out.samples, getattr(out, "metrics", None) or {}
    elif isinstance(out, tuple) and len(out) == 2 and isinstance(out[1], (dict, type(None))):
        out, metrics = out[0], out[1] or {}
    expected = "a list of sample groups (list[list[Sample]]), optionally with a metrics dict"
    if not isinstance(out, (list, tuple)) or not isinstance(metrics, dict):
        raise PluginError(f"{ROLLOUT_FLAG} {spec} returned {type(out).__name__}; expected {expected}")
    groups = [list(g) if isinstance(g, (list, tuple)) else [g] for g in out]
    bad = next((s for g in groups for s in g if not isinstance(s, Sample)), None)
    if bad is not None:
        raise PluginError(f"{ROLLOUT_FLAG} {spec} returned a group holding {type(bad).__name__}; expected {expected}")
    return groups, dict(metrics)
