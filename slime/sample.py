"""``slime.sample``, the import path plugins written before the subpackages use: the same names as
:mod:`slime.record.sample`, where the module now lives (``from slime.record.sample import ...`` in new code)."""

from slime.record.sample import *  # noqa: F401,F403
from slime.record.sample import __all__  # noqa: F401
