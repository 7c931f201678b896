"""Turn judges of OPD and Combine for the judge loop (:class:`openclaw_rl.rollout.judge_loop.TurnJudge`).

* :class:`OPDTurnJudge`: the hint judge's votes; an accepted hint makes the turn trainable and
  stores the hint and the teacher prompt ids (rendered once here, where the policy's tokenizer
  lives) in the judgement; a rejected one makes it not trainable.
* :class:`CombineTurnJudge`: the PRM and the hint judge on the same turn, concurrently; the
  branch comes from :func:`openclaw_rl.opd.advantages.dispatch_branch`; the reward is the PRM
  verdict (None when it is 0); trainable unless the branch is ``none``.

Judgement details carry ``hint_accepted``, ``hint``, ``hint_votes``, ``teacher_prompt_ids`` (accepted
only), ``branch`` and, for Combine, the PRM's ``verdict`` / ``votes``.
"""

from __future__ import annotations

import asyncio
from typing import Any

from openclaw_rl.judges.hints import HintJudge
from openclaw_rl.opd.advantages import dispatch_branch
from openclaw_rl.opd.hint_prompt import teacher_prompt_ids
from openclaw_rl.rollout.judge_loop import JudgeResult

__all__ = ["OPDTurnJudge", "CombineTurnJudge"]


async def _hint_details(hint_judge: HintJudge, tokenizer: Any, turn) -> dict:
    j = await hint_judge.judge_turn(turn)
    details = j.to_metadata()
    if j.accepted:
        details["teacher_prompt_ids"] = await asyncio.to_thread(
            teacher_prompt_ids, tokenizer, turn.messages, turn.tools, j.hint, turn.prompt_ids)
    return details


class OPDTurnJudge:
    """OPD: trainable iff the hint judge accepts (see module docstring).

    Args:
        hint_judge: a :class:`~openclaw_rl.judges.hints.HintJudge`.
        tokenizer: the policy's tokenizer (renders the teacher prompt).
    """

    method = "opd"

    def __init__(self, hint_judge: HintJudge, tokenizer: Any):
        self.hint_judge, self.tokenizer = hint_judge, tokenizer

    async def judge(self, turn) -> JudgeResult:
        """Judge one turn; a turn without next state is not trainable."""
        if not turn.next_state:
            return JudgeResult(None, False, {"reason": "no_next_state", "branch": "none"})
        details = await _hint_details(self.hint_judge, self.tokenizer, turn)
        details["branch"] = "opd" if details["hint_accepted"] else "none"
        return JudgeResult(None, details["hint_accepted"], details)


class CombineTurnJudge:
    """Combine: PRM verdict + hint judge, dispatched per the table in :mod:`openclaw_rl.opd.advantages`.

    Args:
        prm: an :class:`openclaw_rl.judges.prm.PRMJudge`.
        hint_judge: a :class:`~openclaw_rl.judges.hints.HintJudge`.
        tokenizer: the policy's tokenizer.
    """

    method = "combine"

    def __init__(self, prm, hint_judge: HintJudge, tokenizer: Any):
        self.prm, self.hint_judge, self.tokenizer = prm, hint_judge, tokenizer

    async def judge(self, turn) -> JudgeResult:
        """Judge one turn with both judges; the reward is the PRM verdict (None for 0)."""
        if not turn.next_state:
            return JudgeResult(None, False, {"reason": "no_next_state", "verdict": 0, "branch": "none"})
        prm, details = await asyncio.gather(self.prm.judge_turn(turn),
                                            _hint_details(self.hint_judge, self.tokenizer, turn))
        details.update(prm.to_metadata())
        branch = dispatch_branch(details["hint_accepted"], prm.verdict)
        details["branch"] = branch
        return JudgeResult(float(prm.verdict) if prm.verdict else None, branch != "none", details)
