"""The method registry: ``--advantage-estimator`` value -> :class:`~slime.methods.base.Method` class.

Names come from two places: the core's generic methods (``grpo``, ``broadcast``,
``passthrough``, ``step_wise``) and the ``slime.methods`` entry points of installed packages
(:mod:`slime.plugins.registry`). A package may register a name the core already has only with a subclass
of the core's class (a specialisation: OpenClaw's Binary RL is ``broadcast`` with its judge).
Any other value is loaded from a file or module: ``path/to/method.py:Class``,
``path/to/method.py`` (its one ``Method`` subclass) or ``package.module.Class``.
"""

from __future__ import annotations

import inspect

from slime.config.flags import ConfigError
from slime.methods.base import Method
from slime.methods.broadcast import BroadcastMethod
from slime.methods.grpo import GRPOMethod
from slime.methods.passthrough import PassThroughMethod
from slime.methods.step_wise import StepWiseMethod
from slime.plugins.specs import is_plugin_spec
from slime.plugins.loader import PluginError, load_module
from slime.plugins.registry import METHODS, entry_names, load_entry

__all__ = ["CORE_METHODS", "FLAG", "load_method_class", "method_names", "registered_method_classes"]

FLAG = "--advantage-estimator"
CORE_METHODS: dict[str, type[Method]] = {"grpo": GRPOMethod, "broadcast": BroadcastMethod,
                                         "passthrough": PassThroughMethod, "step_wise": StepWiseMethod}


def method_names() -> list[str]:
    """Every registered method name (core and installed packages), sorted."""
    return sorted(set(CORE_METHODS) | set(entry_names(METHODS)))


def _check_class(obj: object, where: str) -> type[Method]:
    if not (inspect.isclass(obj) and issubclass(obj, Method)):
        raise PluginError(f"{FLAG} {where}: {getattr(obj, '__name__', obj)!r} is not a subclass of "
                          "slime.methods.Method")
    if inspect.isabstract(obj):
        raise PluginError(f"{FLAG} {where}: {obj.__name__} does not implement compute_advantages(samples)")
    return obj


def load_method_class(spec: str) -> type[Method]:
    """The method class ``spec`` names (module docstring).

    Raises:
        ConfigError: an unknown name, or a registered entry that is not a proper method.
        slime.plugins.loader.PluginError: a file or module that does not load, or holds no method class.
    """
    if spec in entry_names(METHODS):
        cls = _check_class(load_entry(METHODS, spec), f"{spec} (entry point)")
        core = CORE_METHODS.get(spec)
        if core is not None and not issubclass(cls, core):
            raise ConfigError(f"{METHODS} entry {spec!r} must subclass {core.__module__}.{core.__name__}")
        return cls
    if spec in CORE_METHODS:
        return CORE_METHODS[spec]
    if not is_plugin_spec(spec):
        raise ConfigError(f"argument {FLAG}: invalid choice: {spec!r} (choose from {', '.join(method_names())}, "
                          "or give path/to/method.py:Class)")
    module, name = load_module(spec, FLAG)
    if name:
        if not hasattr(module, name):
            raise PluginError(f"{FLAG} {spec}: no class {name!r} in {getattr(module, '__file__', module)}")
        return _check_class(getattr(module, name), spec)
    found = [obj for obj in vars(module).values() if inspect.isclass(obj) and issubclass(obj, Method)
             and obj.__module__ == module.__name__ and not inspect.isabstract(obj)]
    if len(found) != 1:
        raise PluginError(f"{FLAG} {spec}: name the class as {spec}:Class ({len(found)} Method subclasses "
                          "defined in the file)")
    return found[0]


def registered_method_classes() -> dict[str, type[Method]]:
    """Every registered name with its class (entry points imported), for ``--help`` and for
    telling another method's flag from an unknown one."""
    return {name: load_method_class(name) for name in method_names()}
