"""my-method's learning method (``--advantage-estimator my-method/method.py:MyMethod``).

A method is one class (see slime/methods/base.py and docs/architecture.md, "Adding a method"):
its flags are a frozen dataclass, and each hook is a method you override only when you need it.
This one broadcasts each turn's reward over its tokens, minus an optional baseline (the step's
mean reward, ``--my-method-baseline mean``), scaled by ``--my-method-scale``. The judge is the
rollout service's default (here the folder's ``--custom-rm-path`` reward plugin); the loss is the
folder's ``--custom-loss-function-path`` plugin.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from slime.algorithms.advantages import broadcast_to_tokens
from slime.config.flags import flag
from slime.methods import Method


@dataclass(frozen=True)
class MyMethodFlags:
    """Flags of this method; each is a command-line flag with its default and help text."""

    my_method_scale: float = flag(1.0, "multiply every advantage by this", gt=0)
    my_method_baseline: Literal["none", "mean"] = flag("none", "subtract nothing, or the step's mean reward")


class MyMethod(Method):
    """Reward (minus the baseline) on every trained token of the turn."""

    name = "my-method"
    Flags = MyMethodFlags

    def compute_advantages(self, samples):
        """Set ``advantages`` of every sample; returns ``(samples, metrics)``.

        Raises:
            ValueError: a sample without a reward.
        """
        if any(s.reward is None for s in samples):
            raise ValueError("my-method needs a reward on every sample")
        rewards = [float(s.reward) for s in samples]
        baseline = sum(rewards) / len(rewards) if self.flags.my_method_baseline == "mean" and rewards else 0.0
        for s, r in zip(samples, rewards):
            s.advantages = broadcast_to_tokens(s, self.flags.my_method_scale * (r - baseline))
        return list(samples), {"my_method/baseline": baseline}
