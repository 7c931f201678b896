"""Contract checks, one per hook (after slime's ``tests/plugin_contracts``): each ``assert_*``
takes a plugin (or class) and checks it against its :mod:`slime.plugins.hooks` protocol by calling it on
real inputs. Point one at your own plugin with the hook's environment variable, e.g.
``CONTRACT_LOSS_PATH=my-method/loss.py pytest tests/plugin_contracts``:

``CONTRACT_LOSS_PATH``, ``CONTRACT_REWARD_PATH``, ``CONTRACT_ROLLOUT_PATH``,
``CONTRACT_GENERATE_PATH``, ``CONTRACT_METHOD_PATH`` (``path/to/method.py:Class``).
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import math
import os
from collections.abc import Sequence
from typing import Any

from slime.config.flags import flag_specs
from slime.plugins.hooks import DataSource, RolloutChoice, RolloutService
from slime.algorithms.losses import LossOutputs, PolicyLossConfig
from slime.record.sample import Sample


def contract_path(hook: str, default: str) -> str:
    """``$CONTRACT_<HOOK>_PATH`` when set, else ``default``."""
    return os.environ.get(f"CONTRACT_{hook.upper()}_PATH") or default


def assert_sample_contract(s: Any, *, judged: bool = False) -> None:
    """A valid :class:`Sample` with exact ids (prompt before response); with ``judged`` also a
    finite reward."""
    assert isinstance(s, Sample), f"expected a Sample, got {type(s).__name__}"
    s.validate()
    assert s.response_length == 0 or s.prompt_length >= 1, "tokens must be prompt ids + response ids"
    if judged:
        assert s.reward is not None and math.isfinite(s.reward), "a judged sample has a finite reward"


def assert_loss_contract(plugin: Any) -> LossOutputs:
    """A loaded loss (:class:`slime.plugins.loss.LossPlugin`, any convention) returns, on the
    probe batch, a finite scalar :class:`LossOutputs` with a gradient graph and float metrics."""
    from slime.guards.loss import checked_loss
    from slime.plugins.loss import probe_inputs, probe_loss_plugin

    probe_loss_plugin(plugin, PolicyLossConfig())  # raises PluginError on a contract break
    out = checked_loss(plugin, plugin.plugin_name, probe_inputs(PolicyLossConfig()), PolicyLossConfig())
    assert isinstance(out, LossOutputs) and out.loss.requires_grad and out.loss.numel() == 1
    assert all(isinstance(v, float) and math.isfinite(v) for v in out.metrics().values())
    return out


def assert_reward_contract(plugin: Any, samples: Sequence[Sample]) -> list[tuple[float, dict]]:
    """A loaded reward (:class:`slime.plugins.reward.RewardPlugin`, any form) scores each sample
    with a finite float and a details dict, in order, one per sample."""
    results = asyncio.run(plugin.score_many(list(samples)))
    assert len(results) == len(samples)
    for res in results:
        assert not isinstance(res, BaseException), f"the reward raised {res!r}"
        reward, details = res
        assert isinstance(reward, float) and math.isfinite(reward) and isinstance(details, dict)
    return results  # type: ignore[return-value]


def assert_rollout_contract(fn: Any, args: Any, data_source: Any, rollout_id: int = 0) -> list[list[Sample]]:
    """``generate_rollout(args, rollout_id, data_source, evaluation=False)``: the protocol's
    parameters, and a result that normalises to non-empty groups of valid judged samples."""
    from slime.plugins.rollout import normalize_rollout_output

    params = list(inspect.signature(fn).parameters)
    assert params[:3] == ["args", "rollout_id", "data_source"] and "evaluation" in params
    assert inspect.signature(fn).parameters["evaluation"].default is False
    out = fn(args, rollout_id, data_source, evaluation=False)
    if inspect.isawaitable(out):
        out = asyncio.run(out)
    groups, metrics = normalize_rollout_output(out, getattr(fn, "__name__", "rollout"))
    assert groups and all(groups) and all(isinstance(v, (int, float)) for v in metrics.values())
    for g in groups:
        for s in g:
            assert_sample_contract(s, judged=True)
    return groups


def assert_generate_contract(fn: Any, args: Any, prompt: Any, sampling_params: dict) -> list[Sample]:
    """``generate(args, sample, sampling_params)`` fills the sample (or returns several) with exact
    ids, sampling log-probs and a weight version."""
    from slime.plugins.rollout import call_generate

    sample = Sample(tokens=[], response_length=0, rollout_log_probs=[], prompt=prompt)
    out = asyncio.run(call_generate(fn, "generate", args, sample, sampling_params))
    assert out
    for s in out:
        assert_sample_contract(s)
        assert s.response_length >= 1 and len(s.rollout_log_probs) == s.response_length
        assert all(lp <= 0 for lp in s.rollout_log_probs) and s.weight_version >= 0
    return out


def assert_data_source_contract(ds: Any, samples: Sequence[Sample]) -> None:
    """What the rollout manager calls after a step: ``release`` and ``mark_trained`` accept the
    samples the source handed out (and ignore others) without raising."""
    assert isinstance(ds, DataSource)
    ds.release([])
    ds.mark_trained([], 0)
    foreign = Sample(tokens=[1, 2], response_length=1, rollout_log_probs=[-1.0])
    ds.release([foreign])
    ds.mark_trained([foreign], 0)
    for s in samples:
        assert_sample_contract(s)


def assert_rollout_service_class_contract(cls: Any, cfg: Any) -> RolloutChoice:
    """The class-level protocol (run in the driver before anything starts): a flag dataclass,
    a default rollout that loads, a default generate that loads, and start-up checks that return
    warning strings."""
    from slime.plugins.rollout import load_generate_function, load_rollout_function

    assert cls.Flags is None or (dataclasses.is_dataclass(cls.Flags) and all(s.help for s in flag_specs(cls.Flags)))
    choice = cls.default_rollout(cfg)
    assert isinstance(choice, RolloutChoice)
    load_rollout_function(choice.spec)
    load_generate_function(cls.default_generate())
    warnings = cls.check(cfg)
    assert isinstance(warnings, list) and all(isinstance(w, str) and "\n" not in w for w in warnings)
    return choice


def assert_rollout_service_contract(service: Any) -> None:
    """An instance: a data source, rollout args, publishing, metrics (flat numbers) and close."""
    assert isinstance(service, RolloutService)
    assert isinstance(service.data_source, DataSource)
    assert service.rollout_args() is not None
    metrics = service.metrics()
    assert isinstance(metrics, dict) and all(isinstance(v, (int, float)) for v in metrics.values())


def assert_method_contract(cls: Any, cfg: Any, samples: Sequence[Sample], backend: Any = None) -> dict:
    """A :class:`slime.methods.Method`: typed flags with help, ``validate`` passes on the given
    config, ``prepare_samples`` (run with ``backend`` when the method has one) keeps the samples
    valid, and ``compute_advantages`` sets finite advantages of the right length on every sample
    that trains, 0 off the loss mask, and returns float metrics."""
    from slime.methods import Method

    assert inspect.isclass(cls) and issubclass(cls, Method) and not inspect.isabstract(cls)
    if cls.Flags is not None:
        assert dataclasses.is_dataclass(cls.Flags) and cls.Flags.__dataclass_params__.frozen
        assert all(s.help.strip() for s in flag_specs(cls.Flags))
    method = cls(cfg)
    method.validate()
    assert isinstance(method.needs_groups(), bool)
    spec = method.loss_function()
    assert spec is None or isinstance(spec, str)
    samples = list(samples)
    if cls.prepares_samples():
        assert backend is not None, f"{cls.__name__} prepares samples on the train actor: give a backend"
        samples = method.prepare_samples(backend, samples)
    out, metrics = method.compute_advantages(samples)
    assert isinstance(metrics, dict) and all(isinstance(v, (int, float)) and math.isfinite(v) for v in metrics.values())
    for s in out:
        assert_sample_contract(s)
        if s.num_loss_tokens:
            assert s.advantages is not None and len(s.advantages) == s.response_length
            assert all(math.isfinite(a) for a in s.advantages)
            assert all(a == 0.0 for a, m in zip(s.advantages, s.loss_mask) if not m)
    return metrics
