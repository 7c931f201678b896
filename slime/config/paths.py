"""Path flags made absolute once, at start-up, against the caller's directory.

A run's paths are read in several processes with other working directories: the Ray actors, the
intercept server the rollout service starts, a Ray job's uploaded copy of the repository. So
:func:`absolute_paths` rewrites every flag declared with ``path=`` (:func:`slime.config.flags.flag`)
once, in ``slime/train.py``'s ``main`` before anything starts, and everything downstream gets
absolute paths. The caller's directory is ``SLIME_CALLER_CWD`` when set (the launch scripts set
it: a submitted Ray job runs in a copy of the repository, not where the user typed the command),
else the working directory.

Kinds (the flag's ``path``): ``output`` and ``input`` are taken relative to the caller's
directory; ``model`` too when that names an existing folder (a ``scheme:name`` such as
``builtin:tiny-qwen3`` is kept); ``data`` (``--prompt-data``) and ``plugin`` files are looked up
like plugin files, in the caller's directory, then the repository root (``package.module.name``
plugin specs are kept).
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from slime.config.arguments import core_flag_specs
from slime.config.flags import FlagSpec
from slime.plugins.specs import is_plugin_spec
from slime.plugins.loader import REPO_ROOT, split_spec

__all__ = ["CALLER_CWD_ENV", "absolute_path", "absolute_paths", "caller_cwd", "published_dir"]

#: environment variable naming the directory relative paths are taken against
CALLER_CWD_ENV = "SLIME_CALLER_CWD"
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*:(?![\\/])")


def published_dir(cfg: Any) -> Path:
    """Where a run publishes the weights it serves: ``<save>/published``, else
    ``<log-dir>/published`` (absolute). The server a run starts takes weight updates only from
    there (``--weights-dir``)."""
    return (Path(cfg.save) if cfg.save else Path(cfg.log_dir)).absolute() / "published"


def caller_cwd() -> Path:
    """``SLIME_CALLER_CWD`` when it names a folder, else the working directory."""
    given = os.environ.get(CALLER_CWD_ENV, "").strip()
    return Path(given) if given and Path(given).is_dir() else Path.cwd()


def _looked_up(value: str, cwd: Path) -> Path:
    for base in (cwd, REPO_ROOT):
        if (base / value).exists():
            return (base / value).resolve()
    return (cwd / value).resolve()


def absolute_path(value: str | None, kind: str, cwd: Path) -> str | None:
    """``value`` of a path flag of ``kind`` (module docstring) made absolute against ``cwd``."""
    if value is None or not str(value).strip():
        return value
    value = str(value)
    if kind == "plugin":
        if not is_plugin_spec(value):
            return value  # a registered name
        target, func, is_file = split_spec(value)
        if not is_file:
            return value
        found = _looked_up(os.path.expanduser(target), cwd)
        return str(found) + (f":{func}" if func else "") if found.is_file() else value
    if kind == "model" and _SCHEME.match(value):
        return value
    expanded = os.path.expanduser(value)
    if Path(expanded).is_absolute():
        return str(Path(expanded))
    if kind == "data":
        return str(_looked_up(expanded, cwd))
    if kind == "model" and not (cwd / expanded).exists():
        return value  # not a local folder (a hub id): the model loader names the problem
    return str((cwd / expanded).resolve())


def absolute_paths(cfg: Any, section_specs: Iterable[tuple[str, Iterable[FlagSpec]]] = (),
                   cwd: str | os.PathLike | None = None) -> Any:
    """A copy of the :class:`slime.config.arguments.SlimeConfig` ``cfg`` with every path flag absolute.

    Args:
        cfg: the parsed config.
        section_specs: ``(section key, flag specs)`` of its sections (the method's and the
            rollout service's flags), see :func:`slime.config.run_args.run_sections`.
        cwd: the caller's directory (default :func:`caller_cwd`).

    Returns:
        The new config (core fields via ``dataclasses.replace``, sections via
        ``with_section_values``); ``explicit`` is unchanged.
    """
    base = Path(cwd) if cwd is not None else caller_cwd()
    changes = {s.name: absolute_path(getattr(cfg, s.name), s.path, base) for s in core_flag_specs() if s.path}
    out = dataclasses.replace(cfg, **{k: v for k, v in changes.items() if v != getattr(cfg, k)})
    for key, specs in section_specs:
        values = cfg.section(key)
        new = {s.name: absolute_path(values.get(s.name), s.path, base) for s in specs
               if s.path and s.name in values}
        new = {k: v for k, v in new.items() if v != values.get(k)}
        if new:
            out = out.with_section_values(key, **new)
    return out
