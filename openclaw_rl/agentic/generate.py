"""The agent generate hook: one prompt -> one episode in its environment -> training samples.

slime's ``generate(args, sample, sampling_params)`` convention
(:mod:`slime.plugins.rollout`), called by the prompt-dataset rollout for each of the
``--n-samples-per-prompt`` samples of a prompt. The prompt row's metadata (``--metadata-key``)
names the task: ``env_type`` and ``task_key``; the rest of it is handed to the environment.

A family's plugin file is two lines, :func:`family_plugins`: its ``generate`` runs
:func:`generate_family` (the family's task setup and episode, :mod:`openclaw_rl.agentic.family`,
the same code ``openclaw-rl eval`` runs) and its ``reward_func`` the family's reward.
:func:`generate_agent` is the same hook for a plugin without a family class (any registered
environment type, :mod:`openclaw_rl.agentic.environment`).

Where the environment runs (:func:`openclaw_rl.agentic.pool_client.open_env`): on the pool servers
``ENV_SERVER_URL`` / ``WORKER_URLS`` name (leases, back-off on a full pool), else in this process;
at most ``PARALLEL_ENVS`` (default 8) episodes at once per process.

The episode runs through the intercept server (:func:`openclaw_rl.agentic.agent_loop.run_episode`),
the step PRM scores its steps when ``--prm-enable`` (:mod:`openclaw_rl.agentic.step_prm`), and
:func:`openclaw_rl.agentic.trajectory.episode_samples` turns it into samples (one per trajectory,
or one per step with ``--dynamic-history``). When the episode's prompts carried images (a
vision-language policy's screenshots), the policy's processor, loaded once per process from
``args.model_path`` (:func:`policy_processor`), rebuilds each sample's ``multimodal_train_inputs``
(``pixel_values``, ``image_grid_thw``) from the stored images.

"""

from __future__ import annotations

import asyncio
import os
import threading
import uuid
import weakref
from collections.abc import Awaitable, Callable
from typing import Any

from openclaw_rl.agentic.agent_loop import Episode, ServerChat, run_episode
from openclaw_rl.agentic.environment import make_env
from openclaw_rl.agentic.family import AgentFamily, get_family
from openclaw_rl.agentic.pool_client import open_env
from openclaw_rl.agentic.trajectory import episode_samples
from openclaw_rl.models import resolve_model_path
from openclaw_rl.vl_models import load_processor
from slime.record.sample import Sample

__all__ = ["family_plugins", "generate_agent", "generate_family", "parallel_envs", "policy_processor"]

_CHATS: dict[tuple, ServerChat] = {}
_CACHE: dict[tuple, Any] = {}
_LOCK = threading.Lock()
_SLOTS: "weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore]" = weakref.WeakKeyDictionary()


def parallel_envs(environ: dict | None = None) -> int:
    """``PARALLEL_ENVS`` (default 8): episodes run at once in this process.

    Raises:
        ValueError: not a positive integer.
    """
    raw = (os.environ if environ is None else environ).get("PARALLEL_ENVS", "8")
    try:
        n = int(raw)
    except ValueError:
        n = 0
    if n < 1:
        raise ValueError(f"PARALLEL_ENVS must be a positive integer, got {raw!r}")
    return n


def _slots() -> asyncio.Semaphore:
    loop = asyncio.get_running_loop()  # the prompt rollout runs each step in a fresh loop
    with _LOCK:
        if loop not in _SLOTS:
            _SLOTS[loop] = asyncio.Semaphore(parallel_envs())
        return _SLOTS[loop]


def _chat(args: Any) -> ServerChat:
    url, buffer_dir = getattr(args, "server_url", None), getattr(args, "rl_buffer_dir", None)
    if not url or not buffer_dir:
        raise RuntimeError("agent rollouts need the intercept server and its store (args.server_url, "
                           "args.rl_buffer_dir): run with --prompt-data, not offline --data-path")
    key = (str(url), str(buffer_dir), getattr(args, "api_key", None))
    with _LOCK:
        if key not in _CHATS:
            _CHATS[key] = ServerChat(*key)
        return _CHATS[key]


def policy_processor(model_path: str | None) -> Any:
    """The vision-language processor of the policy at ``model_path`` (a folder or ``builtin:`` name),
    or None for a text model or no path; loaded once per process and model path
    (:func:`openclaw_rl.vl_models.load_processor`)."""
    if not model_path:
        return None
    key = ("processor", str(model_path))
    with _LOCK:
        if key in _CACHE:
            return _CACHE[key]
    processor = load_processor(resolve_model_path(str(model_path)))
    with _LOCK:
        return _CACHE.setdefault(key, processor)


def _step_prm(args: Any) -> Any:
    from openclaw_rl.agentic.step_prm import build_step_prm
    from openclaw_rl.rollout.flags import service_flags

    flags = service_flags(args)
    key = ("prm", flags, getattr(args, "model_path", None))
    with _LOCK:
        if key not in _CACHE:
            _CACHE[key] = build_step_prm(flags, getattr(args, "model_path", None))
        return _CACHE[key]


async def _step_scores(args: Any, episode) -> list[float] | None:
    """The step PRM's score of each step when ``--prm-enable`` (each step judged from the task,
    the history window, its action and its observation), else None."""
    if not getattr(args, "prm_enable", False) or not episode.steps:
        return None
    from openclaw_rl.agentic.step_prm import Step

    steps = [Step(action=s.action_text, observation=s.observation_text) for s in episode.steps]
    scores = await _step_prm(args).score_steps(episode.task, steps)
    return [float(s.score) for s in scores]


def _task_of(sample: Sample) -> tuple[str, str]:
    """``(env_type, task_key)`` of an agent prompt's sample.

    Raises:
        ValueError: either is missing (one line naming the keys the metadata has).
    """
    meta = sample.metadata
    env_type, task_key = meta.get("env_type"), meta.get("task_key")
    if not env_type or not task_key:
        raise ValueError("an agent prompt needs metadata.env_type and metadata.task_key (the --metadata-key "
                         f"field of --prompt-data); got keys {sorted(meta)}")
    return str(env_type), str(task_key)


async def _episode_samples(args: Any, sample: Sample, trajectory_id: str, episode: Episode) -> list[Sample]:
    """The training samples of a finished episode: step PRM scores when ``--prm-enable``, the
    policy's processor when its prompts had images."""
    scores = await _step_scores(args, episode)
    processor = None
    if any(s.turn.images for s in episode.steps):
        processor = await asyncio.to_thread(policy_processor, getattr(args, "model_path", None))
    return episode_samples(episode, sample, dynamic_history=bool(getattr(args, "dynamic_history", False)),
                           step_prm_scores=scores, trajectory_id=trajectory_id, processor=processor)


async def generate_family(args: Any, sample: Sample, sampling_params: dict, family: AgentFamily) -> list[Sample]:
    """Run one episode of ``family`` for ``sample`` and return its training samples: the family's
    task setup (:meth:`~openclaw_rl.agentic.family.AgentFamily.prepare_task` with the policy's
    ``args.model_path``), then its :meth:`~openclaw_rl.agentic.family.AgentFamily.episode` through
    the intercept server, as ``openclaw-rl eval`` runs it.

    Args:
        args: the run's config (``server_url``, ``rl_buffer_dir``, ``api_key``, ``model_path``,
            ``dynamic_history``, ``prm_enable`` and the ``--prm-*`` flags).
        sample: the rollout's sample: ``metadata`` holds ``env_type``, ``task_key`` and the task;
            it is replaced by the prepared task, which the samples carry.
        sampling_params: per-step sampling (``temperature``, ``top_p``, ``max_new_tokens``, ``stop``).
        family: the configured family (:func:`openclaw_rl.agentic.family.get_family`).

    Returns:
        The episode's samples (:func:`openclaw_rl.agentic.trajectory.episode_samples`); a
        ``FAILED`` sample when the episode failed before its first step.

    Raises:
        ValueError: the sample's metadata has no ``env_type`` or ``task_key``; a task setting the
            policy cannot play with; the episode's prompts have images and ``args.model_path`` is
            no vision-language model.
        RuntimeError: no intercept server (offline runs cannot act).
    """
    _, task_key = _task_of(sample)
    sample.metadata = await asyncio.to_thread(family.prepare_task, sample.metadata,
                                              getattr(args, "model_path", None))
    chat = _chat(args)
    trajectory_id = uuid.uuid4().hex
    async with _slots():
        episode = await family.episode(chat, task_key, dict(sample.metadata), sampling_params,
                                       session_id=f"agent:{trajectory_id}", request_id=trajectory_id)
    return await _episode_samples(args, sample, trajectory_id, episode)


def family_plugins(name: str) -> tuple[Callable[..., Awaitable[list[Sample]]], Callable[..., Awaitable[dict]]]:
    """A family's ``generate`` (``--custom-generate-function-path``) and ``reward_func``
    (``--custom-rm-path``) plugins: the family configured by the run's ``args`` on each call
    (:meth:`~openclaw_rl.agentic.family.AgentFamily.from_args`), :func:`generate_family` and the
    family's :meth:`~openclaw_rl.agentic.family.AgentFamily.reward`.

    Raises:
        ValueError: an unknown family (at import of the plugin file).
    """
    get_family(name)  # an unknown name fails when the plugin file loads, not at the first sample

    async def generate(args: Any, sample: Sample, sampling_params: dict) -> list[Sample]:
        return await generate_family(args, sample, sampling_params, get_family(name, args))

    async def reward_func(args: Any, sample: Sample) -> dict:
        return get_family(name, args).reward(sample)

    generate.__doc__ = f"One {name} episode for ``sample``; returns its training samples (generate_family)."
    reward_func.__doc__ = f"The {name} family's reward of a finished sample (AgentFamily.reward)."
    return generate, reward_func


async def generate_agent(args: Any, sample: Sample, sampling_params: dict, *, max_turns: int,
                         system_prompt: str | None = None, max_images: int | None = None) -> list[Sample]:
    """Run one episode for ``sample`` in the environment its ``metadata.env_type`` names (any
    registered environment type, :mod:`openclaw_rl.agentic.environment`) and return its training
    samples: the hook for a plugin file without a family class.

    Args:
        args: the run's config (as :func:`generate_family`).
        sample: the rollout's sample: ``metadata`` holds ``env_type``, ``task_key`` and the task.
        sampling_params: per-step sampling (``temperature``, ``top_p``, ``max_new_tokens``, ``stop``).
        max_turns: the most model replies per episode.
        system_prompt: an optional system message.
        max_images: images kept in each prompt's history (``run_episode``'s ``max_images``); None keeps all.

    Returns:
        The episode's samples, as :func:`generate_family`.

    Raises:
        ValueError: the sample's metadata has no ``env_type`` or ``task_key``; the episode's prompts
            have images and ``args.model_path`` is no vision-language model.
        RuntimeError: no intercept server (offline runs cannot act).
    """
    env_type, task_key = _task_of(sample)
    chat = _chat(args)
    trajectory_id = uuid.uuid4().hex
    async with _slots():
        env = await open_env(env_type, task_key, dict(sample.metadata), trajectory_id,
                             lambda key, task: make_env(env_type, key, task))
        episode = await run_episode(chat, env, sampling_params, max_turns, system_prompt=system_prompt,
                                    session_id=f"agent:{trajectory_id}", max_images=max_images)
    return await _episode_samples(args, sample, trajectory_id, episode)
