"""``slime.flags``, the import path plugins written before the subpackages use: the same names as
:mod:`slime.config.flags`, where the module now lives (``from slime.config.flags import ...`` in new code)."""

from slime.config.flags import *  # noqa: F401,F403
from slime.config.flags import __all__  # noqa: F401
