"""The SWE agent loop, mini-swe-agent style, every step generated through our server.

Per step (as mini-swe-agent's ``DefaultAgent`` with a text-based model):

1. one chat completion through the intercept server in the episode's ``agent:<id>`` session
   (:class:`openclaw_rl.agentic.agent_loop.ServerChat`: the turn is read back from the store with
   its exact prompt ids, sampled ids, logprobs and weight version; the reply goes back verbatim,
   so the server's token-exact continuation builds the next prompt);
2. the reply must hold exactly one bash block (the config's ``action_regex``, ```` ```mswea_bash_command ````);
   otherwise the config's ``format_error_template`` is the observation (its ``finish_reason``
   branch tells a reply cut by the length limit) and the episode goes on;
3. the command runs in the container (:meth:`~.env.SweEnv.run_command`); the rendered
   observation (head and tail of a long output) is the next user message;
4. the episode ends when the agent submits (``echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT``), at
   ``step_limit`` replies, when the next prompt is too long for the server, at
   ``SWE_ROLLOUT_TIMEOUT`` seconds, or on a server / container failure; it is always scored
   (the submitted patch, else the container's diff: :meth:`~.env.SweEnv.evaluate`) and closed.

The result is an :class:`~openclaw_rl.agentic.agent_loop.Episode` (``finish``: ``submitted``,
``max_turns``, ``context``, ``timeout``, ``error``: :class:`~openclaw_rl.agentic.agent_loop.StopReason`), so :mod:`openclaw_rl.agentic.trajectory`
turns it into samples like any agent episode; ``Episode.info`` carries the SWE result.
"""

from __future__ import annotations

import asyncio
import os
import re
import time
import uuid
from typing import Any

from openclaw_rl.agentic.agent_loop import AgentStep, Episode, StopReason
from slime.errors import one_line

__all__ = ["parse_action", "run_swe_episode", "save_trajectory", "swe_episode"]


def parse_action(content: str, action_regex: str) -> tuple[str | None, list[str]]:
    """``(command, actions)``: the single bash block of a reply (None unless exactly one)."""
    actions = [a.strip() for a in re.findall(action_regex, content or "", re.DOTALL)]
    return (actions[0] if len(actions) == 1 else None), actions


async def run_swe_episode(chat: Any, env: Any, sampling_params: dict, step_limit: int, *,
                          session_id: str | None = None, timeout: float | None = None) -> Episode:
    """Run one SWE episode (module docstring).

    Args:
        chat: :class:`~openclaw_rl.agentic.agent_loop.ServerChat` (or the evaluation's ``EvalChat``).
        env: a :class:`~.env.SweEnv` (its synchronous methods run in worker threads).
        sampling_params: per-step ``temperature``, ``top_p``, ``max_new_tokens``, ``stop``, ``seed``.
        step_limit: the most model replies (>= 1).
        session_id: default ``agent:<uuid>``.
        timeout: wall-clock seconds for the steps (scoring comes after); None: no limit.

    Returns:
        The episode (always; failures are in ``finish`` / ``error``); ``info`` holds ``env.result``
        plus ``commands`` and ``format_errors``.

    Raises:
        ValueError: ``step_limit < 1``.
    """
    if step_limit < 1:
        raise ValueError(f"step_limit must be >= 1, got {step_limit}")
    session = session_id or f"agent:{uuid.uuid4().hex}"
    steps: list[AgentStep] = []
    state = {"task": "", "finish": StopReason.MAX_TURNS, "error": None, "final": "", "format_errors": 0}
    started = time.monotonic()

    async def loop() -> None:
        first = await asyncio.to_thread(env.reset)
        state["task"] = first["observation"]
        messages = [{"role": "system", "content": first["system"]}, {"role": "user", "content": first["observation"]}]
        for _ in range(step_limit):
            message, turn = await chat.step(session, messages, None, sampling_params)
            if message is None:
                state["finish"], state["error"] = StopReason.CONTEXT, turn
                return
            content = message.get("content") or ""
            step = AgentStep(turn=turn, content=content, tool_calls=[])
            steps.append(step)
            state["final"] = content
            env.note_reply(content)
            messages.append({"role": "assistant", "content": content})
            command, actions = parse_action(content, env.config.action_regex)
            if command is None:
                state["format_errors"] += 1
                error = f"Expected exactly 1 action, found {len(actions)}."
                obs = env.config.format_error(error, actions, message.get("finish_reason"), env.cwd)
            else:
                obs, submitted = await asyncio.to_thread(env.run_command, command)
                if submitted:
                    step.observations.append(obs)
                    state["finish"] = StopReason.SUBMITTED
                    return
            step.observations.append(obs)
            messages.append({"role": "user", "content": obs})

    try:
        await asyncio.wait_for(loop(), timeout)
    except asyncio.TimeoutError:
        state["finish"], state["error"] = StopReason.TIMEOUT, f"SWE_ROLLOUT_TIMEOUT: the steps ran past {timeout:g} s"
    except Exception as exc:  # the server or the container failed: the episode ends, is scored
        state["finish"], state["error"] = StopReason.ERROR, one_line(f"{type(exc).__name__}: {exc}", 300)
    step_seconds = time.monotonic() - started
    score = None
    try:
        score = float(await asyncio.to_thread(env.evaluate))
    except Exception as exc:
        state["error"] = state["error"] or one_line(f"evaluate failed: {type(exc).__name__}: {exc}", 300)
    finally:
        try:
            await asyncio.to_thread(env.close)
        except Exception as exc:
            state["error"] = state["error"] or one_line(f"close failed: {type(exc).__name__}: {exc}", 300)
    info = {**getattr(env, "result", {}), "format_errors": state["format_errors"],
            "step_seconds": round(step_seconds, 3), "episode_seconds": round(time.monotonic() - started, 3)}
    return Episode(session_id=session, task=state["task"], steps=steps, final_response=state["final"],
                   finish=state["finish"], score=score, error=state["error"], info=info)


def save_trajectory(directory: str, task_key: str, episode: Episode) -> str:
    """Write the episode as JSON (``<dir>/<instance_id>-<session>.json``: task, steps' replies and
    observations, finish, score, SWE result); returns the path."""
    import json
    from pathlib import Path

    path = Path(directory) / f"{task_key}-{episode.session_id.split(':')[-1][:12]}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    body = {"instance_id": task_key, "session_id": episode.session_id, "finish": str(episode.finish),
            "score": episode.score, "error": episode.error, "task": episode.task,
            "steps": [{"reply": s.content, "observation": s.observation_text} for s in episode.steps],
            "info": episode.info}
    path.write_text(json.dumps(body, indent=1))
    return str(path)


async def swe_episode(chat: Any, env: Any, task_key: str, sampling_params: dict, max_turns: int, session_id: str,
                      timeout: float | None = None) -> Episode:
    """The swe family's episode (:meth:`openclaw_rl.envs.swe.family.SweFamily.episode`):
    :func:`run_swe_episode` on the family's fresh :class:`~.env.SweEnv` for the row under
    ``timeout`` seconds (``--swe-rollout-timeout``; None: none), the trajectory saved under
    ``SWE_SAVE_TRAJ_DIR`` when set."""
    episode = await run_swe_episode(chat, env, sampling_params, max_turns, session_id=session_id, timeout=timeout)
    traj_dir = os.environ.get("SWE_SAVE_TRAJ_DIR")
    if traj_dir:
        episode.info["trajectory_file"] = await asyncio.to_thread(save_trajectory, traj_dir, task_key, episode)
    return episode
