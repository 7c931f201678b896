"""The agent family seam: one typed class per Track 2 family, read by training, evaluation and the
launch scripts alike.

A family (``math-tool``, ``terminal``, ``swe``, ``gui``) is an :class:`AgentFamily` subclass in its
own module (``openclaw_rl/envs/<family>/family.py``), registered under its name in the
``openclaw_rl.agent_families`` entry-point group of its package's ``pyproject.toml`` (as methods
are in ``slime.methods``). Everything that runs a family asks the registry:

=====================================  ===================================================================
caller                                 what it reads
=====================================  ===================================================================
the launch scripts' dataset helper     :meth:`AgentFamily.dataset_path` (``python -m
                                       openclaw_rl.agentic.families train|eval FAMILY``)
the trainer's command line             :attr:`AgentFamily.Flags` (a flag section of the OpenClaw
                                       rollout service: ``--gui-max-steps`` with ``GUI_MAX_STEPS``)
the pool servers and in-process envs   :meth:`AgentFamily.make_env` (by :attr:`AgentFamily.env_type`)
training's generate / reward plugins   :func:`openclaw_rl.agentic.generate.generate_family`:
                                       :meth:`AgentFamily.prepare_task`, :meth:`AgentFamily.episode`,
                                       :meth:`AgentFamily.reward`
``openclaw-rl eval --eval-tasks F``    the same :meth:`AgentFamily.prepare_task` and
                                       :meth:`AgentFamily.episode`, then :meth:`AgentFamily.solved`
=====================================  ===================================================================

So a training episode and an evaluation episode of one family run the same code, from the
family's task setup to its episode loop; only the chat client differs (the intercept server's
token-exact turns in training, side turns of the evaluation client).

The contract (checked for every registered family by ``tests/test_agent_family_contract.py``):

* class attributes only describe the family (``name``, ``aliases``, ``env_type``, ``Flags``,
  ``eval_max_tokens``); an instance holds only its resolved flags (a frozen dataclass), so it is
  picklable and cheap: it is built in the driver, in every rollout worker, in pool servers and in
  evaluation processes. Heavy objects (browsers, sandboxes, tokenizers, datasets) are built late,
  inside :meth:`make_env`, :meth:`episode` or :meth:`dataset_path`, never in ``__init__``.
* :meth:`dataset_path` returns a JSONL of ``{"prompt", "label", "metadata"}`` rows whose
  ``metadata`` has ``env_type`` (the family's :attr:`env_type`) and ``task_key``, built on first
  use and safe to call from parallel processes.
* :meth:`episode` always returns an :class:`~openclaw_rl.agentic.agent_loop.Episode` (failures
  are in its ``finish`` / ``error``) and closes what it opened.
* :meth:`reward` maps a finished sample (its ``metadata["env_score"]`` and ``["env_info"]``) to a
  dict with a float ``"score"`` (the ``--reward-key``), never raising for an unscored episode.
"""

from __future__ import annotations

import dataclasses
from abc import ABC, abstractmethod
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from openclaw_rl.agentic.agent_loop import Episode, run_episode
from openclaw_rl.agentic.env_protocol import Environment
from openclaw_rl.agentic.pool_client import EnvHandle, LocalEnvHandle, open_env
from slime.config.flags import ConfigError, build_flags, flag_specs, resolve_flags
from slime.plugins.registry import entry_names, load_entry

if TYPE_CHECKING:
    from slime.record.sample import Sample

__all__ = ["AGENT_FAMILIES", "AgentFamily", "Split", "UnknownFamilyError", "family_class", "family_names", "get_family",
           "registered_families"]

#: the entry-point group families register in (``name = "package.module:Class"``)
AGENT_FAMILIES = "openclaw_rl.agent_families"

Split = Literal["train", "eval"]


class UnknownFamilyError(ValueError):
    """No registered agent family has this name, alias or env type (one-line message)."""


class AgentFamily(ABC):
    """One Track 2 agent family (module docstring: the contract and who reads what).

    Class attributes:
        name: the family's name (``--eval-tasks`` name, launch-script ``ENV_TYPE`` family name).
        aliases: other names that select it (``math_tool``, ``toolcall``, ``retool``).
        env_type: the environment registry name (the dataset rows' ``metadata.env_type``; pool
            servers build environments by it).
        Flags: a frozen dataclass of the family's flags (:func:`slime.config.flags.flag` fields, upstream's
            environment variables as ``env=`` fallbacks), or None. Field names must not clash with
            another family's (they share the trainer's command line).
        eval_max_tokens: the completion budget per step in ``openclaw-rl eval`` (``--max-tokens``
            overrides it).
        job_env: environment variables the family's code reads in the job besides its flags'
            fallbacks (pool addresses, config files); the launch helper carries them and the
            flags' into a submitted job (:meth:`job_env_names`).

    Args:
        flags: the family's resolved :attr:`Flags` instance; None resolves them from the
            environment fallbacks and defaults (:meth:`from_args` reads a run's config).
    """

    name: ClassVar[str] = ""
    aliases: ClassVar[tuple[str, ...]] = ()
    env_type: ClassVar[str] = ""
    Flags: ClassVar[type | None] = None
    eval_max_tokens: ClassVar[int] = 512
    job_env: ClassVar[tuple[str, ...]] = ()

    def __init__(self, flags: Any = None):
        if flags is None and self.Flags is not None:
            flags = self.flags_from_env()
        self.flags = flags

    # --- configuration ---------------------------------------------------------------------------
    @classmethod
    def flags_from_env(cls, environ: Mapping[str, str] | None = None, **given: Any) -> Any:
        """The :attr:`Flags` instance from ``given`` values, else the environment fallbacks
        (``os.environ`` by default), else the declared defaults; None without flags.

        Raises:
            slime.config.flags.ConfigError: a bad environment value or a value outside a flag's bounds.
        """
        if cls.Flags is None:
            return None
        values, _ = resolve_flags(flag_specs(cls.Flags), given, environ)
        return build_flags(cls.Flags, values)

    @classmethod
    def job_env_names(cls) -> list[str]:
        """The environment variables a submitted job of this family needs from the launching
        shell: its flags' ``env=`` fallbacks, then :attr:`job_env` (no repeats, in that order).
        ``agent_job.sh`` adds them to ``SLIME_JOB_ENV`` (``python -m openclaw_rl.agentic.families
        job-env FAMILY``)."""
        names = [s.env for s in flag_specs(cls.Flags) if s.env] if cls.Flags is not None else []
        return list(dict.fromkeys([*names, *cls.job_env]))

    @classmethod
    def from_args(cls, args: Any) -> "AgentFamily":
        """The family configured by a run's ``args``: a :class:`slime.config.arguments.SlimeConfig` (its
        ``"family"`` section, filled by the rollout service's flag sections), or any object whose
        same-named attributes override the environment fallbacks."""
        if cls.Flags is None:
            return cls()
        if hasattr(args, "flags_of") and args.section("family"):
            return cls(args.flags_of("family", cls.Flags))
        given = {f.name: getattr(args, f.name) for f in dataclasses.fields(cls.Flags)
                 if getattr(args, f.name, None) is not None}
        return cls(cls.flags_from_env(**given))

    # --- data and environment ----------------------------------------------------------------------
    @abstractmethod
    def dataset_path(self, split: Split) -> Path:
        """The ``train`` or ``eval`` JSONL (module docstring), built on first use.

        Raises:
            ValueError: a bad split; RuntimeError / OSError when the data cannot be built.
        """

    @abstractmethod
    def make_env(self, task_key: str, task: dict) -> Environment:
        """One episode's environment (not yet reset) for a dataset row's ``task_key`` and ``metadata``.

        Raises:
            Exception: whatever the environment raises for a task it cannot build.
        """

    @abstractmethod
    def max_turns(self) -> int:
        """The most model replies (actions) of one episode (>= 1)."""

    def system_prompt(self) -> str | None:
        """The system message of every episode, or None (default)."""
        return None

    # --- one episode -------------------------------------------------------------------------------
    def prepare_task(self, metadata: dict, policy_path: str | None) -> dict:
        """The per-episode task setup, the same in training and evaluation: a copy of the dataset
        row's ``metadata`` with the family's settings for this episode added (default: unchanged).

        Args:
            metadata: the row's metadata (not modified).
            policy_path: the policy's model path (a folder or ``builtin:`` name), None when unknown
                (an evaluation of a running server).

        Raises:
            ValueError: a setting the policy cannot play with (one line).
        """
        return dict(metadata)

    def max_images(self, metadata: dict) -> int | None:
        """Image parts kept in each prompt's history for this (prepared) task; None keeps all."""
        return None

    async def open_env(self, task_key: str, metadata: dict, request_id: str) -> EnvHandle | LocalEnvHandle:
        """The episode's environment: a lease on the pool servers (``ENV_SERVER_URL`` /
        ``WORKER_URLS``, built there by :attr:`env_type`), else :meth:`make_env` in this process
        (:func:`openclaw_rl.agentic.pool_client.open_env`)."""
        return await open_env(self.env_type, task_key, metadata, request_id, self.make_env)

    async def episode(self, chat: Any, task_key: str, metadata: dict, sampling_params: dict, *,
                      session_id: str, request_id: str) -> Episode:
        """Run one episode of a prepared task (default: :meth:`open_env`, driven by
        :func:`openclaw_rl.agentic.agent_loop.run_episode` with :meth:`max_turns`,
        :meth:`system_prompt` and :meth:`max_images`).

        Args:
            chat: the chat client (the intercept server's ``ServerChat`` in training, the evaluation
                client's ``EvalChat``); ``await chat.step(session_id, messages, tools, sampling_params)``.
            task_key: the row's task key.
            metadata: the prepared task (:meth:`prepare_task`).
            sampling_params: per-step sampling.
            session_id: the server session of the episode's turns.
            request_id: the pool lease's request id.

        Returns:
            The finished :class:`~openclaw_rl.agentic.agent_loop.Episode`.
        """
        env = await self.open_env(task_key, metadata, request_id)
        return await run_episode(chat, env, sampling_params, self.max_turns(), system_prompt=self.system_prompt(),
                                 session_id=session_id, max_images=self.max_images(metadata))

    # --- outcome -----------------------------------------------------------------------------------
    def reward(self, sample: "Sample") -> dict:
        """The ``--custom-rm-path`` reward of a finished episode's sample (default: the
        environment's score, -1 for an episode that could not be scored, ``acc`` 1 when solved)."""
        score = self.env_score(sample)
        return {"score": score, "acc": 1.0 if self.solved(score) else 0.0}

    @staticmethod
    def env_score(sample: "Sample") -> float:
        """The environment's score of the sample's episode (``metadata["env_score"]``, written by
        :func:`openclaw_rl.agentic.trajectory.episode_samples`), -1.0 for an episode that could not
        be scored (it failed before the first step, or its environment raised)."""
        score = sample.metadata.get("env_score")
        return -1.0 if score is None else float(score)

    def solved(self, score: float | None) -> bool:
        """Whether an episode with environment score ``score`` solved its task (default: >= 1)."""
        return score is not None and score >= 1.0

    def episode_detail(self, episode: Episode) -> dict:
        """Family results of an evaluated episode worth keeping per item (default: none)."""
        return {}


def registered_families() -> list[str]:
    """The registered family names, sorted."""
    return entry_names(AGENT_FAMILIES)


def family_names() -> list[str]:
    """The registered family names in the built-in order (``math-tool``, ``terminal``, ``swe``,
    ``gui``), then any other registered family, sorted."""
    builtin = ("math-tool", "terminal", "swe", "gui")
    names = registered_families()
    return [n for n in builtin if n in names] + [n for n in names if n not in builtin]


def family_class(name: str) -> type[AgentFamily]:
    """The family class registered as ``name``, or whose ``aliases`` or ``env_type`` is ``name``.

    Raises:
        UnknownFamilyError: an unknown name (one line listing the registered ones).
        slime.config.flags.ConfigError: the entry point does not import, or is not an AgentFamily.
    """
    names = registered_families()
    if name in names:
        return _load(name)
    for other in names:
        cls = _load(other)
        if name in cls.aliases or name == cls.env_type:
            return cls
    raise UnknownFamilyError(f"unknown agent family {name!r}; choose from {', '.join(family_names()) or 'none'}")


def _load(name: str) -> type[AgentFamily]:
    cls = load_entry(AGENT_FAMILIES, name)
    if not (isinstance(cls, type) and issubclass(cls, AgentFamily)):
        raise ConfigError(f"{AGENT_FAMILIES} entry {name!r} is not an AgentFamily subclass")
    return cls


def get_family(name: str, args: Any = None) -> AgentFamily:
    """The family ``name`` configured by a run's ``args`` (:meth:`AgentFamily.from_args`), or by the
    environment fallbacks and defaults when ``args`` is None.

    Raises:
        ValueError: an unknown name; slime.config.flags.ConfigError: a bad flag or environment value.
    """
    cls = family_class(name)
    return cls.from_args(args) if args is not None else cls()
