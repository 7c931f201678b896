"""toolcall-rl's tools and their limits: ``toolcall-rl/tools_config.json``, read into :class:`ToolsConfig`.

Where the settings come from (later wins, field by field):

1. the defaults of :class:`ToolsConfig` (equal to the shipped ``toolcall-rl/tools_config.json``);
2. ``TOOLS_CONFIG``: the seed's name, a path to a JSON file
   (``TOOLS_CONFIG=./toolcall-rl/tools_config.json bash toolcall-rl/run_toolcall_rl.sh``);
3. ``TOOL_CONFIGS``: upstream's name (its ``tool_sandbox.TOOL_CONFIGS`` dict), a path to a JSON
   file or an inline JSON object, e.g. ``TOOL_CONFIGS='{"max_turns": 8, "python_timeout": 30}'``.

Fields (upstream's names): ``max_turns`` (model turns per episode), ``max_tool_calls``
(interpreter runs per episode; further calls get an error observation), ``tool_concurrency``
(programs running at once per process), ``python_timeout`` (wall-clock seconds per program; the
CPU-time limit is the same number), ``python_memory_limit`` (address-space limit per program,
``"1GB"``, ``"512MB"`` or a number of MB), ``max_obs_chars`` (the ``<interpreter>`` output is cut
to this many characters, keeping the head and the tail), and ``tools`` (the OpenAI tool schemas
offered; ``code_interpreter`` by default).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from openclaw_rl.envs.math_tool.prompt import CODE_INTERPRETER_SCHEMA

__all__ = ["ENV_VARS", "ToolsConfig", "ToolsConfigError", "load_tools_config", "memory_mb"]

#: environment variables read by :func:`load_tools_config`, in order of precedence (last wins)
ENV_VARS = ("TOOLS_CONFIG", "TOOL_CONFIGS")
_MEM = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMGT]?)I?B?\s*$", re.IGNORECASE)


class ToolsConfigError(ValueError):
    """A tools config that cannot be read or is invalid (one-line message naming the source and field)."""


def memory_mb(value: str | int | float) -> int:
    """``"4GB"`` / ``"512MB"`` / ``"1.5GiB"`` / a number of MB -> whole MB.

    Raises:
        ValueError: not a size, or not positive.
    """
    if isinstance(value, bool):
        raise ValueError(f"not a memory size: {value!r}")
    if isinstance(value, (int, float)):
        mb = float(value)
    else:
        m = _MEM.match(value)
        if not m:
            raise ValueError(f"not a memory size: {value!r} (write e.g. '1GB' or '512MB')")
        scale = {"": 1, "K": 1 / 1024, "M": 1, "G": 1024, "T": 1024 * 1024}[m.group(2).upper()]
        mb = float(m.group(1)) * scale
    if mb < 1:
        raise ValueError(f"memory size must be at least 1 MB, got {value!r}")
    return int(mb)


class ToolsConfig(BaseModel):
    """The tools of a toolcall-rl episode and their limits (see the module doc for each field)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    description: str = ""
    max_turns: int = Field(16, ge=1)
    max_tool_calls: int = Field(16, ge=0)
    tool_concurrency: int = Field(32, ge=1)
    python_timeout: float = Field(30.0, gt=0)
    python_memory_limit: str | int = "1GB"
    max_obs_chars: int = Field(1024, ge=64)
    tools: list[dict[str, Any]] = Field(default_factory=lambda: [CODE_INTERPRETER_SCHEMA])

    @field_validator("python_memory_limit")
    @classmethod
    def _check_memory(cls, v: str | int) -> str | int:
        memory_mb(v)
        return v

    @field_validator("tools")
    @classmethod
    def _check_tools(cls, v: list[dict[str, Any]]) -> list[dict[str, Any]]:
        for i, tool in enumerate(v):
            fn = tool.get("function") if isinstance(tool, dict) else None
            name = fn.get("name") if isinstance(fn, dict) else None
            if tool.get("type") != "function" or not isinstance(name, str) or not name:
                raise ValueError(f"tools[{i}] must be an OpenAI tool schema "
                                 '{"type": "function", "function": {"name": ..., "parameters": ...}}')
        return v

    @property
    def memory_mb(self) -> int:
        """``python_memory_limit`` in MB."""
        return memory_mb(self.python_memory_limit)

    @property
    def tool_names(self) -> list[str]:
        """Names of the offered tools."""
        return [t["function"]["name"] for t in self.tools]


def _read(source: str, where: str) -> dict[str, Any]:
    text = source.strip()
    if not text.startswith(("{", "[")):
        try:
            text = Path(source).expanduser().read_text(encoding="utf-8")
        except OSError as e:
            raise ToolsConfigError(f"{where}: cannot read {source}: {e.strerror or e}") from None
        where = f"{where} ({source})"
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise ToolsConfigError(f"{where}: not valid JSON: {e.msg} at line {e.lineno} column {e.colno}") from None
    if not isinstance(data, dict):
        raise ToolsConfigError(f"{where}: must be a JSON object, got {type(data).__name__}")
    return data


def load_tools_config(path: str | Path | None = None, env: Mapping[str, str] | None = None) -> ToolsConfig:
    """The effective tools config (see the module doc for the precedence).

    Args:
        path: a JSON file read before the environment variables (e.g. a launch script's flag).
        env: the environment to read ``TOOLS_CONFIG`` / ``TOOL_CONFIGS`` from (default ``os.environ``).

    Returns:
        The validated :class:`ToolsConfig`.

    Raises:
        ToolsConfigError: a file cannot be read, is not a JSON object, or a field is invalid
            (one line: the source, the field and what is wrong).
    """
    env = os.environ if env is None else env
    merged: dict[str, Any] = {}
    sources = [("file", str(path))] if path is not None else []
    sources += [(name, env[name]) for name in ENV_VARS if env.get(name, "").strip()]
    for where, source in sources:
        merged.update(_read(source, where))
    try:
        return ToolsConfig(**merged)
    except ValidationError as e:
        err = e.errors()[0]
        field = ".".join(str(x) for x in err["loc"]) or "config"
        names = ", ".join(w for w, _ in sources) or "defaults"
        raise ToolsConfigError(f"tools config ({names}): {field}: {err['msg']}") from None


def max_turns() -> int:
    """``max_turns`` of the tools config in effect (``TOOLS_CONFIG`` / ``TOOL_CONFIGS``)."""
    return int(load_tools_config().max_turns)
