"""The whole command line of a training run: core flags + the rollout service's + the method's.

:func:`parse_run_args` parses in two passes: the first reads only ``--advantage-estimator`` and
``--rollout-service`` to find the method and service classes (registered names or files), the
second parses everything with their flag dataclasses as sections (:class:`FlagSection`). Flags of
the other registered methods are recognised too, so ``--help`` lists every flag, and giving one
is a clear error (``--distill-topk needs --advantage-estimator opd``) rather than an unknown flag.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence

from slime.arguments import FlagSection, SlimeConfig, parse_args
from slime.methods.registry import load_method_class, registered_method_classes
from slime.services import load_service_class

__all__ = ["parse_run_args", "run_sections"]


def _peek(argv: Sequence[str] | None) -> tuple[str, str | None]:
    p = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    p.add_argument("--advantage-estimator", default="grpo")
    p.add_argument("--rollout-service", default=None)
    ns, _ = p.parse_known_args(argv)
    return ns.advantage_estimator, ns.rollout_service


def run_sections(method_spec: str, service_spec: str | None) -> list[FlagSection]:
    """The flag sections of a run: the service's, the method's, then every other registered
    method's (recognised only to say which method they need).

    Raises:
        ConfigError / slime.plugins.PluginError: the method or service does not load.
    """
    service_cls = load_service_class(service_spec)
    method_cls = load_method_class(method_spec)
    out = []
    if getattr(service_cls, "Flags", None) is not None:
        out.append(FlagSection(service_cls.Flags, f"rollout service ({service_spec or 'default'})", key="service"))
    if method_cls.Flags is not None:
        out.append(FlagSection(method_cls.Flags, f"method {method_spec}", key="method"))
    for name, cls in registered_method_classes().items():
        if cls is not method_cls and cls.Flags is not None:
            out.append(FlagSection(cls.Flags, f"method {name} (with --advantage-estimator {name})",
                                   needs=f"--advantage-estimator {name}"))
    return out


def parse_run_args(argv: Sequence[str] | None = None, *, environ: Mapping[str, str] | None = None,
                   allow_unknown: bool = False) -> SlimeConfig:
    """Parse a training run's command line (module docstring) into a :class:`SlimeConfig`.

    Raises:
        ConfigError: a bad flag, value, environment value or combination (one line).
        slime.plugins.PluginError: a method or service file that does not load.
    """
    method_spec, service_spec = _peek(argv)
    return parse_args(argv, run_sections(method_spec, service_spec), environ=environ, allow_unknown=allow_unknown)
