"""``slime.hooks``, the import path plugins written before the subpackages use: the same names as
:mod:`slime.plugins.hooks`, where the module now lives (``from slime.plugins.hooks import ...`` in new code)."""

from slime.plugins.hooks import *  # noqa: F401,F403
from slime.plugins.hooks import __all__  # noqa: F401
