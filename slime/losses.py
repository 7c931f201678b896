"""``slime.losses``, the import path plugins written before the subpackages use: the same names as
:mod:`slime.algorithms.losses`, where the module now lives (``from slime.algorithms.losses import ...`` in new code)."""

from slime.algorithms.losses import *  # noqa: F401,F403
from slime.algorithms.losses import __all__  # noqa: F401
