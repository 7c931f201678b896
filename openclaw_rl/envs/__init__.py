"""Track 2 environments, one package per agent family."""

from __future__ import annotations

import os
from typing import Mapping


def env_seconds(name: str, environ: Mapping[str, str] | None = None) -> float | None:
    """The environment variable ``name`` as a number of seconds >= 0 (None when unset or empty).

    Args:
        name: the variable (``GUI_WAIT_AFTER_RESET``, ``SWE_ROLLOUT_TIMEOUT`` ...).
        environ: where to read it (default ``os.environ``).

    Raises:
        ValueError: not a number >= 0 (one line naming the variable).
    """
    raw = ((os.environ if environ is None else environ).get(name) or "").strip()
    if not raw:
        return None
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not value >= 0:  # also refuses nan
        raise ValueError(f"{name} must be seconds >= 0, got {raw!r}")
    return value
