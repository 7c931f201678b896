"""The whole command line of a training run: core flags + the rollout service's + the method's.

:func:`parse_run_args` parses in two passes: the first reads only ``--advantage-estimator`` and
``--rollout-service`` to find the method and service classes (registered names or files), the
second parses everything with their flag dataclasses as sections (:class:`FlagSection`). Flags of
the other registered methods are recognised too, so ``--help`` lists every flag, and giving one
is a clear error (``--distill-topk needs --advantage-estimator opd``) rather than an unknown flag.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from slime.config.arguments import FlagSection, SlimeConfig, core_flag_specs, default_method, parse_args
from slime.config.flags import flag_specs
from slime.methods.registry import load_method_class, registered_method_classes
from slime.config.paths import CALLER_CWD_ENV, absolute_paths
from slime.orchestration.services import load_service_class, service_names

__all__ = ["env_fallbacks", "job_runtime_env", "parse_run_args", "run_sections", "with_absolute_paths"]


class _QuietParser(argparse.ArgumentParser):
    def error(self, message: str):  # type: ignore[override]
        raise ValueError(message)


def _peek(argv: Sequence[str] | None) -> tuple[str, str | None]:
    p = _QuietParser(add_help=False, allow_abbrev=False)
    p.add_argument("--advantage-estimator", default=None)
    p.add_argument("--rollout-service", default=None)
    p.add_argument("--n-samples-per-prompt", "--num-rollouts-per-prompt", type=int, default=1)
    try:
        ns, _ = p.parse_known_args(argv)
    except ValueError:  # a malformed value: the full parse names it
        return default_method(1), None
    return ns.advantage_estimator or default_method(ns.n_samples_per_prompt), ns.rollout_service


def run_sections(method_spec: str, service_spec: str | None) -> list[FlagSection]:
    """The flag sections of a run: the service's (its ``Flags`` and its ``flag_sections()``), the
    method's, then every other registered method's (recognised only to say which method they need).

    Raises:
        ConfigError / slime.plugins.loader.PluginError: the method or service does not load.
    """
    service_cls = load_service_class(service_spec)
    method_cls = load_method_class(method_spec)
    out = []
    if getattr(service_cls, "Flags", None) is not None:
        out.append(FlagSection(service_cls.Flags, f"rollout service ({service_spec or 'default'})", key="service"))
    out += _service_extra_sections(service_cls)
    if method_cls.Flags is not None:
        out.append(FlagSection(method_cls.Flags, f"method {method_spec}", key="method"))
    for name, cls in registered_method_classes().items():
        if cls is not method_cls and cls.Flags is not None:
            out.append(FlagSection(cls.Flags, f"method {name} (with --advantage-estimator {name})",
                                   needs=f"--advantage-estimator {name}"))
    return out


def _service_extra_sections(service_cls: type) -> list[FlagSection]:
    """The service's optional ``flag_sections()`` (:class:`slime.plugins.hooks.RolloutService`), else []."""
    extra = getattr(service_cls, "flag_sections", None)
    return list(extra()) if extra is not None else []


def parse_run_args(argv: Sequence[str] | None = None, *, environ: Mapping[str, str] | None = None,
                   allow_unknown: bool = False, prog: str = "slime/train.py") -> SlimeConfig:
    """Parse a training run's command line (module docstring) into a :class:`SlimeConfig`
    (``prog``: the program name in usage and error messages).

    Raises:
        ConfigError: a bad flag, value, environment value or combination (one line).
        slime.plugins.loader.PluginError: a method or service file that does not load.
    """
    method_spec, service_spec = _peek(argv)
    return parse_args(argv, run_sections(method_spec, service_spec), environ=environ, allow_unknown=allow_unknown,
                      prog=prog)


def with_absolute_paths(cfg: SlimeConfig, cwd=None) -> SlimeConfig:
    """``cfg`` with every path flag (the core's, the method's, the service's) made absolute
    against the caller's directory (:func:`slime.config.paths.absolute_paths`)."""
    specs = [(sec.key, flag_specs(sec.cls)) for sec in run_sections(cfg.advantage_estimator, cfg.rollout_service)
             if sec.key is not None]
    return absolute_paths(cfg, specs, cwd)


def env_fallbacks() -> list[str]:
    """Every environment variable a flag falls back to: the core's, every registered rollout
    service's (with its extra sections) and every registered method's (sorted, unique)."""
    specs = list(core_flag_specs())
    for name in service_names():
        cls = load_service_class(name)
        if getattr(cls, "Flags", None) is not None:
            specs += flag_specs(cls.Flags)
        for sec in _service_extra_sections(cls):
            specs += flag_specs(sec.cls)
    for cls in registered_method_classes().values():
        if cls.Flags is not None:
            specs += flag_specs(cls.Flags)
    return sorted({s.env for s in specs if s.env})


#: environment variable naming more variables to carry into a job (see :func:`job_runtime_env`)
JOB_ENV = "SLIME_JOB_ENV"


def job_runtime_env(environ: Mapping[str, str] | None = None) -> dict:
    """A Ray ``runtime_env`` carrying the environment fallbacks set in ``environ`` into a job
    (a submitted job does not inherit the submitting shell's environment). Values of ``*_PATH``
    variables that name an existing local file or folder (relative to ``SLIME_CALLER_CWD``, else
    the working directory) are made absolute (the job runs in another working directory). ``*_API_KEY`` variables are left out: Ray shows a job's
    runtime_env on its dashboard; keys reach a job through the Ray head's environment or a flag.
    ``SLIME_CALLER_CWD`` (the launch scripts set it) is carried too, so the job takes every other
    relative path against the caller's directory (:mod:`slime.config.paths`), and
    ``RAY_JOB_STOP_WAIT_TIME_S`` (default 60) gives a stopped job time to shut its server down.
    A launch script names more variables its plugins read in ``SLIME_JOB_ENV`` (space-separated,
    e.g. ``"TOOLS_CONFIG PARALLEL_ENVS ENV_SERVER_URL"``); those set are carried too."""
    environ = os.environ if environ is None else environ
    out = {}
    if environ.get(CALLER_CWD_ENV, "").strip():  # relative paths in the job mean the caller's
        out[CALLER_CWD_ENV] = environ[CALLER_CWD_ENV]
    # `ray job stop` (Ctrl-C in a launch script) gives the trainer time to stop its server and judges
    out["RAY_JOB_STOP_WAIT_TIME_S"] = environ.get("RAY_JOB_STOP_WAIT_TIME_S", "60")
    extra = [n for n in environ.get(JOB_ENV, "").split() if n.isidentifier()]
    for name in dict.fromkeys(env_fallbacks() + extra):
        value = environ.get(name, "").strip()
        if name.endswith("_API_KEY"):
            continue
        if value:
            local = Path(environ.get(CALLER_CWD_ENV) or Path.cwd()) / os.path.expanduser(value)
            if name.endswith("_PATH") and local.exists():
                value = str(local.resolve())
            out[name] = value
    return {"env_vars": out}


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m slime.config.run_args --runtime-env``: print :func:`job_runtime_env` as JSON (what
    the launch scripts pass to ``ray job submit --runtime-env-json``); ``--env-names``: print
    :func:`env_fallbacks`, one per line."""
    p = argparse.ArgumentParser(prog="python -m slime.config.run_args", description=main.__doc__)
    p.add_argument("--runtime-env", action="store_true", help="print the job runtime_env JSON")
    p.add_argument("--env-names", action="store_true", help="print the environment fallbacks")
    a = p.parse_args(argv)
    if a.env_names:
        print("\n".join(env_fallbacks()))
    if a.runtime_env or not a.env_names:
        print(json.dumps(job_runtime_env()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
