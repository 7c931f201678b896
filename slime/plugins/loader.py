"""Loading plugin functions named on the command line (slime's ``--*-path`` flags).

A spec is ``path/to/file.py:function``, ``path/to/file.py`` (the hook's default function name)
or ``package.module.function``. File paths are resolved against the working directory first,
then the repository root, so a method folder's launch script finds its files from anywhere.

Every failure is a :class:`PluginError` with a one-line message naming the flag, the spec and
what was expected. The hook-specific loaders build on this module:
:mod:`slime.plugins.loss` (loss), :mod:`slime.plugins.rollout` (rollout, generate),
:mod:`slime.plugins.reward` (reward); :mod:`slime.plugins.check` checks all four at start-up.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import sys
import types
import typing
from collections.abc import Callable, Sequence
from pathlib import Path

from slime.errors import error_line

REPO_ROOT = Path(__file__).resolve().parents[2]  # slime/plugins/loader.py -> the repository


class PluginError(ValueError):
    """A plugin that cannot be loaded or has the wrong shape (one-line message)."""


def _load_file(path: Path, name: str):
    mod_name = f"_slime_plugin_{abs(hash(str(path)))}"
    if mod_name in sys.modules:
        return sys.modules[mod_name]
    spec = importlib.util.spec_from_file_location(mod_name, path)
    if spec is None or spec.loader is None:
        raise PluginError(f"cannot import plugin file {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[mod_name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        del sys.modules[mod_name]
        raise PluginError(f"plugin file {path} failed to import: {error_line(exc, None)}") from exc
    return module


def split_spec(spec: str) -> tuple[str, str | None, bool]:
    """Split a spec into ``(file or module, function or None, is_file)``."""
    if spec.endswith(".py") or ".py:" in spec:
        file_part, _, func = spec.partition(".py")
        return file_part + ".py", func.lstrip(":") or None, True
    module_name, _, func = spec.rpartition(".")
    return module_name, func or None, False


def resolve_file(file_part: str) -> Path | None:
    """The plugin file: ``file_part`` relative to the working directory, else to the repo root."""
    for candidate in (Path(file_part), REPO_ROOT / file_part):
        if candidate.is_file():
            return candidate.resolve()
    return None


def load_module(spec: str, flag: str):
    """Import the file or module a spec names (without looking up the function).

    Returns ``(module, function name or None)``.

    Raises:
        PluginError: missing file, import error, or a malformed spec.
    """
    target, func, is_file = split_spec(spec)
    if is_file:
        path = resolve_file(target)
        if path is None:
            raise PluginError(f"{flag} {spec}: file {target} not found (looked in the working "
                              f"directory {Path.cwd()} and the repository root {REPO_ROOT})")
        try:
            return _load_file(path, func or ""), func
        except PluginError as exc:
            raise PluginError(f"{flag} {spec}: {exc}") from exc
    if not target:
        raise PluginError(f"{flag} {spec}: expected path/to/file.py[:function] or package.module.function")
    for root in (str(Path.cwd()), str(REPO_ROOT)):  # packages under the working directory or the repo
        if root not in sys.path:
            sys.path.append(root)
    try:
        return importlib.import_module(target), func
    except Exception as exc:
        raise PluginError(f"{flag} {spec}: cannot import module {target}: {error_line(exc, None)}") from exc


def load_function(spec: str, flag: str, default_name: str | Sequence[str] | None = None) -> Callable:
    """Resolve a plugin spec to a callable.

    Args:
        spec: see module doc.
        flag: the command-line flag, for error messages.
        default_name: function name (or names, tried in order) used when a file is given
            without ``:function``.

    Raises:
        PluginError: missing file, module or function, or not callable.
    """
    module, func = load_module(spec, flag)
    names = [func] if func else ([default_name] if isinstance(default_name, str) else list(default_name or ()))
    if not names:
        raise PluginError(f"{flag} {spec}: name the function as {spec}:function")
    where = getattr(module, "__file__", None) or getattr(module, "__name__", module)
    fn = next((getattr(module, n) for n in names if getattr(module, n, None) is not None), None)
    if fn is None:
        wanted = " or ".join(repr(n) for n in names)
        raise PluginError(f"{flag} {spec}: no function {wanted} in {where}")
    if not callable(fn):
        raise PluginError(f"{flag} {spec}: {getattr(fn, '__name__', names[0])!r} is not callable")
    return fn


def positional_parameters(fn: Callable) -> list[inspect.Parameter]:
    """The positional (or positional-or-keyword) parameters of ``fn``, in order."""
    sig = inspect.signature(fn)
    return [p for p in sig.parameters.values() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]


def signature_text(fn: Callable) -> str:
    """``name(params)`` of ``fn`` for messages."""
    try:
        return f"{getattr(fn, '__name__', type(fn).__name__)}{inspect.signature(fn)}"
    except (TypeError, ValueError):
        return repr(fn)


def check_parameters(fn: Callable, flag: str, required: tuple[str, ...],
                     optional: tuple[str, ...] = ()) -> inspect.Signature:
    """Check that ``fn`` can be called with the positional arguments ``required``.

    ``fn`` must accept ``len(required)`` positional arguments (or ``*args``) and must not require
    more than ``len(required)`` arguments; each name in ``optional`` (passed by keyword, e.g.
    ``evaluation``) must be a parameter or be absorbed by ``**kwargs``.

    Returns:
        The signature.

    Raises:
        PluginError: naming the flag, the function and the expected parameters.
    """
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError) as exc:
        raise PluginError(f"{flag}: cannot inspect {fn!r}: {exc}") from exc
    params = positional_parameters(fn)
    varargs = any(p.kind == p.VAR_POSITIONAL for p in sig.parameters.values())
    varkw = any(p.kind == p.VAR_KEYWORD for p in sig.parameters.values())
    need = [p for p in sig.parameters.values() if p.default is p.empty
            and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    expected = ", ".join(list(required) + [f"{o}=..." for o in optional])
    name = getattr(fn, "__name__", type(fn).__name__)
    if (len(params) < len(required) and not varargs) or len(need) > len(required) \
            or any(o not in sig.parameters and not varkw for o in optional):
        raise PluginError(f"{flag}: {name}{sig} has the wrong parameters; expected ({expected})")
    return sig


def _hint_types(hint) -> list:
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        return [t for arg in typing.get_args(hint) for t in _hint_types(arg)]
    if origin is not None:
        return [origin]
    return [hint]


def check_return_annotation(fn: Callable, flag: str, allowed: tuple[type, ...], expected: str) -> None:
    """Refuse a function whose return annotation clearly names another type.

    No annotation, ``Any``, or an annotation that cannot be resolved passes. For ``async``
    functions the annotation is the awaited result.

    Raises:
        PluginError: ``... is annotated to return X; expected <expected>``.
    """
    try:
        hint = typing.get_type_hints(fn).get("return", None)
    except Exception:  # unresolvable forward references: nothing to check
        return
    if hint is None or hint is typing.Any:
        return
    types_ = [t for t in _hint_types(hint) if isinstance(t, type)]
    if not types_ or any(t is object or issubclass(t, allowed) for t in types_):
        return
    shown = getattr(hint, "__name__", None) or str(hint)
    raise PluginError(f"{flag}: {getattr(fn, '__name__', fn)} is annotated to return {shown}; expected {expected}")
