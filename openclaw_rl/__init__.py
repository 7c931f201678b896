"""OpenClaw-RL: train a self-hosted agent's model from its conversations (README.md).

Importing the package sets torch's OpenMP spin count for a shared CPU before any of its modules
loads torch (:mod:`slime.omp`).
"""

from slime.omp import set_spin_default

set_spin_default()
