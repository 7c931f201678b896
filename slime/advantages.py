"""``slime.advantages``, the import path plugins written before the subpackages use: the same names as
:mod:`slime.algorithms.advantages`, where the module now lives (``from slime.algorithms.advantages import ...`` in new code)."""

from slime.algorithms.advantages import *  # noqa: F401,F403
from slime.algorithms.advantages import __all__  # noqa: F401
