"""Command-line arguments of the trainer, parsed once into an immutable :class:`SlimeConfig`.

Flag names and meanings follow slime (THUDM/slime, ``slime/utils/arguments.py``) so launch
scripts written for slime read the same here. Method modules (Binary RL, OPD, Combine, Track-2
environments) add their own argument groups through ``extra_arg_adders``; whatever they add lands
in ``SlimeConfig.extra`` (a read-only mapping), so there is no mutable global argument bag: the
config object is built once and passed explicitly.
"""

from __future__ import annotations

import argparse
import dataclasses
import re
import types
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "ADVANTAGE_ESTIMATORS",
    "KL_LOSS_TYPES",
    "LOSS_TYPES",
    "ConfigError",
    "SlimeConfig",
    "add_slime_arguments",
    "build_parser",
    "parse_args",
    "validate_config",
]

KL_LOSS_TYPES = ("k1", "k2", "k3", "low_var_kl")
ADVANTAGE_ESTIMATORS = (
    "grpo",
    "broadcast",
    "opd",
    "combine",
)
LOSS_TYPES = ("policy_loss", "custom_loss")

# "path/to/file.py", "path/to/file.py:function" or "package.module.function"
_PLUGIN_FILE_RE = re.compile(r"^.+\.py(:[A-Za-z_][A-Za-z0-9_]*)?$")
_PLUGIN_MODULE_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)+$")


class ConfigError(ValueError):
    """A bad command line or an inconsistent configuration; the message is one line."""


class _RaisingParser(argparse.ArgumentParser):
    """ArgumentParser whose errors raise :class:`ConfigError` instead of exiting the process."""

    def error(self, message: str):  # type: ignore[override]
        raise ConfigError(message)


def _flag(group: argparse._ArgumentGroup, *names: str, help: str) -> None:
    """Add a ``store_true`` flag (default ``False``) to ``group``."""
    group.add_argument(*names, action="store_true", default=False, help=help)


def add_slime_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Add every core trainer flag to ``parser`` (in groups) and return the same parser.

    Method modules call this on their own parser or pass extra adders to :func:`parse_args`.
    Defaults that depend on other flags (``--global-batch-size``, ``--eps-clip-high``, LoRA
    sizes) are ``None`` here and resolved in :func:`parse_args`.
    """
    g = parser.add_argument_group("rollout")
    g.add_argument("--rollout-batch-size", type=int, default=16,
                   help="prompts (groups) per rollout step")
    g.add_argument("--n-samples-per-prompt", "--num-rollouts-per-prompt", dest="n_samples_per_prompt",
                   type=int, default=1, help="responses sampled per prompt (GRPO group size)")
    g.add_argument("--num-rollout", type=int, default=None,
                   help="rollout steps to run; None runs until stopped (async serving)")
    g.add_argument("--rollout-max-response-len", type=int, default=2048)
    g.add_argument("--rollout-temperature", type=float, default=1.0)
    g.add_argument("--max-staleness", type=int, default=None,
                   help="drop samples whose weight_version lags the trainer by more; None: no bound")

    g = parser.add_argument_group("batching")
    g.add_argument("--global-batch-size", type=int, default=None,
                   help="samples per optimizer step; default rollout_batch_size * n_samples_per_prompt")
    g.add_argument("--micro-batch-size", type=int, default=1, help="samples per forward/backward pass")

    g = parser.add_argument_group("optimizer")
    g.add_argument("--lr", type=float, default=1e-6)
    g.add_argument("--weight-decay", type=float, default=0.0)
    g.add_argument("--adam-beta1", type=float, default=0.9)
    g.add_argument("--adam-beta2", type=float, default=0.98)
    g.add_argument("--clip-grad", type=float, default=1.0, help="global grad-norm clip; 0 disables")
    _flag(g, "--offload-optimizer-state", help="keep optimizer state on CPU between steps")

    g = parser.add_argument_group("loss")
    g.add_argument("--loss-type", choices=LOSS_TYPES, default="policy_loss")
    g.add_argument("--advantage-estimator", choices=ADVANTAGE_ESTIMATORS, default="grpo",
                   help="grpo (groups of --n-samples-per-prompt), broadcast (Binary RL: the turn's reward "
                        "on every token), opd (on-policy distillation), combine (Binary RL + OPD)")
    _flag(g, "--disable-grpo-std-normalization",
                   help="GRPO: subtract the group mean only (Dr. GRPO)")
    _flag(g, "--disable-rewards-normalization",
                   help="use raw rewards as advantages (no group mean/std)")
    g.add_argument("--eps-clip", type=float, default=0.2, help="PPO clip ratio (lower side)")
    g.add_argument("--eps-clip-high", type=float, default=None,
                   help="PPO clip ratio upper side (DAPO clip-higher); default eps_clip")
    g.add_argument("--eps-clip-c", type=float, default=None,
                   help="dual-clip constant c > 1 for negative advantages (Ye et al. 2020)")
    _flag(g, "--use-kl-loss", help="add a KL(policy || reference) penalty to the loss")
    g.add_argument("--kl-loss-coef", type=float, default=0.0)
    g.add_argument("--kl-loss-type", default="k1",
                   help=f"KL estimator, one of {', '.join(KL_LOSS_TYPES)}")
    g.add_argument("--entropy-coef", type=float, default=0.0)
    _flag(g, "--use-tis", help="truncated importance sampling on train/rollout mismatch")
    g.add_argument("--tis-cap", type=float, default=None, help="TIS weight cap (default 2.0)")

    g = parser.add_argument_group("model")
    g.add_argument("--model-path", "--hf-checkpoint", dest="model_path", default=None,
                   help="Hugging Face checkpoint directory of the policy")
    g.add_argument("--seed", type=int, default=1234)
    _flag(g, "--use-lora", help="train a LoRA adapter (peft) instead of all weights")
    g.add_argument("--lora-rank", type=int, default=None, help="LoRA rank (default 16)")
    g.add_argument("--lora-alpha", type=float, default=None, help="LoRA alpha (default 2 * rank)")
    g.add_argument("--lora-dropout", type=float, default=None, help="LoRA dropout (default 0.0)")
    g.add_argument("--lora-target-modules", nargs="+", default=None,
                   help="module names to adapt (default: q_proj k_proj v_proj o_proj)")

    g = parser.add_argument_group("checkpoint")
    g.add_argument("--save", "--save-dir", dest="save", default=None, help="checkpoint directory")
    g.add_argument("--save-interval", type=int, default=None, help="save every N train steps")
    g.add_argument("--resume-from-checkpoint", default=None,
                   help="checkpoint dir, or a save dir (its checkpoint-latest is used)")

    g = parser.add_argument_group("plugins")
    g.add_argument("--custom-loss-function-path", default=None,
                   help="loss plugin: file.py[:fn] or pkg.mod.fn (compute_loss / loss_function; docs/plugins.md)")
    g.add_argument("--rollout-function-path", default=None,
                   help="rollout plugin generate_rollout(args, rollout_id, data_source, evaluation=False)")
    g.add_argument("--custom-generate-function-path", default=None,
                   help="generate plugin generate(args, sample, sampling_params), with --prompt-data")
    g.add_argument("--custom-rm-path", default=None,
                   help="reward plugin: get_reward_model(config) or reward(args, sample)")
    g.add_argument("--max-plugin-failure-fraction", type=float, default=0.5,
                   help="stop the run when more than this fraction of a step's samples failed in a "
                        "generate or reward plugin (or judge)")
    g.add_argument("--prompt-data", default=None,
                   help="JSONL prompt dataset: train with the prompt-dataset rollout, which generates "
                        "through the intercept server (the --custom-generate-function-path hook)")
    g.add_argument("--input-key", default="prompt", help="--prompt-data field holding the prompt")
    g.add_argument("--label-key", default="label", help="--prompt-data field holding the label")
    return parser


@dataclass(frozen=True)
class SlimeConfig:
    """Immutable trainer configuration, built once by :func:`parse_args` and passed explicitly.

    Every field mirrors the slime flag of the same name (dashes become underscores). Derived
    defaults are already resolved: ``global_batch_size``, ``eps_clip_high``, ``tis_cap`` and
    (with ``use_lora``) ``lora_rank``/``lora_alpha``/``lora_dropout`` are never ``None``.
    ``extra`` is a read-only mapping of the flags added by method modules, also readable as
    attributes (``cfg.prm_model_path``), so the config is the ``args`` slime-style plugins get;
    ``unknown_args`` holds unparsed tokens when ``allow_unknown=True``.
    """

    rollout_batch_size: int = 16
    n_samples_per_prompt: int = 1
    num_rollout: int | None = None
    rollout_max_response_len: int = 2048
    rollout_temperature: float = 1.0
    max_staleness: int | None = None
    global_batch_size: int = 16
    micro_batch_size: int = 1
    lr: float = 1e-6
    weight_decay: float = 0.0
    adam_beta1: float = 0.9
    adam_beta2: float = 0.98
    clip_grad: float = 1.0
    offload_optimizer_state: bool = False
    loss_type: str = "policy_loss"
    advantage_estimator: str = "grpo"
    disable_grpo_std_normalization: bool = False
    disable_rewards_normalization: bool = False
    eps_clip: float = 0.2
    eps_clip_high: float = 0.2
    eps_clip_c: float | None = None
    use_kl_loss: bool = False
    kl_loss_coef: float = 0.0
    kl_loss_type: str = "k1"
    entropy_coef: float = 0.0
    use_tis: bool = False
    tis_cap: float = 2.0
    model_path: str | None = None
    seed: int = 1234
    use_lora: bool = False
    lora_rank: int | None = None
    lora_alpha: float | None = None
    lora_dropout: float | None = None
    lora_target_modules: tuple[str, ...] | None = None
    save: str | None = None
    save_interval: int | None = None
    resume_from_checkpoint: str | None = None
    custom_loss_function_path: str | None = None
    rollout_function_path: str | None = None
    custom_generate_function_path: str | None = None
    custom_rm_path: str | None = None
    max_plugin_failure_fraction: float = 0.5
    prompt_data: str | None = None
    input_key: str = "prompt"
    label_key: str = "label"
    extra: Mapping[str, Any] = field(default_factory=lambda: types.MappingProxyType({}))
    unknown_args: tuple[str, ...] = ()

    @property
    def num_steps_per_rollout(self) -> int:
        """Optimizer steps per rollout: ``rollout_batch_size * n_samples_per_prompt // global_batch_size``."""
        return self.rollout_batch_size * self.n_samples_per_prompt // self.global_batch_size

    @property
    def grad_accumulation_steps(self) -> int:
        """Micro-batches per optimizer step: ``global_batch_size // micro_batch_size``."""
        return self.global_batch_size // self.micro_batch_size

    def __getattr__(self, name: str) -> Any:
        """slime-style ``args.<flag>`` for flags added by method modules (``extra``).

        Raises ``AttributeError`` for names that are neither a field nor in ``extra``.
        """
        extra = self.__dict__.get("extra")
        if extra is not None and not name.startswith("__") and name in extra:
            return extra[name]
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def get(self, name: str, default: Any = None) -> Any:
        """Return a core field or, failing that, ``extra[name]``, else ``default``."""
        if name in _CORE_FIELDS:
            return getattr(self, name)
        return self.extra.get(name, default)

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe dict of all fields (``extra`` flattened into a plain dict under ``"extra"``)."""
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        out["extra"] = dict(self.extra)
        out["lora_target_modules"] = list(self.lora_target_modules) if self.lora_target_modules else None
        out["unknown_args"] = list(self.unknown_args)
        return out

    def replace(self, **changes: Any) -> "SlimeConfig":
        """Return a validated copy with ``changes`` applied; raises :class:`ConfigError`."""
        new = dataclasses.replace(self, **changes)
        validate_config(new)
        return new


_CORE_FIELDS = frozenset(f.name for f in dataclasses.fields(SlimeConfig)) - {"extra", "unknown_args"}


def build_parser(extra_arg_adders: Iterable[Callable[[argparse.ArgumentParser], Any]] = ()) -> argparse.ArgumentParser:
    """Return a parser with the core flags plus each adder's flags; errors raise :class:`ConfigError`."""
    parser = _RaisingParser(prog="slime/train.py", description="slime trainer (OpenClaw-RL)", allow_abbrev=False,
                            formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    add_slime_arguments(parser)
    for adder in extra_arg_adders:
        adder(parser)
    return parser


def parse_args(
    argv: Sequence[str] | None = None,
    extra_arg_adders: Iterable[Callable[[argparse.ArgumentParser], Any]] = (),
    *,
    allow_unknown: bool = False,
) -> SlimeConfig:
    """Parse ``argv`` (``sys.argv[1:]`` when ``None``) once into a validated :class:`SlimeConfig`.

    Args:
        argv: command-line tokens.
        extra_arg_adders: callables ``adder(parser)`` that add method-specific argument groups;
            their values end up in ``config.extra`` keyed by ``dest``.
        allow_unknown: keep unrecognised tokens in ``config.unknown_args`` instead of failing
            (``parse_known_args`` style, for launchers that forward flags to other programs).

    Returns:
        The frozen config with derived defaults resolved.

    Raises:
        ConfigError: unknown flag (unless ``allow_unknown``), bad value, or an inconsistent
            combination; the message is one line naming the flag.
    """
    parser = build_parser(extra_arg_adders)
    ns, unknown = parser.parse_known_args(argv)
    if unknown and not allow_unknown:
        raise ConfigError(f"unrecognized arguments: {' '.join(unknown)}")
    values = vars(ns)
    core = {k: v for k, v in values.items() if k in _CORE_FIELDS}
    extra = {k: v for k, v in values.items() if k not in _CORE_FIELDS}
    _check_lora_flags_need_use_lora(core)
    core = _resolve_defaults(core)
    cfg = SlimeConfig(**core, extra=types.MappingProxyType(extra), unknown_args=tuple(unknown))
    validate_config(cfg)
    return cfg


def _check_lora_flags_need_use_lora(core: dict[str, Any]) -> None:
    if core["use_lora"]:
        return
    for name in ("lora_rank", "lora_alpha", "lora_dropout", "lora_target_modules"):
        if core[name] is not None:
            raise ConfigError(f"--{name.replace('_', '-')} needs --use-lora")


def _resolve_defaults(core: dict[str, Any]) -> dict[str, Any]:
    core = dict(core)
    if core["global_batch_size"] is None:
        core["global_batch_size"] = core["rollout_batch_size"] * core["n_samples_per_prompt"]
    if core["eps_clip_high"] is None:
        core["eps_clip_high"] = core["eps_clip"]
    if core["tis_cap"] is None:
        core["tis_cap"] = 2.0
    if core["use_lora"]:
        core["lora_rank"] = 16 if core["lora_rank"] is None else core["lora_rank"]
        core["lora_alpha"] = float(2 * core["lora_rank"]) if core["lora_alpha"] is None else core["lora_alpha"]
        core["lora_dropout"] = 0.0 if core["lora_dropout"] is None else core["lora_dropout"]
    if core["lora_target_modules"] is not None:
        core["lora_target_modules"] = tuple(core["lora_target_modules"])
    return core


def validate_config(cfg: SlimeConfig) -> None:
    """Check cross-flag consistency of ``cfg``; return ``None`` or raise :class:`ConfigError`."""

    def need(ok: bool, message: str) -> None:
        if not ok:
            raise ConfigError(message)

    for name in ("rollout_batch_size", "n_samples_per_prompt", "global_batch_size", "micro_batch_size",
                 "rollout_max_response_len"):
        need(getattr(cfg, name) > 0, f"--{name.replace('_', '-')} must be > 0, got {getattr(cfg, name)}")
    need(cfg.global_batch_size % cfg.micro_batch_size == 0,
         f"--global-batch-size {cfg.global_batch_size} is not divisible by --micro-batch-size {cfg.micro_batch_size}")
    rollout_samples = cfg.rollout_batch_size * cfg.n_samples_per_prompt
    need(rollout_samples % cfg.global_batch_size == 0,
         f"rollout samples ({cfg.rollout_batch_size} x {cfg.n_samples_per_prompt}) are not divisible by "
         f"--global-batch-size {cfg.global_batch_size}")
    need(cfg.num_rollout is None or cfg.num_rollout > 0, f"--num-rollout must be > 0, got {cfg.num_rollout}")
    need(cfg.rollout_temperature > 0, f"--rollout-temperature must be > 0, got {cfg.rollout_temperature}")
    need(cfg.max_staleness is None or cfg.max_staleness >= 0, f"--max-staleness must be >= 0, got {cfg.max_staleness}")
    need(cfg.lr > 0, f"--lr must be > 0, got {cfg.lr}")
    need(cfg.weight_decay >= 0, f"--weight-decay must be >= 0, got {cfg.weight_decay}")
    need(0 <= cfg.adam_beta1 < 1, f"--adam-beta1 must lie in [0, 1), got {cfg.adam_beta1}")
    need(0 <= cfg.adam_beta2 < 1, f"--adam-beta2 must lie in [0, 1), got {cfg.adam_beta2}")
    need(cfg.clip_grad >= 0, f"--clip-grad must be >= 0, got {cfg.clip_grad}")
    need(cfg.eps_clip > 0, f"--eps-clip must be > 0, got {cfg.eps_clip}")
    need(cfg.eps_clip < 1, f"--eps-clip must be < 1 (the ratio is clipped to [1 - eps, ...]), got {cfg.eps_clip}")
    need(cfg.eps_clip_high > 0, f"--eps-clip-high must be > 0, got {cfg.eps_clip_high}")
    need(cfg.eps_clip_c is None or cfg.eps_clip_c > 1, f"--eps-clip-c must be > 1, got {cfg.eps_clip_c}")
    need(cfg.kl_loss_type in KL_LOSS_TYPES,
         f"--kl-loss-type {cfg.kl_loss_type!r} is unknown; choose one of {', '.join(KL_LOSS_TYPES)}")
    need(cfg.kl_loss_coef >= 0, f"--kl-loss-coef must be >= 0, got {cfg.kl_loss_coef}")
    need(cfg.entropy_coef >= 0, f"--entropy-coef must be >= 0, got {cfg.entropy_coef}")
    need(cfg.tis_cap > 0, f"--tis-cap must be > 0, got {cfg.tis_cap}")
    need(cfg.advantage_estimator in ADVANTAGE_ESTIMATORS,
         f"--advantage-estimator {cfg.advantage_estimator!r} is unknown; choose one of {', '.join(ADVANTAGE_ESTIMATORS)}")
    need(cfg.loss_type in LOSS_TYPES, f"--loss-type {cfg.loss_type!r} is unknown; choose one of {', '.join(LOSS_TYPES)}")
    need(cfg.loss_type != "custom_loss" or cfg.custom_loss_function_path is not None,
         "--loss-type custom_loss needs --custom-loss-function-path")
    if cfg.use_lora:
        need(cfg.lora_rank is not None and cfg.lora_rank > 0, f"--lora-rank must be > 0, got {cfg.lora_rank}")
        need(cfg.lora_alpha is not None and cfg.lora_alpha > 0, f"--lora-alpha must be > 0, got {cfg.lora_alpha}")
        need(cfg.lora_dropout is not None and 0 <= cfg.lora_dropout < 1,
             f"--lora-dropout must lie in [0, 1), got {cfg.lora_dropout}")
    else:
        for name in ("lora_rank", "lora_alpha", "lora_dropout", "lora_target_modules"):
            need(getattr(cfg, name) is None, f"--{name.replace('_', '-')} needs --use-lora")
    need(cfg.save_interval is None or cfg.save_interval > 0, f"--save-interval must be > 0, got {cfg.save_interval}")
    need(cfg.save_interval is None or cfg.save is not None, "--save-interval needs --save")
    need(0.0 <= cfg.max_plugin_failure_fraction <= 1.0,
         f"--max-plugin-failure-fraction must lie in [0, 1], got {cfg.max_plugin_failure_fraction}")
    for name in ("custom_loss_function_path", "rollout_function_path", "custom_generate_function_path",
                 "custom_rm_path"):
        path = getattr(cfg, name)
        need(path is None or bool(_PLUGIN_FILE_RE.match(path) or _PLUGIN_MODULE_RE.match(path)),
             f"--{name.replace('_', '-')} {path!r} must be 'path/to/file.py[:function]' or 'package.module.function'")
