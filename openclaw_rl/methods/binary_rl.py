"""Binary RL: a PRM votes +1 / -1 / 0 on each main turn from its next state; the verdict is
broadcast over the turn's tokens (slime's ``broadcast`` estimator); PPO clipped loss.

Registered as ``--advantage-estimator broadcast`` (a specialisation of the core's
:class:`slime.methods.BroadcastMethod` that brings its judge). Turns with verdict 0 or no next
state are counted but not trained.
"""

from __future__ import annotations

from typing import Any

from slime.methods.broadcast import BroadcastMethod

__all__ = ["BinaryRL"]


class BinaryRL(BroadcastMethod):
    """Binary RL (module docstring). Its judge: the PRM (``--prm-*``, ``--majority-vote-*``)."""

    name = "broadcast"

    def build_judge(self, service: Any) -> Any:
        """The PRM turn judge (:func:`openclaw_rl.rollout.turn_judges.build_prm`)."""
        from openclaw_rl.rollout.turn_judges import PRMTurnJudge, build_prm

        return PRMTurnJudge(build_prm(self.cfg))
