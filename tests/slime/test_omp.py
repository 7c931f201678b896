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


AFFINITY_PROBE = ("from slime.omp import usable_cores\nfrom slime.orchestration.ray_actors import _use_all_cores\n"
                  "from openclaw_rl.engine.cpu_budget import omp_threads\nimport torch\n_use_all_cores()\n"
                  "print(usable_cores(), torch.get_num_threads(), omp_threads())")


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="no CPU affinity on this platform")
def test_threads_follow_the_cores_the_process_may_use():
    """A process given one core (``taskset``, a container's cpuset, a batch scheduler) trains and
    serves with one thread, whatever ``os.cpu_count()`` says; with all its cores, one per core."""
    def probe(cores: set[int]) -> list[int]:
        r = subprocess.run([sys.executable, "-c", AFFINITY_PROBE], cwd=REPO, capture_output=True, text=True,
                           timeout=120, preexec_fn=lambda: os.sched_setaffinity(0, cores))
        assert r.returncode == 0, r.stderr
        return [int(x) for x in r.stdout.split()]

    mine = os.sched_getaffinity(0)
    assert probe({min(mine)}) == [1, 1, 1]
    assert probe(mine) == [len(mine), len(mine), max(1, len(mine) - 1)]
