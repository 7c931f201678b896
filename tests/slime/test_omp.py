"""torch's OpenMP spin count on a shared CPU (slime/omp.py): set before torch loads, the user's wins."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from slime.omp import SPIN_COUNT, set_spin_default

REPO = Path(__file__).resolve().parent.parent.parent
#: what libgomp reads when torch loads it: the C environment (getenv), after the import of a
#: module that imports torch at its top
PROBE = ("import ctypes, sys\nimport {module}\nassert 'torch' in sys.modules\n"
         "libc = ctypes.CDLL(None)\nlibc.getenv.restype = ctypes.c_char_p\n"
         "print((libc.getenv(b'GOMP_SPINCOUNT') or b'-').decode())")


def _probe(module: str, **env: str) -> str:
    clean = {k: v for k, v in os.environ.items() if k not in ("GOMP_SPINCOUNT", "OMP_WAIT_POLICY")}
    r = subprocess.run([sys.executable, "-c", PROBE.format(module=module)], cwd=REPO, env={**clean, **env},
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()


@pytest.mark.parametrize("module", ["slime.trainer.backend", "openclaw_rl.engine.transformers_engine"])
def test_the_spin_count_is_in_the_environment_before_torch_loads(module):
    assert _probe(module) == str(SPIN_COUNT)


def test_the_users_own_setting_wins():
    assert _probe("slime.trainer.backend", GOMP_SPINCOUNT="300000") == "300000"
    assert _probe("slime.trainer.backend", OMP_WAIT_POLICY="ACTIVE") == "-"
    env = {"OMP_WAIT_POLICY": "PASSIVE"}
    assert not set_spin_default(env) and env == {"OMP_WAIT_POLICY": "PASSIVE"}
    env = {}
    assert set_spin_default(env) and env == {"GOMP_SPINCOUNT": str(SPIN_COUNT)}
