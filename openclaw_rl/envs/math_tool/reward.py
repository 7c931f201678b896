"""toolcall-rl's outcome reward: answer correctness, with upstream's tool-use shaping of wrong answers.

Upstream (Gen-Verse/OpenClaw-RL, ``toolcall-rl/generate_with_retool.py``, ``reward_func``; itself
after verl's ReTool recipe) scores the response with slime's ``math_dapo`` ``compute_score``
(``strict_box_verify=True``: +1 correct, -1 wrong or no box) and then, for a wrong answer only::

    tool_call_reward = (num_turns - 2) / 2 * 0.1          # num_turns = the episode's tool calls
    score = min(-0.6, score + tool_call_reward)

so with ``n`` tool calls a wrong answer scores ``min(-0.6, -1.1 + 0.05 * n)``: -1.1 with no call,
-1.0 with two, -0.6 from ten calls on; a correct answer scores 1.0 whatever the calls.
:func:`score_answer` is that formula, with our answer check (:mod:`.answer`: the last
``\\boxed{}`` of the response outside ``<tool_call>`` / ``<interpreter>`` blocks, numeric
comparison) in place of ``math_dapo`` (which reads the last 300 characters of prompt + response
and compares normalised strings; our prompt shows ``\\boxed{42}`` as an example, so only the
response is read).

Upstream also adds ``--prm-step-coef`` x the mean step-PRM score here; in this project the
coefficient is applied in one place only, the ``step_wise`` advantage estimator, so this reward is
the outcome alone.

Tool-call count: ``sample.metadata["tool_calls"]``, set by the agent loop to the number of tool
calls that ran code (observations that begin with ``<interpreter>``; :mod:`.env`). When the key is
absent it is the number of ``<interpreter>`` blocks in ``sample.response``.
"""

from __future__ import annotations

from typing import Any

from openclaw_rl.envs.math_tool.answer import is_correct

__all__ = ["CORRECT", "TOOL_BONUS_PER_CALL", "WRONG", "WRONG_CAP", "reward", "score_answer", "tool_calls_of"]

CORRECT = 1.0
WRONG = -1.0
#: upstream: (n - 2) / 2 * 0.1 = 0.05 per call, offset by two calls
TOOL_BONUS_PER_CALL = 0.05
TOOL_BONUS_OFFSET_CALLS = 2
#: upstream: a wrong answer never scores above -0.6
WRONG_CAP = -0.6


def score_answer(response: str, label: str, tool_calls: int = 0) -> dict[str, Any]:
    """Score a final response against ``label`` (see the module doc).

    Args:
        response: the agent's text (the whole response or just the last turn; the last
            ``\\boxed{}`` outside ``<tool_call>`` / ``<interpreter>`` blocks is the answer).
        label: the reference answer (``"69"``, ``"3.5"``, ``"7/2"``).
        tool_calls: tool calls of the episode (>= 0).

    Returns:
        ``{"reward": float, "correct": bool, "pred": str | None, "tool_calls": int}``.

    Raises:
        ValueError: ``tool_calls`` is negative.
    """
    if tool_calls < 0:
        raise ValueError(f"tool_calls must be >= 0, got {tool_calls}")
    correct, pred = is_correct(response or "", str(label))
    if correct:
        value = CORRECT
    else:
        value = min(WRONG_CAP, WRONG + (tool_calls - TOOL_BONUS_OFFSET_CALLS) * TOOL_BONUS_PER_CALL)
    return {"reward": float(round(value, 10)), "correct": correct, "pred": pred, "tool_calls": tool_calls}


def tool_calls_of(sample: Any) -> int:
    """``sample.metadata["tool_calls"]``, else the ``<interpreter>`` blocks in ``sample.response``.

    Raises:
        ValueError: the metadata value is not a non-negative integer.
    """
    md = getattr(sample, "metadata", None) or {}
    if "tool_calls" in md:
        n = md["tool_calls"]
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise ValueError(f"metadata['tool_calls'] must be a non-negative int, got {n!r}")
        return n
    return (getattr(sample, "response", None) or "").count("<interpreter>")


async def reward(args: Any, sample: Any) -> dict[str, Any]:
    """``--custom-rm-path openclaw_rl.envs.math_tool.reward.reward``: slime's per-sample form
    (:class:`slime.plugins.hooks.RewardFunction`).

    Args:
        args: the run's arguments (unused).
        sample: a :class:`slime.record.sample.Sample` with ``response`` and ``label``.

    Returns:
        :func:`score_answer`'s dict (``"reward"`` plus details kept with the sample).

    Raises:
        ValueError: the sample has no label, or a bad ``tool_calls`` value.
    """
    label = getattr(sample, "label", None)
    if label is None or str(label).strip() == "":
        raise ValueError("math_tool reward: the sample has no label (the dataset row's 'label')")
    return score_answer(getattr(sample, "response", None) or "", str(label), tool_calls_of(sample))
