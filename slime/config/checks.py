"""Consistency checks of a :class:`slime.config.arguments.SlimeConfig` (one-line :class:`ConfigError`).

Single-flag bounds come from the flag declarations (:func:`slime.config.flags.flag`); this module adds
the checks that involve several flags, the KL estimator name, plugin spec shapes and the method
name (a registered name or a ``path/to/method.py:Class`` spec).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from slime.config.flags import ConfigError, FlagSpec, check_bounds
from slime.methods.registry import method_names
from slime.orchestration.placement import gpu_ids
from slime.plugins.specs import PLUGIN_SPEC_FLAGS, is_plugin_spec

__all__ = ["KL_LOSS_TYPES", "LOSS_TYPES", "PLUGIN_SPEC_FLAGS", "check_core", "is_plugin_spec"]

#: the ``--kl-loss-type`` estimators (:func:`slime.algorithms.losses.kl_estimate`)
KL_LOSS_TYPES = ("k1", "k2", "k3", "low_var_kl")
#: the ``--loss-type`` values
LOSS_TYPES = ("policy_loss", "custom_loss")


def check_core(cfg: Any, specs: Iterable[FlagSpec]) -> None:
    """Check ``cfg`` (a :class:`slime.config.arguments.SlimeConfig`) against its core flag declarations
    ``specs`` (their bounds) and the cross-flag rules; return ``None`` or raise
    :class:`ConfigError` (message names the flag)."""

    def need(ok: bool, message: str) -> None:
        if not ok:
            raise ConfigError(message)

    for spec in specs:
        check_bounds(spec, getattr(cfg, spec.name))
    need(cfg.global_batch_size % cfg.micro_batch_size == 0,
         f"--global-batch-size {cfg.global_batch_size} is not divisible by --micro-batch-size {cfg.micro_batch_size}")
    rollout_samples = cfg.rollout_batch_size * cfg.n_samples_per_prompt
    need(rollout_samples % cfg.global_batch_size == 0,
         f"rollout samples ({cfg.rollout_batch_size} x {cfg.n_samples_per_prompt}) are not divisible by "
         f"--global-batch-size {cfg.global_batch_size}")
    need(cfg.kl_loss_type in KL_LOSS_TYPES,
         f"--kl-loss-type {cfg.kl_loss_type!r} is unknown; choose one of {', '.join(KL_LOSS_TYPES)}")
    need(cfg.loss_type in LOSS_TYPES, f"--loss-type {cfg.loss_type!r} is unknown; choose one of {', '.join(LOSS_TYPES)}")
    need(cfg.loss_type != "custom_loss" or cfg.custom_loss_function_path is not None,
         "--loss-type custom_loss needs --custom-loss-function-path")
    if cfg.use_lora:
        need(cfg.lora_rank is not None and cfg.lora_alpha is not None and cfg.lora_dropout is not None,
             "--use-lora needs --lora-rank, --lora-alpha and --lora-dropout resolved")
    else:
        for name in ("lora_rank", "lora_alpha", "lora_dropout", "lora_target_modules"):
            need(getattr(cfg, name) is None, f"--{name.replace('_', '-')} needs --use-lora")
    need(cfg.save_interval is None or cfg.save is not None, "--save-interval needs --save")
    for name in PLUGIN_SPEC_FLAGS:
        path = getattr(cfg, name)
        need(path is None or is_plugin_spec(path),
             f"--{name.replace('_', '-')} {path!r} must be 'path/to/file.py[:function]' or 'package.module.function'")
    need(cfg.train_backend == "fsdp", "--train-backend megatron is not available here: megatron-core's forward "
         "pass needs CUDA and this trainer is transformers + peft; use --train-backend fsdp (data-parallel across "
         "--actor-num-nodes x --actor-num-gpus-per-node train actors)")
    _check_gpu_ids(cfg, need)
    _check_method_name(cfg.advantage_estimator)
    need(cfg.rollout_service is None or bool(cfg.rollout_service.strip()), "--rollout-service must not be empty")


def _check_method_name(name: str) -> None:
    names = method_names()
    if name in names or is_plugin_spec(name):
        return
    raise ConfigError(f"argument --advantage-estimator: invalid choice: {name!r} (choose from "
                      f"{', '.join(sorted(names))}, or give path/to/method.py:Class)")


def _check_gpu_ids(cfg: Any, need) -> None:
    """``--actor-gpu-ids`` / ``--rollout-gpu-ids``: integers, one per train actor (one node) and
    one per rollout GPU."""
    try:
        actor, rollout = gpu_ids(cfg.actor_gpu_ids), gpu_ids(cfg.rollout_gpu_ids)
    except ValueError as exc:
        raise ConfigError(f"--actor-gpu-ids / --rollout-gpu-ids: {exc}") from None
    ranks = cfg.actor_num_nodes * cfg.actor_num_gpus_per_node
    if actor:
        need(cfg.actor_num_nodes == 1, "--actor-gpu-ids names the devices of one node; with --actor-num-nodes "
             f"{cfg.actor_num_nodes} let Ray assign them")
        need(len(actor) == ranks, f"--actor-gpu-ids {cfg.actor_gpu_ids} names {len(actor)} GPUs for {ranks} train "
             "actor(s) (--actor-num-gpus-per-node)")
    need(not rollout or len(rollout) == cfg.rollout_num_gpus, f"--rollout-gpu-ids {cfg.rollout_gpu_ids} names "
         f"{len(rollout)} GPUs, --rollout-num-gpus is {cfg.rollout_num_gpus}")
    need(not set(actor) & set(rollout), "--actor-gpu-ids and --rollout-gpu-ids share a GPU")
