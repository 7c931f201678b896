"""Command-line arguments of the trainer, parsed once into an immutable :class:`SlimeConfig`.

Flag names and meanings follow slime (THUDM/slime, ``slime/utils/arguments.py``) so launch
scripts written for slime read the same here. Every core flag is a field of :class:`SlimeConfig`
declared with :func:`slime.config.flags.flag` (default + help in one place); the argparse groups are
generated from those declarations. A method (``--advantage-estimator``) and the rollout service
(``--rollout-service``) bring their own flag dataclasses as *sections* (:class:`FlagSection`);
their resolved values land in ``SlimeConfig.sections["method"]`` / ``["service"]``, read by the
method and service as typed instances (``cfg.flags_of("method", OPDFlags)``). There is no mutable
global argument bag: the config object is built once and passed explicitly.
"""

from __future__ import annotations

import argparse
import dataclasses
import types
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from slime.config.checks import KL_LOSS_TYPES, LOSS_TYPES, check_core
from slime.config.flags import ConfigError, FlagSpec, add_flag_group, build_flags, flag, flag_specs, resolve_flags

__all__ = [
    "KL_LOSS_TYPES",
    "LOSS_TYPES",
    "ConfigError",
    "FlagSection",
    "SlimeConfig",
    "build_parser",
    "core_flag_specs",
    "default_method",
    "parse_args",
    "validate_config",
]

_PLUGIN = "path/to/file.py[:function] or package.module.function"


@dataclass(frozen=True)
class SlimeConfig:
    """Immutable trainer configuration, built once by :func:`parse_args` and passed explicitly.

    Every flag field mirrors the slime flag of the same name (dashes become underscores).
    Derived defaults are already resolved by :func:`parse_args`: ``global_batch_size``,
    ``eps_clip_high``, ``loss_type`` and ``advantage_estimator`` are never ``None``; any
    ``--lora-*`` flag sets ``use_lora``, and with ``use_lora`` neither ``lora_rank`` /
    ``lora_alpha`` / ``lora_dropout`` is ``None``. ``sections`` holds the values of the
    method's and the rollout service's flags (read-only mappings keyed ``"method"`` /
    ``"service"``), also readable as attributes (``cfg.prm_model_path``), so the config is the
    ``args`` slime-style plugins get. ``explicit`` names the flags given on the command line;
    ``unknown_args`` holds unparsed tokens when ``allow_unknown=True``.
    """
    # rollout
    rollout_batch_size: int = flag(16, "prompts (live: judged turns) per rollout step", group="rollout", ge=1)
    n_samples_per_prompt: int = flag(1, "responses sampled per prompt (GRPO group size)", group="rollout",
                                     names=("--n-samples-per-prompt", "--num-rollouts-per-prompt"), ge=1)
    num_rollout: int | None = flag(None, "rollout steps (one optimizer update of --rollout-batch-size samples "
                                   "each) to run; slime/train.py requires it", group="rollout", gt=0)
    rollout_max_response_len: int = flag(2048, "most tokens sampled per response", group="rollout", ge=1)
    rollout_max_context_len: int | None = flag(None, "most prompt + response tokens of a trained sample; a "
                                               "longer one is cut or dropped (--context-overflow), counted and "
                                               "named in a warning", group="rollout", ge=2,
                                               default_text="the model's context window")
    context_overflow: Literal["truncate", "drop"] = flag("truncate", "a sample longer than "
                                                         "--rollout-max-context-len: keep its first tokens "
                                                         "(truncate) or leave it out (drop)", group="rollout")
    truncated_replies: Literal["mask", "train"] | None = flag(
        None, "replies cut at the token limit (finish_reason length): mask them out of the loss, or train "
        "them like complete replies; counted either way", group="rollout",
        default_text="mask for judged live turns, train for rollouts that generate (--prompt-data)")
    rollout_temperature: float = flag(1.0, "sampling temperature of requests that set none; the trainer "
                                      "computes each sample's log-probs at its own recorded temperature and "
                                      "top-p, at this one where none was recorded", group="rollout", gt=0)
    max_staleness: int | None = flag(None, "drop samples whose weight_version lags the trainer by more "
                                     "versions (none: no bound)", group="rollout", ge=0)
    sample_order: Literal["oldest", "newest"] = flag(
        "oldest", "which judged live turns a train step takes first: oldest (first in, first out) or newest "
        "(the freshest, closest to the policy being trained; with --max-staleness, turns that fell behind it "
        "are dropped unused, as they are anyway when traffic outpaces training). History turns come first "
        "either way", group="rollout")
    degenerate_samples: Literal["mask", "train"] = flag(
        "mask", "samples whose reply is degenerate (slime.guards.behaviour: a repetition loop, a rare-character run, "
        "over-application, a tool-call loop, a word mixing alphabets; or a special token inside the reply): mask them out of the loss, "
        "or train them; counted per problem and named in a warning either way", group="rollout")
    rejected_repeat_credit: Literal["onset", "whole"] = flag(
        "onset", "a reply the judge rejected that uses one content word three times or more: train it as a "
        "negative example from the word's second use on (onset; its opening may be what the user asked for, "
        "such as their name) or on every token (whole); counted", group="rollout")
    # collapse guard (slime.guards.collapse)
    collapse_guard: Literal["on", "log", "off"] = flag(
        "on", "the trainer's collapse guard: on (skip a step whose grad norm, train/rollout log-prob gap, KL or "
        "update size spikes; act on repeated spikes), log (detect and record only), off", group="guard")
    spike_factor: float = flag(5.0, "a signal spikes above this many times its baseline (the median of its "
                               "recent healthy values, at least the signal's floor)", group="guard", gt=1)
    spike_window: int = flag(8, "recent healthy steps a baseline is the median of, and steps spikes are "
                             "counted over", group="guard", ge=1)
    spike_min_history: int = flag(3, "healthy steps before the grad norm, log-prob gap and KL to the reference "
                                  "(which have no scale of their own) are judged; the update's size is judged "
                                  "from the first step", group="guard", ge=1)
    max_spikes: int = flag(2, "spikes within --spike-window steps that make a collapse (--on-collapse)",
                           group="guard", ge=1)
    on_collapse: Literal["rollback", "pause"] = flag(
        "rollback", "at a collapse: restore the last good checkpoint (weights and optimizer state; the initial "
        "weights when none was saved) and lower the learning rate, or pause (stop training, the run ends)",
        group="guard")
    collapse_lr_factor: float = flag(0.5, "the learning rate is multiplied by this at each collapse rollback",
                                     group="guard", gt=0, le=1)
    # batching
    global_batch_size: int | None = flag(None, "samples per optimizer step", group="batching", ge=1,
                                         default_text="rollout_batch_size * n_samples_per_prompt")
    micro_batch_size: int = flag(1, "samples per forward/backward pass", group="batching", ge=1)
    # optimizer
    lr: float = flag(1e-6, "AdamW learning rate", group="optimizer", gt=0)
    weight_decay: float = flag(0.0, "AdamW weight decay", group="optimizer", ge=0)
    adam_beta1: float = flag(0.9, "AdamW beta1, in [0, 1)", group="optimizer", ge=0, lt=1)
    adam_beta2: float = flag(0.98, "AdamW beta2, in [0, 1)", group="optimizer", ge=0, lt=1)
    clip_grad: float = flag(1.0, "global grad-norm clip; 0 disables", group="optimizer", ge=0)
    offload_optimizer_state: bool = flag(False, "keep optimizer state on CPU between steps (accelerators)",
                                         group="optimizer")
    # loss
    loss_type: Literal["policy_loss", "custom_loss"] | None = flag(
        None, "policy_loss: the PPO loss (or the method's own); custom_loss: --custom-loss-function-path",
        group="loss", default_text="custom_loss with --custom-loss-function-path, else policy_loss")
    advantage_estimator: str | None = flag(None, "the method: a registered name (grpo, broadcast, passthrough, step_wise, and those "
                                           "installed packages register: opd, combine) or path/to/method.py:Class "
                                           "(a slime.methods.Method)", group="loss",
                                           metavar="NAME|FILE.py:Class", path="plugin",
                                           default_text="grpo with --n-samples-per-prompt >= 2, else broadcast "
                                           "(the reward as every token's advantage, as slime's grpo with "
                                           "--disable-rewards-normalization)")
    disable_grpo_std_normalization: bool = flag(False, "GRPO: subtract the group mean only (Dr. GRPO)",
                                                group="loss")
    disable_rewards_normalization: bool = flag(False, "GRPO: use raw rewards as advantages (no group mean/std)",
                                               group="loss")
    eps_clip: float = flag(0.2, "PPO clip ratio (lower side), in (0, 1)", group="loss", gt=0, lt=1)
    eps_clip_high: float | None = flag(None, "PPO clip ratio upper side (DAPO clip-higher)", group="loss", gt=0,
                                       default_text="--eps-clip")
    eps_clip_c: float | None = flag(None, "dual-clip constant c > 1 for negative advantages (Ye et al. 2020)",
                                    group="loss", gt=1)
    use_kl_loss: bool = flag(False, "add a KL(policy || reference) penalty to the loss", group="loss")
    kl_loss_coef: float = flag(0.0, "weight of the KL penalty", group="loss", ge=0)
    kl_loss_type: str = flag("k1", f"KL estimator, one of {', '.join(KL_LOSS_TYPES)}", group="loss")
    entropy_coef: float = flag(0.0, "weight of the entropy bonus", group="loss", ge=0)
    use_tis: bool = flag(False, "truncated importance sampling on train/rollout mismatch", group="loss")
    tis_cap: float = flag(2.0, "TIS weight cap", group="loss", gt=0)
    # model
    model_path: str | None = flag(None, "policy checkpoint: a Hugging Face folder or a registered name "
                                  "(builtin:smollm2-135m)", group="model", names=("--model-path", "--hf-checkpoint"),
                                  path="model")
    seed: int = flag(1234, "torch seed (LoRA init and anything random in the trainer)", group="model")
    use_lora: bool = flag(False, "train a LoRA adapter (peft) instead of all weights (any --lora-* flag "
                          "turns it on)", group="model")
    lora_rank: int | None = flag(None, "LoRA rank", group="model", gt=0, default_text="16 with --use-lora")
    lora_alpha: float | None = flag(None, "LoRA alpha", group="model", gt=0, default_text="2 * rank")
    lora_dropout: float | None = flag(None, "LoRA dropout, in [0, 1)", group="model", ge=0, lt=1,
                                      default_text="0.0 with --use-lora")
    lora_target_modules: tuple[str, ...] | None = flag(None, "module names to adapt", group="model",
                                                       default_text="q_proj k_proj v_proj o_proj")
    freeze_vision_tower: bool = flag(False, "vision-language models: keep the vision tower (image encoder and "
                                     "its merger) frozen: no gradient, no optimizer state", group="model")
    # checkpoint
    save: str | None = flag(None, "checkpoint directory", group="checkpoint", names=("--save", "--save-dir"),
                            path="output")
    save_interval: int | None = flag(None, "save every N train steps (and after the last)", group="checkpoint",
                                     gt=0)
    resume_from_checkpoint: str | None = flag(None, "checkpoint dir, or a save dir (its checkpoint-latest)",
                                              group="checkpoint", env="RESUME_CKPT", path="input")
    keep_published_versions: int = flag(4, "served weight versions kept under <save>/published (<log-dir>/"
                                        "published without --save), the served one included, so that "
                                        "POST /admin/rollback can return to them; older ones are deleted once "
                                        "serving has swapped past them", group="checkpoint", ge=1,
                                        names=("--keep-versions", "--keep-published-versions"))
    # promotion gate (slime.guards.promotion)
    promotion_gate: Literal["enforce", "log", "off"] = flag(
        "enforce", "check each new weight version before it is served: enforce (serve only a version that "
        "passes), log (measure, serve anyway), off", group="gate")
    on_gate_failure: Literal["continue", "pause"] = flag(
        "continue", "after a version fails the gate: continue (train on from the last good weights and "
        "optimizer state) or pause (stop training; serving keeps the last good version)", group="gate")
    gate_logprob_margin: float = flag(0.25, "nats per token: held-out accepted replies may become at most this "
                                      "much less likely, rejected ones this much more likely", group="gate", gt=0)
    gate_max_nll_rise: float = flag(0.05, "largest rise of the reference set's per-token NLL over the version "
                                    "the run started from (a fraction)", group="gate", gt=0)
    gate_max_new_problems: float = flag(0.1, "largest share of canary replies that are newly degenerate "
                                        "(slime.guards.behaviour) or newly run to the token limit", group="gate",
                                        ge=0, le=1)
    gate_canary_max_tokens: int = flag(32, "reply budget of the gate's sampled canary replies", group="gate", ge=1)
    # plugins
    custom_loss_function_path: str | None = flag(None, f"loss plugin: {_PLUGIN} (compute_loss / loss_function; "
                                                 "docs/plugins.md)", group="plugins", path="plugin")
    rollout_function_path: str | None = flag(None, "rollout plugin generate_rollout(args, rollout_id, data_source, "
                                             "evaluation=False)", group="plugins", path="plugin")
    custom_generate_function_path: str | None = flag(None, "generate plugin generate(args, sample, "
                                                     "sampling_params), with --prompt-data", group="plugins",
                                                     path="plugin")
    custom_rm_path: str | None = flag(None, "reward plugin: get_reward_model(config) or reward(args, sample)",
                                      group="plugins", path="plugin")
    max_plugin_failure_fraction: float = flag(0.5, "stop the run when more than this fraction of a step's "
                                              "samples failed in a generate or reward plugin (or judge)",
                                              group="plugins", ge=0, le=1)
    prompt_data: str | None = flag(None, "JSONL prompt dataset: train with the prompt-dataset rollout, which "
                                   "generates through the rollout service (the generate hook); found like "
                                   "plugin files", group="plugins", path="data")
    input_key: str = flag("prompt", "--prompt-data field holding the prompt", group="plugins")
    label_key: str = flag("label", "--prompt-data field holding the label", group="plugins")
    metadata_key: str = flag("metadata", "--prompt-data field (a JSON object) copied into each sample's "
                             "metadata (task_key, env_type, ...)", group="plugins")
    reward_key: str | None = flag(None, "when the reward plugin returns a dict: the key holding the reward",
                                  group="plugins", default_text="'reward'")
    dynamic_history: bool = flag(False, "agent rollouts: one sample per agent step (its prompt the history so "
                                 "far) instead of one per trajectory", group="rollout",
                                 names=("--dynamic-history", "--dynamic_history"))
    # cluster (slime's names; the launch scripts map TRAIN_GPUS / ROLLOUT_GPUS onto them)
    actor_num_nodes: int = flag(1, "nodes the train actors span", group="cluster", ge=1)
    actor_num_gpus_per_node: int = flag(1, "train actors per node, one GPU each (on a Ray cluster without GPUs: "
                                        "CPU processes); more than one trains data-parallel (FSDP2)",
                                        group="cluster", ge=1)
    train_threads: int = flag(0, "torch CPU threads of each train actor (0: the cores it may use, its CPU "
                              "affinity, shared among its train actors). On a CPU machine that also serves, "
                              "leave the server its threads: more threads than cores make every parallel "
                              "region wait (measured 2-3x slower)",
                              group="cluster", ge=0)
    train_backend: Literal["fsdp", "megatron"] = flag("fsdp", "training backend: fsdp (transformers + peft, "
                                                      "FSDP2 across train actors); megatron is refused",
                                                      group="cluster")
    actor_gpu_ids: str | None = flag(None, "the train actors' GPUs by id, one per actor in rank order (e.g. "
                                     "0,1,2,3; one node): each actor's CUDA_VISIBLE_DEVICES", group="cluster",
                                     default_text="the GPUs Ray assigns")
    rollout_num_gpus: int = flag(0, "GPUs of the rollout engines (the serving side; 0: CPU)", group="cluster", ge=0)
    rollout_num_gpus_per_engine: int = flag(1, "GPUs per rollout engine (its tensor-parallel size)",
                                            group="cluster", ge=1)
    rollout_gpu_ids: str | None = flag(None, "the rollout engines' GPUs by id (e.g. 4,5,6,7)", group="cluster",
                                       default_text="the GPUs Ray assigns")
    # loop
    async_train: bool = flag(False, "collect the next rollout while the current step trains", group="loop")
    rollout_service: str | None = flag(None, "what serves, collects and judges: a registered name or "
                                       "path/to/file.py:Class", group="loop", default_text="the registered one",
                                       path="plugin")
    log_dir: str = flag("logs", "training.log, metrics JSONL, TensorBoard, plot, error.log", group="loop",
                        path="output")
    # not flags
    sections: Mapping[str, Mapping[str, Any]] = field(default_factory=lambda: types.MappingProxyType({}))
    explicit: frozenset[str] = frozenset()
    unknown_args: tuple[str, ...] = ()

    @property
    def num_steps_per_rollout(self) -> int:
        """Optimizer steps per rollout: ``rollout_batch_size * n_samples_per_prompt // global_batch_size``."""
        return self.rollout_batch_size * self.n_samples_per_prompt // self.global_batch_size

    @property
    def grad_accumulation_steps(self) -> int:
        """Micro-batches per optimizer step: ``global_batch_size // micro_batch_size``."""
        return self.global_batch_size // self.micro_batch_size

    @property
    def extra(self) -> Mapping[str, Any]:
        """All section values (method and service flags) in one read-only mapping."""
        merged: dict[str, Any] = {}
        for values in self.sections.values():
            merged.update(values)
        return types.MappingProxyType(merged)

    def section(self, key: str) -> Mapping[str, Any]:
        """The values of one section (``"method"``, ``"service"``); empty when absent."""
        return self.sections.get(key, types.MappingProxyType({}))

    def flags_of(self, key: str, cls: type) -> Any:
        """Section ``key`` as an instance of the flag dataclass ``cls`` (its declared defaults
        fill fields the section lacks)."""
        return build_flags(cls, self.section(key))

    def __getattr__(self, name: str) -> Any:
        """slime-style ``args.<flag>`` for section flags; ``AttributeError`` for unknown names."""
        sections = self.__dict__.get("sections")
        if sections is not None and not name.startswith("__"):
            for values in sections.values():
                if name in values:
                    return values[name]
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def get(self, name: str, default: Any = None) -> Any:
        """A core field or, failing that, a section value, else ``default``."""
        if name in _CORE_FIELDS:
            return getattr(self, name)
        return self.extra.get(name, default)

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe dict of the core fields, plus the section values flattened under ``"extra"``."""
        out = {name: getattr(self, name) for name in _CORE_FIELDS}
        out["extra"] = dict(self.extra)
        out["lora_target_modules"] = list(self.lora_target_modules) if self.lora_target_modules else None
        out["unknown_args"] = list(self.unknown_args)
        return out

    def replace(self, **changes: Any) -> "SlimeConfig":
        """A validated copy with core fields changed; raises :class:`ConfigError`."""
        new = dataclasses.replace(self, **changes)
        validate_config(new)
        return new

    def with_section_values(self, key: str, **values: Any) -> "SlimeConfig":
        """A copy whose section ``key`` has ``values`` added or replaced (e.g. the service's URL)."""
        sections = {k: dict(v) for k, v in self.sections.items()}
        sections.setdefault(key, {}).update(values)
        frozen = types.MappingProxyType({k: types.MappingProxyType(v) for k, v in sections.items()})
        return dataclasses.replace(self, sections=frozen)


_CORE_SPECS = flag_specs(SlimeConfig)
_CORE_FIELDS = tuple(s.name for s in _CORE_SPECS)


def core_flag_specs() -> list[FlagSpec]:
    """The :class:`~slime.config.flags.FlagSpec` of every core flag, in declaration order."""
    return list(_CORE_SPECS)


@dataclass(frozen=True)
class FlagSection:
    """A flag dataclass added to the command line.

    ``key``: where its values land (``"method"``, ``"service"``), or None for flags only
    recognised to give a clear error (another method's flags: ``needs`` says what they need,
    e.g. ``"--advantage-estimator opd"``). ``title``: the ``--help`` group title.
    """
    cls: type
    title: str
    key: str | None = None
    needs: str | None = None


class _RaisingParser(argparse.ArgumentParser):
    """ArgumentParser whose errors raise :class:`ConfigError` instead of exiting the process."""

    def error(self, message: str):  # type: ignore[override]
        raise ConfigError(message)


def build_parser(sections: Sequence[FlagSection] = (), prog: str = "slime/train.py") -> argparse.ArgumentParser:
    """The parser: the core groups, then one group per section (flags shared by several sections
    are added once, by the first); errors raise :class:`ConfigError`."""
    parser = _RaisingParser(prog=prog, description="slime trainer (OpenClaw-RL): every flag, its default "
                            "and its environment fallback", allow_abbrev=False)
    titles: dict[str, list[FlagSpec]] = {}
    for spec in _CORE_SPECS:
        titles.setdefault(spec.group or "other", []).append(spec)
    for title, specs in titles.items():
        add_flag_group(parser, specs, title)
    seen = set(_CORE_FIELDS)
    for sec in sections:
        specs = [s for s in flag_specs(sec.cls) if s.name not in seen]
        seen.update(s.name for s in specs)
        if specs:
            add_flag_group(parser, specs, sec.title)
    return parser


def parse_args(argv: Sequence[str] | None = None, sections: Iterable[FlagSection] = (), *,
               allow_unknown: bool = False, environ: Mapping[str, str] | None = None,
               prog: str = "slime/train.py") -> SlimeConfig:
    """Parse ``argv`` (``sys.argv[1:]`` when ``None``) once into a validated :class:`SlimeConfig`.

    Args:
        argv: command-line tokens.
        sections: flag dataclasses besides the core (see :class:`FlagSection`); their
            environment fallbacks are read here, after the command line.
        allow_unknown: keep unrecognised tokens in ``config.unknown_args`` instead of failing.
        environ: environment for fallbacks (default ``os.environ``).
        prog: program name in messages.

    Returns:
        The frozen config with derived defaults resolved.

    Raises:
        ConfigError: unknown flag (unless ``allow_unknown``), bad value, bad environment value,
            another method's flag, or an inconsistent combination; one line naming the flag.
    """
    sections = list(sections)
    parser = build_parser(sections, prog)
    ns, unknown = parser.parse_known_args(argv)
    if unknown and not allow_unknown:
        raise ConfigError(f"unrecognized arguments: {' '.join(unknown)}")
    given = vars(ns)
    core, explicit = resolve_flags(_CORE_SPECS, given, environ)
    values: dict[str, dict[str, Any]] = {}
    for sec in sections:
        specs = flag_specs(sec.cls)
        resolved, named = resolve_flags(specs, given, environ, use_env=sec.key is not None)
        if sec.key is None:
            stray = [s for s in specs if s.name in named and not _owned(s.name, sections)]
            if stray:
                needs = [o.needs for o in sections if o.key is None and o.needs
                         and any(s.name == stray[0].name for s in flag_specs(o.cls))]
                raise ConfigError(f"{stray[0].option} needs {' or '.join(dict.fromkeys(needs))}")
            continue
        values.setdefault(sec.key, {}).update(resolved)
        explicit |= named
    core = _resolve_defaults(core, explicit)
    frozen = types.MappingProxyType({k: types.MappingProxyType(v) for k, v in values.items()})
    cfg = SlimeConfig(**core, sections=frozen, explicit=frozenset(explicit), unknown_args=tuple(unknown))
    validate_config(cfg)
    return cfg


def _owned(name: str, sections: Sequence[FlagSection]) -> bool:
    """Whether an active section (one with a key) declares the flag ``name``."""
    return any(sec.key is not None and any(s.name == name for s in flag_specs(sec.cls)) for sec in sections)


def _resolve_defaults(core: dict[str, Any], explicit: set[str]) -> dict[str, Any]:
    core = dict(core)
    if any(core[name] is not None for name in ("lora_rank", "lora_alpha", "lora_dropout", "lora_target_modules")):
        core["use_lora"] = True  # the seed's LORA_ARGS="--lora-rank 64 --lora-alpha 128 --lora-dropout 0.05"
    if core["advantage_estimator"] is None:
        core["advantage_estimator"] = default_method(core["n_samples_per_prompt"])
    if core["global_batch_size"] is None:
        core["global_batch_size"] = core["rollout_batch_size"] * core["n_samples_per_prompt"]
    if core["eps_clip_high"] is None:
        core["eps_clip_high"] = core["eps_clip"]
    if core["use_lora"]:
        core["lora_rank"] = 16 if core["lora_rank"] is None else core["lora_rank"]
        core["lora_alpha"] = float(2 * core["lora_rank"]) if core["lora_alpha"] is None else core["lora_alpha"]
        core["lora_dropout"] = 0.0 if core["lora_dropout"] is None else core["lora_dropout"]
    if core["loss_type"] is None:
        core["loss_type"] = "custom_loss" if core["custom_loss_function_path"] else "policy_loss"
    elif core["loss_type"] == "policy_loss" and core["custom_loss_function_path"]:
        raise ConfigError("--loss-type policy_loss contradicts --custom-loss-function-path (which needs "
                          "--loss-type custom_loss); drop one of them")
    return core


def default_method(n_samples_per_prompt: int) -> str:
    """The method when ``--advantage-estimator`` is not given: ``grpo`` for groups of
    ``--n-samples-per-prompt >= 2`` samples, else ``broadcast`` (each sample's reward is the
    advantage of its tokens: what slime's ``grpo`` with ``--disable-rewards-normalization`` does
    for the single-sample turns of live traffic, and what the seed's plugin example needs)."""
    return "grpo" if n_samples_per_prompt >= 2 else "broadcast"


def validate_config(cfg: SlimeConfig) -> None:
    """Check cross-flag consistency of ``cfg``; return ``None`` or raise :class:`ConfigError`."""
    check_core(cfg, core_flag_specs())

