"""The OpenAI-compatible intercept server (serving loop + capture).

The package's names load on first use (PEP 562): :func:`build_server` and :func:`engine_options`
from :mod:`openclaw_rl.server.build`, :class:`ServerConfig`, :func:`build_parser` and
:func:`parse_server_args` from :mod:`openclaw_rl.server.config`. A process that reads one light
module of the package (the tool-call parser, to import an OpenClaw history in a Ray job's driver)
then does not load FastAPI and the serving stack.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS = {"build_server": "openclaw_rl.server.build", "engine_options": "openclaw_rl.server.build",
            **dict.fromkeys(("ServerConfig", "build_parser", "parse_server_args"), "openclaw_rl.server.config")}

__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:  # what type checkers and IDEs see
    from openclaw_rl.server.build import build_server, engine_options
    from openclaw_rl.server.config import ServerConfig, build_parser, parse_server_args


def __getattr__(name: str) -> Any:
    """``openclaw_rl.server.<name>`` for a public name, imported from its module on first use.

    Raises:
        AttributeError: ``name`` is not one of :data:`__all__` (nor a submodule).
    """
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'openclaw_rl.server' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
