"""Loading plugin functions named on the command line (slime's ``--*-path`` flags).

A spec is ``path/to/file.py:function``, ``path/to/file.py`` (the hook's default function name)
or ``package.module.function``. File paths are resolved against the working directory first,
then the repository root, so a method folder's launch script finds its files from anywhere.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import sys
from pathlib import Path
from typing import Callable

REPO_ROOT = Path(__file__).resolve().parent.parent


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
        raise PluginError(f"plugin file {path} failed to import: {type(exc).__name__}: {exc}") from exc
    return module


def load_function(spec: str, flag: str, default_name: str | None = None) -> Callable:
    """Resolve a plugin spec to a callable.

    Args:
        spec: see module doc.
        flag: the command-line flag, for error messages.
        default_name: function name used when a file is given without ``:function``.

    Raises:
        PluginError: missing file, module or function, or not callable.
    """
    if ".py" in spec:
        file_part, _, func = spec.partition(":") if ".py:" in spec else (spec, "", "")
        func = func or default_name
        if not func:
            raise PluginError(f"{flag} {spec}: name the function as {spec}:function")
        candidates = [Path(file_part), REPO_ROOT / file_part]
        path = next((p.resolve() for p in candidates if p.is_file()), None)
        if path is None:
            raise PluginError(f"{flag} {spec}: file {file_part} not found (looked in the working "
                              f"directory and {REPO_ROOT})")
        module = _load_file(path, func)
    else:
        module_name, _, func = spec.rpartition(".")
        if not module_name:
            raise PluginError(f"{flag} {spec}: expected path/to/file.py[:function] or package.module.function")
        if str(REPO_ROOT) not in sys.path:
            sys.path.append(str(REPO_ROOT))
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:
            raise PluginError(f"{flag} {spec}: cannot import module {module_name}: {exc}") from exc
    fn = getattr(module, func, None)
    if fn is None:
        raise PluginError(f"{flag} {spec}: no function {func!r} in {getattr(module, '__file__', module)}")
    if not callable(fn):
        raise PluginError(f"{flag} {spec}: {func!r} is not callable")
    return fn


def check_parameters(fn: Callable, flag: str, required: tuple[str, ...]) -> inspect.Signature:
    """Check that ``fn`` accepts the positional parameters ``required`` (by count).

    Raises:
        PluginError: naming the flag, the function and the expected parameters.
    """
    sig = inspect.signature(fn)
    params = [p for p in sig.parameters.values() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    varargs = any(p.kind == p.VAR_POSITIONAL for p in sig.parameters.values())
    if len(params) < len(required) and not varargs:
        raise PluginError(f"{flag}: {fn.__name__}{sig} must accept ({', '.join(required)})")
    return sig
