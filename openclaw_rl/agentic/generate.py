"""The agent generate hook: one prompt -> one episode in its environment -> training samples.

slime's ``generate(args, sample, sampling_params)`` convention
(:mod:`slime.rollout_plugins`), called by the prompt-dataset rollout for each of the
``--n-samples-per-prompt`` samples of a prompt. The prompt row's metadata (``--metadata-key``)
names the environment: ``env_type`` (a registered family, :mod:`openclaw_rl.agentic.environment`)
and ``task_key``; the rest of it is handed to the environment factory.

Where the environment runs:

* ``ENV_SERVER_URL`` (one pool server or router) or ``WORKER_URLS`` (comma-separated pool
  workers) set: remotely, through :class:`openclaw_rl.agentic.pool_client.PoolClient`
  (leases, back-off on a full pool);
* neither: in this process (:class:`~openclaw_rl.agentic.pool_client.LocalEnvHandle`), at most
  ``PARALLEL_ENVS`` (default 8) episodes at once per process.

The episode runs through the intercept server (:func:`openclaw_rl.agentic.agent_loop.run_episode`),
the step PRM scores its steps when ``--prm-enable`` (:mod:`openclaw_rl.agentic.step_prm`), and
:func:`openclaw_rl.agentic.trajectory.episode_samples` turns it into samples (one per trajectory,
or one per step with ``--dynamic-history``). When the episode's prompts carried images (a
vision-language policy's screenshots), the policy's processor, loaded once per process from
``args.model_path`` (:func:`policy_processor`), rebuilds each sample's ``multimodal_train_inputs``
(``pixel_values``, ``image_grid_thw``) from the stored images.

Family plugin files (``toolcall-rl/generate_with_retool.py``, ``terminal-rl/generate.py``) call
:func:`generate_agent` with their own turn limit and system prompt.
"""

from __future__ import annotations

import asyncio
import os
import threading
import weakref
import uuid
from typing import Any

from openclaw_rl.agentic.agent_loop import ServerChat, run_episode
from openclaw_rl.agentic.trajectory import episode_samples
from slime.sample import Sample

__all__ = ["env_urls", "generate_agent", "open_env", "parallel_envs", "policy_processor"]

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


def env_urls(environ: dict | None = None) -> list[str]:
    """The pool servers to use: ``ENV_SERVER_URL``, else ``WORKER_URLS`` split on commas, else []
    (in-process environments)."""
    environ = os.environ if environ is None else environ
    one = (environ.get("ENV_SERVER_URL") or "").strip()
    if one:
        return [one]
    return [u.strip() for u in (environ.get("WORKER_URLS") or "").split(",") if u.strip()]


async def open_env(env_type: str, task_key: str, task: dict, request_id: str) -> Any:
    """An environment handle for one episode: remote when :func:`env_urls` names pool servers,
    else in this process.

    Raises:
        ValueError: an unknown ``env_type``; whatever the pool client raises when no lease can
            be had (a full pool past the client's patience, an unreachable server).
    """
    from openclaw_rl.agentic.pool_client import LocalEnvHandle, PoolClient

    urls = env_urls()
    if not urls:
        from openclaw_rl.agentic.environment import make_env
        return LocalEnvHandle(make_env(env_type, task_key, task))
    with _LOCK:
        key = tuple(urls)
        if key not in _CACHE:
            _CACHE[key] = PoolClient(urls)
        pool = _CACHE[key]
    return await pool.allocate(task_key=task_key, request_id=request_id, env_type=env_type, task=task)


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
    from openclaw_rl.models import resolve_model_path
    from openclaw_rl.vl_models import load_processor

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


async def generate_agent(args: Any, sample: Sample, sampling_params: dict, *, max_turns: int,
                         system_prompt: str | None = None, episode_fn: Any = None,
                         max_images: int | None = None) -> list[Sample]:
    """Run one episode for ``sample`` and return its training samples (module docstring).

    Args:
        args: the run's config (``server_url``, ``rl_buffer_dir``, ``api_key``, ``dynamic_history``,
            ``prm_enable`` and the ``--prm-*`` flags).
        sample: the rollout's sample: ``metadata`` holds ``env_type``, ``task_key`` and the task.
        sampling_params: per-step sampling (``temperature``, ``top_p``, ``max_new_tokens``, ``stop``).
        max_turns: the most model replies per episode.
        system_prompt: an optional system message.
        episode_fn: a family's own episode runner, ``async (chat, task_key, metadata,
            sampling_params, max_turns, session_id) -> Episode`` (it opens and closes its
            environment itself; swe-rl's mini-swe-agent loop); default: :func:`open_env` +
            :func:`~openclaw_rl.agentic.agent_loop.run_episode`.
        max_images: images kept in each prompt's history (``run_episode``'s ``max_images``; gui-rl's
            ``--gui-max-image-history-length``); None keeps all.

    Returns:
        The episode's samples (:func:`openclaw_rl.agentic.trajectory.episode_samples`); a
        ``FAILED`` sample when the episode failed before its first step.

    Raises:
        ValueError: the sample's metadata has no ``env_type`` or ``task_key``; the episode's prompts
            have images and ``args.model_path`` is no vision-language model.
        RuntimeError: no intercept server (offline runs cannot act).
    """
    meta = sample.metadata
    env_type, task_key = meta.get("env_type"), meta.get("task_key")
    if not env_type or not task_key:
        raise ValueError("an agent prompt needs metadata.env_type and metadata.task_key (the --metadata-key "
                         f"field of --prompt-data); got keys {sorted(meta)}")
    chat = _chat(args)
    trajectory_id = uuid.uuid4().hex
    async with _slots():
        if episode_fn is not None:
            episode = await episode_fn(chat, str(task_key), dict(meta), sampling_params, max_turns,
                                       f"agent:{trajectory_id}")
        else:
            env = await open_env(str(env_type), str(task_key), dict(meta), request_id=trajectory_id)
            episode = await run_episode(chat, env, sampling_params, max_turns, system_prompt=system_prompt,
                                        session_id=f"agent:{trajectory_id}", max_images=max_images)
    scores = await _step_scores(args, episode)
    processor = None
    if any(s.turn.images for s in episode.steps):
        processor = await asyncio.to_thread(policy_processor, getattr(args, "model_path", None))
    return episode_samples(episode, sample, dynamic_history=bool(getattr(args, "dynamic_history", False)),
                           step_prm_scores=scores, trajectory_id=trajectory_id, processor=processor)
