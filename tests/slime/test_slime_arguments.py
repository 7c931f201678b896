"""Tests for slime.config.arguments: slime flag names, aliases, derived defaults, one-line ConfigErrors."""

from __future__ import annotations

import dataclasses

import pytest

from slime.config.arguments import ConfigError, FlagSection, SlimeConfig, parse_args
from slime.config.flags import flag


def test_defaults_resolve_derived_values():
    cfg = parse_args([])
    assert isinstance(cfg, SlimeConfig)
    assert cfg.global_batch_size == cfg.rollout_batch_size * cfg.n_samples_per_prompt == 16
    assert cfg.eps_clip_high == cfg.eps_clip == 0.2
    assert cfg.tis_cap == 2.0
    assert cfg.lora_rank is None and not cfg.use_lora
    assert cfg.extra == {}


def test_slime_flags_and_aliases():
    cfg = parse_args([
        "--rollout-batch-size", "4", "--num-rollouts-per-prompt", "8", "--global-batch-size", "16",
        "--micro-batch-size", "2", "--lr", "1e-5", "--eps-clip", "0.2", "--eps-clip-high", "0.28",
        "--use-kl-loss", "--kl-loss-coef", "0.01", "--kl-loss-type", "low_var_kl",
        "--save-dir", "/tmp/ck", "--save-interval", "5", "--hf-checkpoint", "/models/q",
        "--use-tis", "--tis-cap", "3", "--max-staleness", "2",
        "--custom-loss-function-path", "plugins/loss.py:my_loss",
        "--rollout-function-path", "pkg.mod.generate_rollout",
    ])
    assert cfg.n_samples_per_prompt == 8
    assert cfg.grad_accumulation_steps == 8
    assert cfg.num_steps_per_rollout == 2
    assert cfg.eps_clip_high == 0.28
    assert cfg.kl_loss_type == "low_var_kl" and cfg.use_kl_loss
    assert cfg.save == "/tmp/ck" and cfg.model_path == "/models/q"
    assert cfg.use_tis and cfg.tis_cap == 3.0 and cfg.max_staleness == 2
    assert parse_args(["--save", "/x"]).save == "/x"
    assert parse_args(["--n-samples-per-prompt", "2"]).n_samples_per_prompt == 2


@pytest.mark.parametrize("argv, rank, alpha, dropout, modules", [
    (["--lora-rank", "64", "--lora-alpha", "128", "--lora-dropout", "0.05"], 64, 128.0, 0.05, None),  # the seed's
    (["--lora-rank", "8"], 8, 16.0, 0.0, None),
    (["--lora-target-modules", "q_proj"], 16, 32.0, 0.0, ("q_proj",)),
    (["--use-lora", "--lora-rank", "64", "--lora-alpha", "128"], 64, 128.0, 0.0, None),
])
def test_lora_flags_turn_lora_on(argv, rank, alpha, dropout, modules):
    """The seed's LORA_ARGS has no --use-lora: any --lora-* flag turns LoRA on."""
    cfg = parse_args(argv)
    assert cfg.use_lora
    assert (cfg.lora_rank, cfg.lora_alpha, cfg.lora_dropout, cfg.lora_target_modules) == (rank, alpha, dropout, modules)


def test_lora_defaults_and_modules():
    cfg = parse_args(["--use-lora", "--lora-rank", "8", "--lora-target-modules", "q_proj", "v_proj"])
    assert cfg.lora_rank == 8 and cfg.lora_alpha == 16.0 and cfg.lora_dropout == 0.0
    assert cfg.lora_target_modules == ("q_proj", "v_proj")


@dataclasses.dataclass(frozen=True)
class _OPDFlags:
    teacher_url: str = flag("http://t", "teacher endpoint")
    opd_kl_coef: float = flag(1.0, "KL weight", ge=0)


def test_config_is_immutable_and_extra_is_read_only():
    cfg = parse_args(["--opd-kl-coef", "0.5"], [FlagSection(_OPDFlags, "opd", key="method")])
    assert cfg.extra["opd_kl_coef"] == 0.5 and cfg.get("teacher_url") == "http://t"
    assert cfg.flags_of("method", _OPDFlags) == _OPDFlags(opd_kl_coef=0.5) and cfg.opd_kl_coef == 0.5
    assert cfg.get("lr") == cfg.lr
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.lr = 1.0  # type: ignore[misc]
    with pytest.raises(TypeError):
        cfg.extra["opd_kl_coef"] = 2.0  # type: ignore[index]
    assert cfg.replace(lr=2e-6).lr == 2e-6 and cfg.lr != 2e-6


def test_unknown_args():
    with pytest.raises(ConfigError, match="unrecognized arguments: --bogus"):
        parse_args(["--bogus", "1"])
    cfg = parse_args(["--bogus", "1"], allow_unknown=True)
    assert cfg.unknown_args == ("--bogus", "1")


@pytest.mark.parametrize(
    "argv, fragment",
    [
        (["--global-batch-size", "16", "--micro-batch-size", "3"], "not divisible by --micro-batch-size"),
        (["--eps-clip", "0"], "--eps-clip must be > 0"),
        (["--eps-clip", "-0.1"], "--eps-clip must be > 0"),
        (["--rollout-max-context-len", "1"], "--rollout-max-context-len must be >= 2"),
        (["--truncated-replies", "keep"], "invalid choice"),
        (["--keep-published-versions", "0"], "--keep-versions must be >= 1"),
        (["--kl-loss-type", "k4"], "--kl-loss-type 'k4' is unknown"),
        (["--advantage-estimator", "magic"], "invalid choice"),
        (["--rollout-batch-size", "4", "--global-batch-size", "3", "--micro-batch-size", "1"], "not divisible by --global-batch-size"),
        (["--lr", "0"], "--lr must be > 0"),
        (["--save-interval", "5"], "--save-interval needs --save"),
        (["--use-tis", "--tis-cap", "0"], "--tis-cap must be > 0"),
        (["--eps-clip-c", "1.0"], "--eps-clip-c must be > 1"),
        (["--loss-type", "custom_loss"], "needs --custom-loss-function-path"),
        (["--custom-rm-path", "not a path"], "--custom-rm-path"),
        (["--micro-batch-size", "x"], "invalid int value"),
        (["--train-backend", "megatron"], "megatron-core's forward pass needs CUDA"),
        (["--actor-num-gpus-per-node", "2", "--actor-gpu-ids", "0"], "names 1 GPUs for 2 train actor"),
        (["--actor-num-nodes", "2", "--actor-gpu-ids", "0,1"], "names the devices of one node"),
        (["--actor-gpu-ids", "gpu0"], "GPU ids must be non-negative integers"),
        (["--rollout-num-gpus", "1", "--rollout-gpu-ids", "1,2"], "names 2 GPUs, --rollout-num-gpus is 1"),
        (["--actor-gpu-ids", "3", "--rollout-num-gpus", "1", "--rollout-gpu-ids", "3"], "share a GPU"),
    ],
)
def test_bad_configs_raise_one_line_config_error(argv, fragment):
    with pytest.raises(ConfigError, match=fragment) as info:
        parse_args(argv)
    assert "\n" not in str(info.value)
    assert isinstance(info.value, ValueError)
