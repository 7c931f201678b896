"""The shape of a plugin spec: ``path/to/file.py[:name]`` or ``package.module.name``.

Read by the flag checks (:mod:`slime.config.checks`), the path resolution (:mod:`slime.config.paths`)
and the method and service registries; depends on nothing else in ``slime``.
"""

from __future__ import annotations

import re

__all__ = ["PLUGIN_SPEC_FLAGS", "is_plugin_spec"]

# "path/to/file.py", "path/to/file.py:name" or "package.module.name"
_PLUGIN_FILE_RE = re.compile(r"^.+\.py(:[A-Za-z_][A-Za-z0-9_]*)?$")
_PLUGIN_MODULE_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)+$")
#: the core flags whose value is a plugin spec
PLUGIN_SPEC_FLAGS = ("custom_loss_function_path", "rollout_function_path", "custom_generate_function_path",
                     "custom_rm_path")


def is_plugin_spec(spec: str) -> bool:
    """Whether ``spec`` looks like ``path/to/file.py[:name]`` or ``package.module.name``."""
    return bool(_PLUGIN_FILE_RE.match(spec) or _PLUGIN_MODULE_RE.match(spec))
