"""Plugins: loading ``--*-path`` hooks (slime style), their typed protocols and calling
conventions, the start-up check, entry-point registries and what happens when one raises.

``from slime.plugins import PluginError, load_function`` (the loader's names, as plugins imported
them when ``slime.plugins`` was one module) still works: they load from
:mod:`slime.plugins.loader` on first use (PEP 562).
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["PluginError", "load_function", "load_module"]


def __getattr__(name: str) -> Any:
    """The loader's public names (:data:`__all__`), from :mod:`slime.plugins.loader`.

    Raises:
        AttributeError: any other name.
    """
    if name not in __all__:
        raise AttributeError(f"module 'slime.plugins' has no attribute {name!r}")
    return getattr(importlib.import_module("slime.plugins.loader"), name)
