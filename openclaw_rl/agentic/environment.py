"""The Environment protocol and the registry of environment families (issue 13).

An :class:`Environment` is one episode of one task with synchronous methods; the pool server
(:mod:`openclaw_rl.agentic.pool_server`) runs them in worker threads, and the agent loop drives
either a local one (through :class:`openclaw_rl.agentic.pool_client.LocalEnvHandle`) or a remote
one (through :class:`openclaw_rl.agentic.pool_client.EnvHandle`) with the same async interface.

Families are registered by name with a *factory spec*, a string loaded lazily the first time the
family is used, so registering never imports the family's code:

- ``package.module:function`` (or ``package.module.function``), or
- ``path/to/file.py:function`` (resolved like slime's plugin paths: working directory, then repo).

The factory is called as ``factory(task_key, task)`` where ``task`` is the dataset row's
``metadata`` dict, and returns an :class:`Environment`. Built-in names: ``math_tool``,
``terminal`` (the interfaces note of issue 13), ``swe`` and ``gui`` (issue 14).
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable
from typing import Protocol, runtime_checkable

__all__ = ["Environment", "EnvFactory", "EnvRegistryError", "register_env", "registered_envs",
           "load_factory", "get_factory", "make_env", "evaluate_episode"]


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


class EnvRegistryError(ValueError):
    """Unknown environment type, or a factory spec that does not load (one-line message)."""


_BUILTIN = {
    "math_tool": "openclaw_rl.envs.math_tool.env:make_env",
    "terminal": "openclaw_rl.envs.terminal.env:make_env",
    "swe": "openclaw_rl.envs.swe.env:make_env",
    "gui": "openclaw_rl.envs.gui.env:make_env",
}
_specs: dict[str, str | EnvFactory] = dict(_BUILTIN)
_loaded: dict[str, EnvFactory] = {}
_lock = threading.Lock()


def register_env(name: str, factory_spec: str | EnvFactory) -> None:
    """Register (or replace) an environment family.

    Args:
        name: the ``env_type`` callers use (e.g. ``"terminal"``).
        factory_spec: ``package.module:function``, ``path/to/file.py:function``, or the factory
            callable itself. A string is only imported on first use.

    Raises:
        EnvRegistryError: empty name or a spec that is neither a string nor callable.
    """
    if not isinstance(name, str) or not name:
        raise EnvRegistryError("environment name must be a non-empty string")
    if not (isinstance(factory_spec, str) and factory_spec) and not callable(factory_spec):
        raise EnvRegistryError(f"environment {name!r}: factory spec must be 'module:function' or a callable")
    with _lock:
        _specs[name] = factory_spec
        _loaded.pop(name, None)


def registered_envs() -> dict[str, str]:
    """``{name: spec}`` of every registered family (callables shown by their qualified name)."""
    with _lock:
        return {k: v if isinstance(v, str) else
                f"{getattr(v, '__module__', '?')}:{getattr(v, '__qualname__', type(v).__name__)}"
                for k, v in _specs.items()}


def load_factory(spec: str) -> EnvFactory:
    """Import the factory a spec names.

    Args:
        spec: ``package.module:function``, ``package.module.function`` or ``path/to/file.py:function``.

    Returns:
        The factory callable.

    Raises:
        EnvRegistryError: one line naming the spec and why it does not load.
    """
    if spec.endswith(".py") or ".py:" in spec:
        from slime.plugins import PluginError, load_function

        try:
            return load_function(spec, "environment factory", "make_env")
        except PluginError as exc:
            raise EnvRegistryError(str(exc)) from exc
    module_name, sep, attr = spec.partition(":")
    if not sep:
        module_name, _, attr = spec.rpartition(".")
    if not module_name or not attr:
        raise EnvRegistryError(f"environment factory {spec!r}: expected 'package.module:function'")
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:  # any import-time failure is reported the same way
        raise EnvRegistryError(f"environment factory {spec!r} does not import: "
                               f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}") from exc
    factory = getattr(module, attr, None)
    if factory is None or not callable(factory):
        raise EnvRegistryError(f"environment factory {spec!r}: {module_name} has no callable {attr!r}")
    return factory


def get_factory(env_type: str) -> EnvFactory:
    """The factory of a registered family, imported on first use (then cached).

    Raises:
        EnvRegistryError: unknown ``env_type`` or a spec that does not load.
    """
    with _lock:
        if env_type in _loaded:
            return _loaded[env_type]
        spec = _specs.get(env_type)
    if spec is None:
        known = ", ".join(sorted(_specs)) or "none"
        raise EnvRegistryError(f"unknown env_type {env_type!r} (registered: {known})")
    factory = spec if callable(spec) else load_factory(spec)
    with _lock:
        if _specs.get(env_type) is spec:
            _loaded[env_type] = factory
    return factory


def make_env(env_type: str, task_key: str, task: dict) -> Environment:
    """Build one episode of a registered family.

    Args:
        env_type: a registered name (``math_tool``, ``terminal``, or one added by :func:`register_env`).
        task_key: the task's key (dataset row ``metadata.task_key``).
        task: the dataset row's ``metadata`` dict.

    Returns:
        A fresh :class:`Environment` (not yet reset).

    Raises:
        EnvRegistryError: unknown ``env_type`` or a factory spec that does not load.
        Exception: whatever the factory raises for a task it cannot build.
    """
    return get_factory(env_type)(task_key, task)
