"""``slime.models``, the import path plugins written before the subpackages use: the same names as
:mod:`slime.trainer.models`, where the module now lives (``from slime.trainer.models import ...`` in new code)."""

from slime.trainer.models import *  # noqa: F401,F403
from slime.trainer.models import __all__  # noqa: F401
