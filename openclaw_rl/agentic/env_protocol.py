"""The Environment protocol: one episode of one task, driven by the agent loop.

An :class:`Environment` has synchronous methods; the pool server
(:mod:`openclaw_rl.agentic.pool_server`) runs them in worker threads, and the agent loop drives
either a local one (through :class:`openclaw_rl.agentic.pool_client.LocalEnvHandle`) or a remote
one (through :class:`openclaw_rl.agentic.pool_client.EnvHandle`) with the same async interface.
A family builds its environments (:meth:`openclaw_rl.agentic.family.AgentFamily.make_env`); the
registry of environment types the pool servers build by name is :mod:`openclaw_rl.agentic.environment`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, runtime_checkable

__all__ = ["Environment", "EnvFactory", "evaluate_episode"]


@runtime_checkable
class Environment(Protocol):
    """One episode of one task. Methods are synchronous (the pool server runs them in threads).

    - ``reset()`` -> ``{"observation": str, "tools": [OpenAI tool schemas]}``: the task text the
      agent sees first and the tools it may call.
    - ``exec_tool(tool_call)`` -> observation text (or a list of OpenAI content parts, text and
      ``image_url`` screenshots, for a vision-language policy: :mod:`openclaw_rl.agentic.content`;
      ``reset``'s observation likewise); ``tool_call = {"name": str, "arguments": dict | str (JSON)}``. Never raises for bad model output: a malformed call, an unknown tool
      or bad arguments return an observation that says what is wrong.
    - ``evaluate()`` -> the episode's outcome score (family-defined).
    - optional ``submit(final_response: str)``: the agent's final answer (the last reply's text),
      given before ``evaluate`` by :func:`evaluate_episode` to environments that score an answer
      (math); environments that score their own state (terminal) need not define it.
    - ``close()``: release everything the episode holds (idempotent).
    """

    def reset(self) -> dict:
        """Start the episode; returns ``{"observation": str, "tools": list[dict]}``."""
        ...

    def exec_tool(self, tool_call: dict) -> str:
        """Run one tool call; returns the observation text (never raises for bad model output)."""
        ...

    def evaluate(self) -> float:
        """The episode's outcome score."""
        ...

    def close(self) -> None:
        """Release the episode's resources."""
        ...


EnvFactory = Callable[[str, dict], Environment]
"""``(task_key, task metadata dict) -> Environment``."""


def evaluate_episode(env: Environment, final_response: str | None = None) -> float:
    """Score an episode: ``env.submit(final_response)`` first when the environment has
    ``submit`` and an answer is given, then ``float(env.evaluate())``.

    Raises:
        whatever the environment raises; ``TypeError`` / ``ValueError`` for a score that is not a number.
    """
    if final_response is not None and callable(getattr(env, "submit", None)):
        env.submit(final_response)
    return float(env.evaluate())
