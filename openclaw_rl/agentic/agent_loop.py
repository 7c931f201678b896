"""The agent loop: one episode of a tool-using agent, every step generated through our server.

Each step is one ``POST /v1/chat/completions`` to the intercept server, in one session per
episode (``X-Session-Id: agent:<uuid>``, ``X-Turn-Type: side`` so the live judges never take
it), with the environment's tool schemas. The server records the turn before its response ends,
so the step is read back from the trajectory store token-exactly: the prompt ids the engine
consumed, the sampled ids, their sampling logprobs and the weight version (DESIGN.md invariant
1). The reply goes back to the server exactly as it was returned (content and tool calls), so the
server's token-exact continuation (:mod:`openclaw_rl.server.continuation`) feeds the next step
``previous prompt + previous response + observation`` and the steps concatenate into one
trajectory without re-tokenisation (:mod:`openclaw_rl.agentic.trajectory`).

The loop (ReTool / mini-swe-agent style):

1. ``env.reset()`` gives the first observation (the task) and the tool schemas;
2. the model replies; each OpenAI tool call in the reply runs through ``env.exec_tool`` and its
   observation goes back as a ``tool`` message; a reply that writes ``<tool_call>`` without a
   call the server could parse gets a ``user`` message saying so (the episode goes on);
3. a reply without any tool call is the final answer and ends the episode; so do ``max_turns``
   steps, a reply cut by the length limit (``finish_reason: length``), and a prompt the server
   refuses as too long (``--rollout-max-context-len``);
4. ``env.evaluate(final_response)`` scores the episode; the environment is always closed.

An observation may be a list of OpenAI content parts with images (a GUI screenshot for a
vision-language policy, :mod:`openclaw_rl.agentic.content`): it is sent as the message's content,
and ``max_images`` keeps only the last screenshots in the history sent (the older ones become a
text placeholder; that breaks the prefix, so the trajectory is split there).

Nothing here raises for what the model writes: bad output becomes an observation, and the
episode is scored.
"""

from __future__ import annotations

import asyncio
import enum
import json
import uuid
from dataclasses import dataclass, field
from typing import Any

import httpx

from openclaw_rl.agentic.content import content_text, limit_images
from openclaw_rl.capture.records import TurnRecord
from openclaw_rl.capture.store import TrajectoryStore
from openclaw_rl.tls import tls_context
from slime.errors import one_line

__all__ = ["AgentStep", "Episode", "ServerChat", "StopReason", "run_episode"]

MALFORMED_CALL = ("Error: your <tool_call> block could not be parsed. Write exactly one JSON object "
                  '{"name": <tool name>, "arguments": {...}} between <tool_call> and </tool_call>.')


@dataclass
class AgentStep:
    """One step: the stored turn (exact ids and logprobs), the reply's tool calls and what they
    observed.

    Attributes:
        turn: the recorded turn (``prompt_ids``, ``response_ids``, ``response_logprobs``,
            ``weight_version``, ...).
        content: the reply's text content ("" when it only called tools).
        tool_calls: the reply's OpenAI tool calls (``{"id", "type", "function": {"name",
            "arguments"}}``), possibly empty.
        observations: one observation per tool call (or the malformed-call notice), in order, as
            text (an image part is ``[screenshot]``, :func:`~openclaw_rl.agentic.content.content_text`).
    """

    turn: TurnRecord
    content: str
    tool_calls: list[dict]
    observations: list[str] = field(default_factory=list)

    @property
    def action_text(self) -> str:
        """The step's action as text for judges: the content, then each call as JSON."""
        calls = [json.dumps({"name": c["function"]["name"], "arguments": c["function"]["arguments"]})
                 for c in self.tool_calls]
        return "\n".join([self.content, *calls]).strip()

    @property
    def observation_text(self) -> str:
        """The step's observations joined by blank lines ("" for the final answer)."""
        return "\n\n".join(self.observations)


class StopReason(enum.StrEnum):
    """Why an episode ended (its value is the ``agent/finish/<reason>`` metric's name)."""

    #: a reply without a tool call (the answer)
    ANSWERED = "answered"
    #: the submission command (swe-rl's ``echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT``)
    SUBMITTED = "submitted"
    #: the family's turn limit (:meth:`openclaw_rl.agentic.family.AgentFamily.max_turns`)
    MAX_TURNS = "max_turns"
    #: a reply cut by the length limit
    LENGTH = "length"
    #: the next prompt was too long for the server
    CONTEXT = "context"
    #: the episode's time limit (swe-rl's ``SWE_ROLLOUT_TIMEOUT``)
    TIMEOUT = "timeout"
    #: the server or the environment failed (``Episode.error`` says why)
    ERROR = "error"


@dataclass
class Episode:
    """A finished episode.

    Attributes:
        session_id: the server session holding its turns.
        task: the first observation (the task text).
        steps: the steps in order.
        final_response: the last reply's content (the answer).
        finish: why it ended (:class:`StopReason`).
        score: ``env.evaluate`` of the episode (None when it could not be scored).
        error: one line, when ``finish == "error"`` or scoring failed.
        info: family-specific results of the episode (e.g. swe-rl's resolved / patch / injection
            report), copied into every sample's ``metadata["env_info"]``.
    """

    session_id: str
    task: str
    steps: list[AgentStep]
    final_response: str
    finish: StopReason
    score: float | None
    error: str | None = None
    info: dict = field(default_factory=dict)

    @property
    def num_tool_calls(self) -> int:
        """Tool calls made over the episode."""
        return sum(len(s.tool_calls) for s in self.steps)


class ServerChat:
    """Posts chat completions to the intercept server and reads each turn back from its store.

    Args:
        server_url: the server's base URL (with or without ``/v1``).
        buffer_dir: the server's ``--rl-buffer-dir`` (its trajectory store).
        api_key: the server's API key, if any.
        timeout: seconds per request.
    """

    def __init__(self, server_url: str, buffer_dir: str, api_key: str | None = None, timeout: float = 600.0):
        self.base = str(server_url).rstrip("/").removesuffix("/v1")
        self.buffer_dir = str(buffer_dir)
        self._store: TrajectoryStore | None = None
        self.headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.timeout = httpx.Timeout(timeout, connect=30.0)

    async def step(self, session_id: str, messages: list[dict], tools: list[dict] | None,
                   sampling_params: dict) -> tuple[dict, TurnRecord] | tuple[None, str]:
        """One chat completion in ``session_id``.

        Returns:
            ``(message, turn)``: the reply message (``content``, ``tool_calls``,
            ``finish_reason`` added) and its stored turn; or ``(None, reason)`` when the server
            refused the prompt as too long (``reason`` is its message).

        Raises:
            RuntimeError: any other non-200 answer, or no recorded turn.
        """
        body: dict[str, Any] = {"messages": messages}
        if tools:
            body["tools"] = tools
        if sampling_params.get("max_new_tokens") is not None:
            body["max_tokens"] = int(sampling_params["max_new_tokens"])
        for key in ("temperature", "top_p", "seed", "stop", "tool_choice"):
            if sampling_params.get(key) is not None:
                body[key] = sampling_params[key]
        headers = {**self.headers, "X-Session-Id": session_id, "X-Turn-Type": "side"}
        async with httpx.AsyncClient(timeout=self.timeout, verify=tls_context()) as client:
            r = await client.post(f"{self.base}/v1/chat/completions", json=body, headers=headers)
        if r.status_code == 400 and _is_context_error(r):
            return None, one_line(r.json()["error"].get("message", ""), 300)
        if r.status_code != 200:
            raise RuntimeError(f"intercept server answered {r.status_code}: {one_line(r.text, 300)}")
        choice = r.json()["choices"][0]
        message = dict(choice["message"])
        message["finish_reason"] = choice.get("finish_reason")
        if self._store is None:
            self._store = TrajectoryStore(self.buffer_dir)
        turns = await asyncio.to_thread(self._store.turns, session_id)
        if not turns:
            raise RuntimeError(f"the server at {self.base} recorded no turn for session {session_id}")
        return message, turns[-1]


def _is_context_error(r: httpx.Response) -> bool:
    try:
        err = r.json().get("error", {})
    except ValueError:
        return False
    return isinstance(err, dict) and err.get("code") == "context_length_exceeded"


def _assistant_message(message: dict) -> dict:
    """The reply exactly as returned (what token-exact continuation matches)."""
    out: dict[str, Any] = {"role": "assistant", "content": message.get("content")}
    if message.get("tool_calls"):
        out["tool_calls"] = message["tool_calls"]
    return out


def _content(observation: Any) -> str | list[dict]:
    """An observation as message content: a list of content parts as is, anything else as text."""
    return observation if isinstance(observation, list) else str(observation)


def _tool_call_dict(call: dict) -> dict:
    fn = call.get("function") or {}
    return {"name": fn.get("name"), "arguments": fn.get("arguments")}


async def run_episode(chat: ServerChat, env: Any, sampling_params: dict, max_turns: int, *,
                      system_prompt: str | None = None, session_id: str | None = None,
                      max_images: int | None = None) -> Episode:
    """Run one episode of ``env`` (module docstring).

    Args:
        chat: the server client.
        env: an environment handle with async ``reset()``, ``exec_tool(tool_call)``,
            ``evaluate(final_response)`` and ``close()``
            (:class:`openclaw_rl.agentic.pool_client.EnvHandle` or ``LocalEnvHandle``).
        sampling_params: ``temperature``, ``top_p``, ``max_new_tokens``, ``stop``, ``seed``
            and ``tool_choice`` (each optional; ``tool_choice`` is the OpenAI field, enforced by
            the server's constrained decoding) for every step.
        max_turns: the most model replies in the episode (>= 1).
        system_prompt: an optional system message before the task.
        session_id: the session (default ``agent:<uuid>``).
        max_images: keep only the last ``max_images`` image parts of the history in each prompt
            (:func:`~openclaw_rl.agentic.content.limit_images`); None keeps all.

    Returns:
        The :class:`Episode` (always; failures are in ``finish`` / ``error``).

    Raises:
        ValueError: ``max_turns < 1``.
    """
    if max_turns < 1:
        raise ValueError(f"max_turns must be >= 1, got {max_turns}")
    session = session_id or f"agent:{uuid.uuid4().hex}"
    steps: list[AgentStep] = []
    task, finish, error, final, score = "", StopReason.MAX_TURNS, None, "", None
    try:
        first = await env.reset()
        observation, tools = _content(first.get("observation", "")), first.get("tools") or None
        task = content_text(observation)
        messages: list[dict] = ([{"role": "system", "content": system_prompt}] if system_prompt else [])
        messages.append({"role": "user", "content": observation})
        for _ in range(max_turns):
            message, turn = await chat.step(session, limit_images(messages, max_images), tools, sampling_params)
            if message is None:
                finish, error = StopReason.CONTEXT, turn
                break
            content = message.get("content") or ""
            calls = list(message.get("tool_calls") or [])
            step = AgentStep(turn=turn, content=content, tool_calls=calls)
            steps.append(step)
            final = content
            if message.get("finish_reason") == "length":
                finish = StopReason.LENGTH
                break
            messages.append(_assistant_message(message))
            if calls:
                for call in calls:
                    obs = _content(await env.exec_tool(_tool_call_dict(call)))
                    step.observations.append(content_text(obs))
                    messages.append({"role": "tool", "tool_call_id": call.get("id", ""), "content": obs})
            elif "<tool_call>" in content:
                step.observations.append(MALFORMED_CALL)
                messages.append({"role": "user", "content": MALFORMED_CALL})
            else:
                finish = StopReason.ANSWERED
                break
    except Exception as exc:  # the server or the environment failed: the episode ends, is reported
        finish, error = StopReason.ERROR, one_line(f"{type(exc).__name__}: {exc}", 300)
    try:
        if finish != StopReason.ERROR or steps:
            score = float(await env.evaluate(final))
    except Exception as exc:
        error = error or one_line(f"evaluate failed: {type(exc).__name__}: {exc}", 300)
    finally:
        try:
            await env.close()
        except Exception as exc:
            error = error or one_line(f"close failed: {type(exc).__name__}: {exc}", 300)
    return Episode(session_id=session, task=task, steps=steps, final_response=final, finish=finish,
                   score=score, error=error)
