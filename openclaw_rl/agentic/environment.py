"""The registry of environment types: what a pool server or an in-process episode builds by name.

Every registered agent family (:mod:`openclaw_rl.agentic.family`, the ``openclaw_rl.agent_families``
entry points) is an environment type under its ``env_type`` (``math_tool``, ``terminal``, ``swe``,
``gui``): its :meth:`~openclaw_rl.agentic.family.AgentFamily.make_env` builds the episode. More
types can be registered by name with a *factory spec* (``--env NAME=SPEC`` of the pool server),
a string loaded lazily the first time the type is used, so registering never imports its code:

- ``package.module:function`` (or ``package.module.function``), or
- ``path/to/file.py:function`` (resolved like slime's plugin paths: working directory, then repo).

The factory is called as ``factory(task_key, task)`` where ``task`` is the dataset row's
``metadata`` dict, and returns an :class:`~openclaw_rl.agentic.env_protocol.Environment`. A
registered name shadows a family's ``env_type``.
"""

from __future__ import annotations

import importlib
import threading

from openclaw_rl.agentic.env_protocol import EnvFactory, Environment, evaluate_episode
from openclaw_rl.agentic.family import AgentFamily, UnknownFamilyError, family_class, family_names
from slime.config.flags import ConfigError

__all__ = ["Environment", "EnvFactory", "EnvRegistryError", "register_env", "registered_envs",
           "load_factory", "get_factory", "make_env", "evaluate_episode"]


class EnvRegistryError(ValueError):
    """Unknown environment type, or a factory spec that does not load (one-line message)."""


_specs: dict[str, str | EnvFactory] = {}
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
    """``{name: spec}`` of every environment type: the agent families' (``env_type`` ->
    ``module:Class.make_env``), then the registered specs (callables shown by their qualified name).

    Raises:
        slime.config.flags.ConfigError: a family's entry point does not import.
    """
    out = {}
    for name in family_names():
        cls = family_class(name)
        out[cls.env_type] = f"{cls.__module__}:{cls.__qualname__}.make_env"
    with _lock:
        out.update({k: v if isinstance(v, str) else
                    f"{getattr(v, '__module__', '?')}:{getattr(v, '__qualname__', type(v).__name__)}"
                    for k, v in _specs.items()})
    return out


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
        from slime.plugins.loader import PluginError, load_function

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


def _family_factory(cls: type[AgentFamily]) -> EnvFactory:
    """A factory building each environment with a fresh ``cls()`` (its flags read from the
    environment variables at that moment, as a pool server's worker sees them)."""

    def factory(task_key: str, task: dict) -> Environment:
        return cls().make_env(task_key, task)

    factory.__qualname__ = f"{cls.__qualname__}.make_env"
    return factory


def get_factory(env_type: str) -> EnvFactory:
    """The factory of an environment type: a registered spec, imported on first use, else the agent
    family with that ``env_type`` (its :meth:`~openclaw_rl.agentic.family.AgentFamily.make_env`,
    flags from the environment fallbacks); cached.

    Raises:
        EnvRegistryError: unknown ``env_type``, a spec or family that does not load, or a family
            whose flags' environment values are bad.
    """
    with _lock:
        if env_type in _loaded:
            return _loaded[env_type]
        spec = _specs.get(env_type)
    if spec is not None:
        factory = spec if callable(spec) else load_factory(spec)
    else:
        try:
            factory = _family_factory(family_class(env_type))
        except UnknownFamilyError as exc:
            known = ", ".join(sorted(registered_envs())) or "none"
            raise EnvRegistryError(f"unknown env_type {env_type!r} (registered: {known})") from exc
        except ConfigError as exc:
            raise EnvRegistryError(f"environment {env_type!r}: {exc}") from exc
    with _lock:
        if _specs.get(env_type) is spec:  # not re-registered meanwhile
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
