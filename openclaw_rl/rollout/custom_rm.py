"""A ``--custom-rm-path`` reward plugin as a turn judge (slime's reward convention).

The plugin is ``async def reward(args, sample, **kwargs) -> float | dict`` (a plain function is
accepted too); ``sample`` is the turn's :class:`slime.sample.Sample` with ``metadata`` holding
``response_text``, ``next_state`` and ``next_state_role``. A dict result must hold ``reward``.
"""

from __future__ import annotations

import inspect
import math

from openclaw_rl.capture.store import TurnRecord
from openclaw_rl.rollout.judge_loop import JudgeResult
from openclaw_rl.rollout.samples import turn_to_sample
from slime.plugins import check_parameters, load_function


class CustomRewardJudge:
    """Judge turns with a user reward function.

    Args:
        spec: ``--custom-rm-path`` value (``file.py:fn``, ``file.py`` -> ``reward``, or ``pkg.mod.fn``).
        args: the run's config, passed through as the plugin's ``args``.

    Raises:
        slime.plugins.PluginError: at start-up, for a missing file/function or wrong parameters.
    """

    method = "custom_rm"

    def __init__(self, spec: str, args):
        self.fn = load_function(spec, "--custom-rm-path", default_name="reward")
        check_parameters(self.fn, "--custom-rm-path", ("args", "sample"))
        self.args = args

    async def judge(self, turn: TurnRecord) -> JudgeResult:
        """Score one turn; raises ValueError for a non-finite or malformed reward."""
        sample = turn_to_sample(turn, None, True)
        sample.metadata.update(response_text=turn.response_text, next_state=turn.next_state,
                               messages=turn.messages)
        out = self.fn(self.args, sample)
        if inspect.isawaitable(out):
            out = await out
        details = dict(out) if isinstance(out, dict) else {}
        value = details.get("reward") if isinstance(out, dict) else out
        if not isinstance(value, (int, float)) or not math.isfinite(float(value)):
            raise ValueError(f"--custom-rm-path returned {out!r}; expected a finite float or {{'reward': float}}")
        return JudgeResult(float(value), True, details)
