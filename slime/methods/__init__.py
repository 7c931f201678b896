"""Learning methods: the :class:`Method` protocol, the core's generic methods and the registry.

``from slime.methods import Method`` is all a method in its own file needs; see
:mod:`slime.methods.base` for the hooks and docs/architecture.md for how to add one.
"""

from slime.methods.base import Method
from slime.methods.broadcast import BroadcastMethod
from slime.methods.grpo import GRPOMethod
from slime.methods.passthrough import PassThroughMethod
from slime.methods.registry import CORE_METHODS, load_method_class, method_names
from slime.methods.step_wise import StepWiseMethod

__all__ = ["CORE_METHODS", "BroadcastMethod", "GRPOMethod", "Method", "PassThroughMethod", "StepWiseMethod",
           "load_method_class", "method_names"]
