"""Typed flags: one declaration per flag, from which the command line, defaults and env fallbacks
all come.

A group of flags is a frozen dataclass whose fields are declared with :func:`flag` (TRL's
``field(metadata={"help": ...})`` pattern): the field's name is the flag (``prm_model_path`` ->
``--prm-model-path``), its annotation the type, and the metadata the help text, aliases, choices,
bounds and environment fallback. From that declaration

* :func:`add_flag_group` generates the argparse group (every flag has help text; the help shows
  the default and the environment variable);
* :func:`resolve_flags` builds the typed instance from parsed values, reading environment
  fallbacks in this one place: a flag given on the command line always beats its environment
  variable, which beats the default; a bad environment value is a one-line :class:`ConfigError`;
* bounds (``gt``, ``ge``, ``lt``, ``le``) are checked with one-line messages
  (``--opd-adv-clip must be > 0, got -1.0``).

Supported annotations: ``bool`` (a ``store_true`` switch), ``int``, ``float``, ``str``, a
``Literal[...]`` of strings (choices), ``X | None`` of those, and ``tuple[str, ...] | None``
(``nargs="+"``).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import types
import typing
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["ConfigError", "UNSET", "FlagSpec", "add_flag_group", "build_flags", "check_bounds", "flag", "flag_specs",
           "option_name", "resolve_flags"]


class ConfigError(ValueError):
    """A bad command line, environment value or inconsistent configuration; the message is one line."""


class _Unset:
    """Marks a flag not given on the command line (argparse's default for every generated flag)."""

    _instance = None

    def __new__(cls):
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNSET"

    def __reduce__(self):
        return (_Unset, ())


UNSET: Any = _Unset()


def flag(default: Any = dataclasses.MISSING, help: str = "", *, names: Iterable[str] = (),
         env: str | None = None, choices: Iterable[Any] | None = None, gt: float | None = None,
         ge: float | None = None, lt: float | None = None, le: float | None = None,
         group: str | None = None, metavar: str | None = None, default_text: str | None = None,
         path: str | None = None) -> Any:
    """Declare one flag as a dataclass field.

    Args:
        default: the default value (a tuple for sequence flags). Must be immutable.
        help: one-line help text (required; shown by ``--help``).
        names: option strings; default ``--<field-name-with-dashes>``. Give aliases here, the
            first being the canonical name used in messages.
        env: environment variable read when the flag is not on the command line.
        choices: allowed values (``Literal`` annotations give them automatically).
        gt / ge / lt / le: numeric bounds checked on the resolved value (``None`` passes).
        group: argparse group title for flags of the core config (method and service groups are
            titled by their owner).
        metavar: argparse metavar.
        default_text: what ``--help`` shows as the default when it is derived from other flags.
        path: the flag names a path, made absolute once at start-up against the caller's
            directory (:func:`slime.config.paths.absolute_paths`): ``"output"`` (a folder the run
            writes), ``"input"`` (a file or folder it reads), ``"model"`` (a model folder, or a
            name such as ``builtin:tiny-qwen3`` kept as is), ``"data"`` (a file looked up like
            plugin files: the caller's directory, then the repository root) or ``"plugin"``
            (a plugin spec ``file.py[:name]``; ``package.module.name`` is kept).

    Returns:
        A :func:`dataclasses.field` carrying the metadata.

    Raises:
        ValueError: empty help text.
    """
    if not help.strip():
        raise ValueError("every flag needs help text")
    meta = {"help": help, "names": tuple(names), "env": env, "choices": None if choices is None else tuple(choices),
            "bounds": {k: v for k, v in (("gt", gt), ("ge", ge), ("lt", lt), ("le", le)) if v is not None},
            "group": group, "metavar": metavar, "default_text": default_text, "path": path, "flag": True}
    return dataclasses.field(default=default, metadata=meta)


def option_name(name: str) -> str:
    """``prm_model_path`` -> ``--prm-model-path``."""
    return "--" + name.replace("_", "-")


@dataclasses.dataclass(frozen=True)
class FlagSpec:
    """Everything known about one declared flag (see :func:`flag`).

    ``kind`` is ``bool``, ``int``, ``float``, ``str`` or ``list`` (a ``tuple[str, ...]``);
    ``optional`` says whether ``None`` is a valid value.
    """

    name: str
    kind: type
    optional: bool
    default: Any
    help: str
    names: tuple[str, ...]
    env: str | None
    choices: tuple[Any, ...] | None
    bounds: Mapping[str, float]
    group: str | None
    metavar: str | None
    default_text: str | None
    path: str | None = None

    @property
    def option(self) -> str:
        """The canonical option string (first of ``names``)."""
        return self.names[0]

    def help_text(self) -> str:
        """The help text with the default and the environment variable appended."""
        bits = []
        shown = self.default_text
        if shown is None and self.kind is not bool:
            d = self.default
            shown = "none" if d is None else (" ".join(map(str, d)) if isinstance(d, tuple) else str(d))
        if shown is not None:
            bits.append(f"default: {shown}")
        if self.env:
            bits.append(f"env {self.env}")
        return self.help + (f" ({'; '.join(bits)})" if bits else "")


def _kind(hint: Any) -> tuple[type, bool, tuple[Any, ...] | None]:
    """``(kind, optional, literal choices)`` of a field annotation; raises TypeError if unsupported."""
    optional = False
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        optional = len(args) < len(typing.get_args(hint))
        if len(args) != 1:
            raise TypeError(f"unsupported flag type {hint!r}")
        hint, origin = args[0], typing.get_origin(args[0])
    if origin is typing.Literal:
        values = typing.get_args(hint)
        return type(values[0]), optional, values
    if origin is tuple:
        return list, optional, None
    if hint in (bool, int, float, str):
        return hint, optional, None
    raise TypeError(f"unsupported flag type {hint!r}")


def flag_specs(cls: type) -> list[FlagSpec]:
    """The :class:`FlagSpec` of every :func:`flag` field of the dataclass ``cls``, in order.

    Raises:
        TypeError: ``cls`` is not a dataclass, or a flag field has an unsupported annotation.
    """
    hints = typing.get_type_hints(cls)
    out = []
    for f in dataclasses.fields(cls):
        if not f.metadata.get("flag"):
            continue
        kind, optional, literal = _kind(hints[f.name])
        m = f.metadata
        default = f.default if f.default is not dataclasses.MISSING else None
        out.append(FlagSpec(name=f.name, kind=kind, optional=optional, default=default, help=m["help"],
                            names=m["names"] or (option_name(f.name),), env=m["env"],
                            choices=m["choices"] or literal, bounds=m["bounds"], group=m["group"],
                            metavar=m["metavar"], default_text=m["default_text"], path=m.get("path")))
    return out


def add_flag_group(parser: argparse.ArgumentParser, specs: Iterable[FlagSpec], title: str,
                   description: str | None = None) -> None:
    """Add ``specs`` as one argparse group (every default is :data:`UNSET`, see module doc)."""
    g = parser.add_argument_group(title, description)
    for spec in specs:
        kw: dict[str, Any] = {"dest": spec.name, "default": UNSET, "help": spec.help_text()}
        if spec.kind is bool:
            kw["action"] = "store_true"
        else:
            kw["type"] = str if spec.kind is list else spec.kind
            if spec.kind is list:
                kw["nargs"] = "+"
            if spec.choices is not None:
                kw["choices"] = list(spec.choices)
            if spec.metavar:
                kw["metavar"] = spec.metavar
        g.add_argument(*spec.names, **kw)


def _env_value(spec: FlagSpec, raw: str) -> Any:
    what = {int: "an integer", float: "a number", bool: "true or false", str: "text", list: "text"}[spec.kind]
    try:
        if spec.kind is bool:
            low = raw.strip().lower()
            if low not in ("1", "true", "yes", "on", "0", "false", "no", "off"):
                raise ValueError(raw)
            value: Any = low in ("1", "true", "yes", "on")
        elif spec.kind is list:
            value = tuple(raw.split())
        else:
            value = spec.kind(raw)
    except ValueError:
        raise ConfigError(f"{spec.env} must be {what}, got {raw!r} (the fallback of {spec.option})") from None
    if spec.choices is not None and value not in spec.choices:
        raise ConfigError(f"{spec.env} must be one of {', '.join(map(str, spec.choices))}, got {raw!r}")
    return value


_BOUND_TEXT = {"gt": (">", lambda v, b: v > b), "ge": (">=", lambda v, b: v >= b),
               "lt": ("<", lambda v, b: v < b), "le": ("<=", lambda v, b: v <= b)}


def check_bounds(spec: FlagSpec, value: Any, source: str | None = None) -> None:
    """Raise :class:`ConfigError` when ``value`` breaks a bound of ``spec`` (``None`` passes)."""
    if value is None or value is UNSET:
        return
    for key, bound in spec.bounds.items():
        sign, ok = _BOUND_TEXT[key]
        if not ok(value, bound):
            raise ConfigError(f"{source or spec.option} must be {sign} {bound:g}, got {value}")


def resolve_flags(specs: Iterable[FlagSpec], values: Mapping[str, Any],
                  environ: Mapping[str, str] | None = None, use_env: bool = True) -> tuple[dict[str, Any], set[str]]:
    """Final values of ``specs``: the command line, else the environment fallback, else the default.

    Args:
        specs: the flags.
        values: parsed values by field name (:data:`UNSET` or missing: not on the command line).
        environ: the environment (default ``os.environ``).
        use_env: read environment fallbacks (False: command line and defaults only).

    Returns:
        ``(values by field name, names given on the command line)``. Sequences become tuples.

    Raises:
        ConfigError: a bad environment value or a value outside the flag's bounds (one line).
    """
    environ = os.environ if environ is None else environ
    out: dict[str, Any] = {}
    explicit: set[str] = set()
    for spec in specs:
        value = values.get(spec.name, UNSET)
        source = None
        if value is not UNSET:
            explicit.add(spec.name)
        elif use_env and spec.env and environ.get(spec.env, "").strip():
            value, source = _env_value(spec, environ[spec.env]), spec.env
        else:
            value = spec.default
        if isinstance(value, list):
            value = tuple(value)
        check_bounds(spec, value, source)
        out[spec.name] = value
    return out, explicit


def build_flags(cls: type, values: Mapping[str, Any]) -> Any:
    """``cls(**values)`` keeping only ``cls``'s fields (an instance of a flag dataclass)."""
    names = {f.name for f in dataclasses.fields(cls)}
    return cls(**{k: v for k, v in values.items() if k in names})
