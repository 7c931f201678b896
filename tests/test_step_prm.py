"""The step PRM judge (openclaw_rl/agentic/step_prm.py): the vote rule, the history window, the
mean of valid votes, the deterministic rule judge, and real generate calls (tiny model, the
embedded SmolLM2, the intercept server as an OpenAI-compatible --prm-url)."""

from __future__ import annotations

import asyncio

import pytest

from openclaw_rl.agentic.step_prm import (BackendVoter, HistoryWindow, ObservationRuleJudge, Step, StepPRM, StepScore,
                                          build_step_messages, build_step_prm, clip_text, parse_step_vote,
                                          render_history, step_score)
from openclaw_rl.judges.backends import LocalJudgeBackend
from openclaw_rl.rollout.flags import OpenClawFlags

TASK = "How many lines does /workspace/data.txt have?"
STEPS = [Step('<tool_call>{"name": "shell_exec", "arguments": {"command": "ls /workspace"}}</tool_call>', "data.txt"),
         Step('<tool_call>{"name": "shell_exec", "arguments": {"command": "wc -l data.txt"}}</tool_call>',
              "wc: data.txt: No such file or directory"),
         Step('<tool_call>{"name": "shell_exec", "arguments": {"command": "wc -l /workspace/data.txt"}}</tool_call>',
              "3 /workspace/data.txt"),
         Step("The file has \\boxed{3} lines.", "")]


@pytest.mark.parametrize("text, vote", [
    ("+1", 1), ("-1", -1), ("1", 1),                 # "1" parses to exactly +1
    ("+1.", 1), ("-1.", -1),                         # one trailing period is punctuation
    ("-1 because the file is missing", None),        # the verdict line must be only the verdict
    ("0", None), ("+2", None), ("1.0", None), ("11", None), ("- 1", None), ("+-1", None),
    ("", None), (None, None), ("   \n  ", None),
    ("The command failed.\n-1", -1), ("-1\nActually it worked.", None),   # the last non-empty line counts
    ("**+1**", 1), ("`-1`", -1), ("\\boxed{+1}", 1), ("\\boxed{-1}.", -1),  # emphasis, upstream's boxed answer
    ("Score: 1", None), ("\\boxed{0}", None),        # the Binary RL format is not a step verdict
])
def test_vote_parsing(text, vote):
    assert parse_step_vote(text) == vote


def test_mean_of_valid_votes_and_zero_when_none():
    # votes +1, -1, +1, invalid, invalid: mean of the three valid = (1 - 1 + 1) / 3
    s = step_score(["+1", "-1", "reasoning\n+1", "0", "maybe"])
    assert s.votes == [1, -1, 1, None, None] and s.score == pytest.approx(1 / 3)
    assert step_score(["0", "", "+2"]) == StepScore(0.0, [None, None, None])
    assert step_score(["-1", "-1"]).score == -1.0


def test_clip_and_history_window():
    # 30 characters, budget 10: first 5, "[... 20 chars omitted ...]", last 5
    assert clip_text("abcdefghijklmnopqrstuvwxyz0123", 10) == "abcde\n[... 20 chars omitted ...]\nz0123"
    assert clip_text("  short  ", 10) == "short"
    steps = [Step(f"act{i}", f"obs{i}") for i in range(8)]
    w = HistoryWindow(head=2, tail=2)
    assert render_history(steps, 0, w) == "(no earlier steps)"
    # k = 4 <= head + tail: all four earlier steps, no marker
    four = render_history(steps, 4, w)
    assert [f"Step {i} action:" in four for i in range(1, 6)] == [True] * 4 + [False] and "omitted" not in four
    # k = 7: steps 1, 2, "... 3 steps omitted ...", steps 6, 7 (0-based 0, 1, 5, 6)
    seven = render_history(steps, 7, w).split("\n\n")
    assert seven[2] == "... 3 steps omitted ..." and len(seven) == 5
    assert seven[0] == "Step 1 action:\nact0\nStep 1 observation:\nobs0" and seven[-1].startswith("Step 7 action:\nact6")
    long = [Step("x" * 100, "y" * 100)]
    text = render_history(long + steps, 1, HistoryWindow(step_chars=20))
    assert "x" * 10 + "\n[... 80 chars omitted ...]\n" + "x" * 10 in text
    with pytest.raises(IndexError):
        render_history(steps, 9, w)
    with pytest.raises(ValueError):
        HistoryWindow(head=-1)


def test_judge_messages_show_task_window_action_and_observation():
    system, user = build_step_messages(TASK, STEPS, 2, HistoryWindow(head=1, tail=0))
    assert system["role"] == "system" and user["role"] == "user"
    body = user["content"]
    assert body.startswith(f"Task:\n{TASK}") and "... 1 steps omitted ..." in body
    assert "Step 1 action:" in body and "Step 2 action:" not in body  # head 1, tail 0 of steps[:2]
    assert f"Current step (3):\nStep 3 action:\n{STEPS[2].action}\nStep 3 observation:\n3 /workspace/data.txt" in body
    assert body.rstrip().endswith("exactly +1 or -1.")
    assert "(empty)" in build_step_messages(TASK, STEPS, 3)[1]["content"]  # the final answer has no observation
    with pytest.raises(IndexError):
        build_step_messages(TASK, STEPS, 4)


def test_rule_judge_scores_an_episode_exactly():
    prm = StepPRM(ObservationRuleJudge(), m=3, num_workers=2)
    scores = asyncio.run(prm.score_steps(TASK, STEPS))
    # ls works (+1), wc on the wrong path fails ("No such file", -1), the right wc works (+1),
    # the final answer has no observation (-1); three identical votes each
    assert [s.score for s in scores] == [1.0, -1.0, 1.0, -1.0]
    assert [s.votes for s in scores] == [[1] * 3, [-1] * 3, [1] * 3, [-1] * 3]
    assert scores[1].texts[0] == "rule: observation shows 'No such file'\n-1"
    judge = ObservationRuleJudge()
    assert judge.verdict(Step("", "ok"))[0] == -1 and judge.verdict(Step("x", "Traceback (most recent"))[0] == -1
    assert judge.verdict(Step("run", "exit code 2"))[0] == -1 and judge.verdict(Step("run", "exit code 0"))[0] == 1
    with pytest.raises(ValueError):
        StepPRM(judge, m=0)


def _check_mechanism(scores: list[StepScore], n_steps: int, m: int) -> None:
    assert len(scores) == n_steps
    for s in scores:
        assert len(s.votes) == len(s.texts) == m and all(v in (None, 1, -1) for v in s.votes)
        valid = [v for v in s.votes if v is not None]
        assert s.score == (sum(valid) / len(valid) if valid else 0.0)
        assert s.votes == [parse_step_vote(t) for t in s.texts]


def test_generate_on_the_tiny_model():
    backend = LocalJudgeBackend("builtin:tiny-qwen3", mode="generate", max_new_tokens=4, seed=3)
    prm = StepPRM(BackendVoter(backend), m=2)
    scores = asyncio.run(prm.score_steps(TASK, STEPS[:2]))
    _check_mechanism(scores, 2, 2)
    assert asyncio.run(prm.score_steps(TASK, STEPS[:2])) == scores  # seeded from the prompt: reproducible
    with pytest.raises(ValueError, match="generate-mode or endpoint"):
        BackendVoter(LocalJudgeBackend(mode="logprob", model=backend.model, tokenizer=backend.tokenizer))


@pytest.mark.slow
def test_embedded_model_generates_votes():
    """Stub-free: the embedded SmolLM2-135M samples m answers per step (about a minute on a busy CPU)."""
    flags = OpenClawFlags(prm_model_path="builtin:smollm2-135m", prm_m=3, prm_max_new_tokens=8)
    prm = build_step_prm(flags)
    assert prm.m == 3 and prm.voter.backend.max_new_tokens == 8 and prm.voter.backend.mode == "generate"
    _check_mechanism(asyncio.run(prm.score_steps(TASK, STEPS[1:2])), 1, 3)


def test_endpoint_step_prm_against_the_intercept_server(tiny_server):
    flags = OpenClawFlags(prm_url=tiny_server.base_url, prm_model_name="builtin:tiny-qwen3",
                          prm_api_key=tiny_server.api_key, prm_m=2, prm_max_new_tokens=6, prm_temperature=0.0)
    prm = build_step_prm(flags, max_retries=0)
    assert prm.voter.backend.max_tokens == 6 and prm.voter.backend.temperature == 0.0

    async def run():
        try:
            return await prm.score_steps(TASK, STEPS[:2])
        finally:
            await prm.aclose()

    _check_mechanism(asyncio.run(run()), 2, 2)
    with pytest.raises(ValueError, match="--prm-temperature must be > 0"):
        build_step_prm(OpenClawFlags(prm_temperature=0.0))
