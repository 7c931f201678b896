"""Rollout services by name: ``--rollout-service`` -> a class with the
:class:`slime.plugins.hooks.RolloutService` protocol.

A registered name (entry points ``slime.rollout_services``), or ``path/to/file.py:Class`` /
``package.module.Class``. Without the flag, the one registered service is used (an installed
OpenClaw-RL registers ``openclaw``); with none or several registered the flag is required.
"""

from __future__ import annotations

import inspect

from slime.config.flags import ConfigError
from slime.plugins.specs import is_plugin_spec
from slime.plugins.loader import PluginError, load_function
from slime.plugins.registry import ROLLOUT_SERVICES, entry_names, load_entry

__all__ = ["FLAG", "load_service_class", "service_names"]

FLAG = "--rollout-service"
_MEMBERS = ("default_rollout", "default_generate", "check", "rollout_args", "publish_weights", "metrics", "close")


def service_names() -> list[str]:
    """Registered service names, sorted."""
    return entry_names(ROLLOUT_SERVICES)


def load_service_class(spec: str | None) -> type:
    """The service class for ``--rollout-service spec`` (None: the one registered).

    Raises:
        ConfigError: no or several registered services without the flag, or an unknown name.
        slime.plugins.loader.PluginError: a spec that does not load, or a class missing a protocol member.
    """
    names = service_names()
    if spec is None:
        if len(names) != 1:
            raise ConfigError(f"{FLAG} is required ({'no' if not names else len(names)} rollout services are "
                              f"registered{': ' + ', '.join(names) if names else ''})")
        spec = names[0]
    if spec in names:
        cls = load_entry(ROLLOUT_SERVICES, spec)
    elif is_plugin_spec(spec):
        cls = load_function(spec, FLAG)
    else:
        raise ConfigError(f"argument {FLAG}: invalid choice: {spec!r} (choose from {', '.join(names) or 'none'}, "
                          "or give path/to/file.py:Class)")
    missing = [m for m in _MEMBERS if not callable(getattr(cls, m, None))]
    if not inspect.isclass(cls) or missing:
        raise PluginError(f"{FLAG} {spec}: not a rollout service (missing {', '.join(missing) or 'a class'}; "
                          "see slime.plugins.hooks.RolloutService)")
    return cls
