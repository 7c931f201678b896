"""math_tool reward: upstream ReTool's shaping of wrong answers by tool calls, loaded as a --custom-rm-path plugin."""

import asyncio

import pytest

from openclaw_rl.envs.math_tool.prompt import task_prompt
from openclaw_rl.envs.math_tool.reward import reward, score_answer, tool_calls_of
from slime.plugins.reward import RewardPlugin
from slime.record.sample import Sample

SPEC = "openclaw_rl.envs.math_tool.reward.reward"


def _sample(response: str, label="18", **metadata) -> Sample:
    return Sample(tokens=[1, 2, 3, 4], response_length=2, rollout_log_probs=[-0.5, -0.5], prompt=task_prompt("q?"),
                  response=response, label=label, metadata=dict(metadata))


@pytest.mark.parametrize("calls, expected", [
    (0, -1.1), (1, -1.05), (2, -1.0), (3, -0.95), (4, -0.9), (8, -0.7), (9, -0.65), (10, -0.6), (11, -0.6), (50, -0.6),
])
def test_wrong_answers_follow_upstreams_formula(calls, expected):
    # upstream: score = min(-0.6, -1 + (n - 2) / 2 * 0.1)
    assert score_answer(r"\boxed{17}", "18", calls)["reward"] == pytest.approx(expected)
    assert score_answer("no answer at all", "18", calls)["reward"] == pytest.approx(expected)
    assert score_answer(r"\boxed{17}", "18", calls)["reward"] == pytest.approx(min(-0.6, -1 + (calls - 2) / 2 * 0.1))


@pytest.mark.parametrize("calls", [0, 1, 5, 30])
def test_a_correct_answer_scores_one_whatever_the_calls(calls):
    out = score_answer(r"It is \boxed{18}.", "18", calls)
    assert out == {"reward": 1.0, "correct": True, "pred": "18", "tool_calls": calls}


def test_negative_tool_calls_are_refused():
    with pytest.raises(ValueError):
        score_answer(r"\boxed{1}", "1", -1)


def test_the_plugin_loads_and_scores_samples_through_the_repo_loader():
    plugin = RewardPlugin(SPEC)
    assert plugin.convention == "slime"
    value, details = asyncio.run(plugin.score_one(_sample(r"...\boxed{18}", tool_calls=3)))
    assert value == 1.0 and details["correct"] is True
    value, details = asyncio.run(plugin.score_one(_sample(r"...\boxed{\$18.00}", tool_calls=0)))
    assert value == 1.0
    value, details = asyncio.run(plugin.score_one(_sample(r"...\boxed{19}", tool_calls=4)))
    assert value == pytest.approx(-0.9) and details["pred"] == "19" and details["tool_calls"] == 4


def test_the_prompts_example_box_is_not_the_answer():
    # the task text shows \boxed{42} as an example; only the response is read
    assert asyncio.run(reward(None, _sample("I do not know.", label="42")))["reward"] == pytest.approx(-1.1)


def test_tool_calls_come_from_metadata_else_from_interpreter_blocks():
    response = ('<tool_call>{"name": "code_interpreter", "arguments": {"code": "print(1)"}}</tool_call>'
                "<interpreter>\n1\n</interpreter>" * 3 + r"\boxed{2}")
    assert tool_calls_of(_sample(response)) == 3
    assert tool_calls_of(_sample(response, tool_calls=5)) == 5
    assert asyncio.run(reward(None, _sample(response)))["reward"] == pytest.approx(-0.95)
    with pytest.raises(ValueError):
        tool_calls_of(_sample(response, tool_calls=-2))
    with pytest.raises(ValueError):
        tool_calls_of(_sample(response, tool_calls="3"))


def test_a_sample_without_label_is_an_error():
    with pytest.raises(ValueError, match="no label"):
        asyncio.run(reward(None, _sample(r"\boxed{1}", label=None)))
