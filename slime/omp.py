"""torch's OpenMP threads on a shared CPU: how long idle ones spin before they sleep (set before
torch loads), and how many a process should run (:func:`usable_cores`).

torch's CPU wheel runs its intra-op threads on GNU OpenMP (libgomp). Between two parallel regions
an idle thread spins, by default for 300,000 iterations (``GOMP_SPINCOUNT``), before it sleeps.
Alone on a machine that is fastest; on a CPU that processes share (a policy server, a trainer and
judges on one laptop or small box: every CPU run of OpenClaw-RL), the spinning threads take the
cores the other process is waiting for, and both slow down by several times.
``benchmarks/omp_wait.py`` on the 2-core machine (SmolLM2-135M, 4 prompts, torch's default two
threads): two processes at once decode 4x32 tokens in 9.9-72 s with the default and 5.7 s with a
spin count of 10,000, and take 67 s instead of 13 s for 3 training steps; alone, 10,000 costs
5 % (``OMP_WAIT_POLICY=PASSIVE``, no spinning at all: 44 % on decoding, 19 % on training).

:func:`set_spin_default` sets ``GOMP_SPINCOUNT=10000`` unless the user set it or
``OMP_WAIT_POLICY``; ``slime`` calls it when it is imported (and so does the runtime package on
top of it), before any of their modules imports torch, and every process they start inherits it
(servers, Ray workers).
libgomp reads the variable once, when torch loads it: a process that imported torch before
``slime`` keeps libgomp's default, its children do not.

:func:`usable_cores` is what the trainer, the main job and vLLM on CPU size their threads by: the
cores the process may run on, not the machine's.
"""

from __future__ import annotations

import os
from collections.abc import MutableMapping

__all__ = ["SPIN_COUNT", "set_spin_default", "usable_cores"]

#: the spin count set by default (libgomp's own: 300,000)
SPIN_COUNT = 10_000


def set_spin_default(environ: MutableMapping[str, str] | None = None) -> bool:
    """Set ``GOMP_SPINCOUNT`` to :data:`SPIN_COUNT` in ``environ`` (default ``os.environ``) unless
    ``GOMP_SPINCOUNT`` or ``OMP_WAIT_POLICY`` is set there; returns whether it set it."""
    environ = os.environ if environ is None else environ
    if "GOMP_SPINCOUNT" in environ or "OMP_WAIT_POLICY" in environ:
        return False
    environ["GOMP_SPINCOUNT"] = str(SPIN_COUNT)
    return True


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity, ``os.sched_getaffinity``), >= 1: what a
    process sizes its torch threads by. ``os.cpu_count()`` counts the machine's cores, also those a
    container's cpuset, ``taskset``, a batch scheduler or a parallel test runner left to other
    processes; torch's own default and libgomp already follow the affinity, and threads beyond it
    share cores (two torch threads on one core: every parallel region waits for the descheduled one).
    Where the platform has no affinity (macOS), ``os.cpu_count()``."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)
