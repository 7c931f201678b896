"""Binary RL PRM judge: verdict parsing, majority voting, local and OpenAI-endpoint backends."""

from __future__ import annotations

import asyncio
import math

import pytest

from openclaw_rl.capture.store import TurnRecord
from openclaw_rl.judges.backends import BackendScore, JudgeBackend, LocalJudgeBackend, OpenAIJudgeBackend
from openclaw_rl.judges.eval_cases import CASES
from openclaw_rl.judges.prm import PRMJudge
from openclaw_rl.judges.prompts import build_judge_messages, judge_messages_for_turn, parse_verdict
from openclaw_rl.judges.voting import majority_vote
from tests.support.server import running_server


def _turn(next_state="Thanks!", role="user", **kw) -> TurnRecord:
    base = dict(session_id="s", turn_type="main",
                messages=[{"role": "user", "content": "What is 2+2?"}], prompt_text="p",
                prompt_ids=[1], response_ids=[2], response_logprobs=[-0.1],
                response_text="2+2 is 4.", finish_reason="stop", weight_version=0)
    base.update(kw)
    rec = TurnRecord(**base)
    rec.next_state, rec.next_state_role = next_state, role
    return rec


@pytest.mark.parametrize("text, expected", [
    ("Score: 1", 1), ("Score: -1", -1), ("Score: 0", 0), ("score: +1", 1),
    ("The user thanked the assistant.\nScore: 1", 1), ("**Score:** -1", -1), ("Score = 0.", 0),
    ("\\boxed{1}", 1), ("I think \\boxed{-1} is right", -1), ("\\boxed{+1}", 1),
    ("Score: 1 ... on second thought Score: -1", -1), ("Score: -1\nFinal: \\boxed{0}", 0),
    ("-1", -1), (" 1 ", 1), ("Score: 7", None), ("Score: 10", None), ("I am not sure.", None),
    ("", None), (None, None), ("The answer has 3 parts", None), ("Score: maybe", None),
    ("\\boxed{\\text{-1}}", -1), ("\\boxed{{0}}", 0), ("Verdict: -1", -1), ("Reasoning first.\n**-1**", -1),
    ("The user moved on.\n+1.", 1), ("It is fine.\n2", None), ("Final answer: \\boxed{+1}", 1),
])
def test_parse_verdict(text, expected):
    assert parse_verdict(text) == expected


def test_majority_vote_threshold_ties_and_invalid():
    r = majority_vote([1, 1, -1], 0.5)
    assert (r.verdict, r.counts, r.n_valid, r.n_invalid) == (1, {1: 2, -1: 1, 0: 0}, 3, 0)
    assert majority_vote([1, 1, -1], 0.7).verdict == 0  # 2/3 < 0.7
    assert majority_vote([1, -1], 0.5).verdict == 0  # tie
    assert majority_vote([1, -1, 0, None], 0.0).verdict == 0  # three-way tie
    r = majority_vote([None, None, -1], 0.5)  # invalid votes do not dilute the fraction
    assert (r.verdict, r.n_valid, r.n_invalid) == (-1, 1, 2)
    r = majority_vote([None, None, None], 0.5)
    assert (r.verdict, r.n_valid, r.n_invalid) == (0, 0, 3)
    assert majority_vote([], 0.5).verdict == 0
    assert majority_vote([0, 0, 1], 0.5).verdict == 0
    with pytest.raises(ValueError):
        majority_vote([2], 0.5)
    with pytest.raises(ValueError):
        majority_vote([1], 1.5)


def test_judge_messages_show_output_tool_calls_and_next_state_role():
    calls = [{"type": "function", "function": {"name": "read", "arguments": '{"path": "a.txt"}'}}]
    msgs = build_judge_messages("<think>hidden</think><tool_call>\n{}\n</tool_call>", "[tool c1] Error: no file",
                                "tool", calls, "read a.txt")
    body = msgs[-1]["content"]
    assert 'read({"path": "a.txt"})' in body and "a tool result" in body and "Error: no file" in body
    assert "hidden" not in body and "<tool_call>" not in body and "Score: -1" in body
    body = judge_messages_for_turn(_turn())[-1]["content"]
    assert "What is 2+2?" in body and "2+2 is 4." in body and "the user's reply" in body
    with pytest.raises(ValueError, match="no next state"):
        judge_messages_for_turn(_turn(next_state=None))


class _FakeBackend(JudgeBackend):
    name = "fake"

    def __init__(self, votes):
        self.votes, self.active, self.peak = votes, 0, 0

    async def score(self, messages, n):
        self.active += 1
        self.peak = max(self.peak, self.active)
        await asyncio.sleep(0.01)
        self.active -= 1
        return BackendScore(votes=self.votes[:n], texts=["x"] * n)


def test_prm_judge_votes_concurrency_and_env(monkeypatch):
    monkeypatch.setenv("MAJORITY_VOTE_N", "3")
    monkeypatch.setenv("MAJORITY_VOTE_THRESHOLD", "0.6")
    backend = _FakeBackend([1, None, -1, 1, 1])
    judge = PRMJudge(backend, num_workers=2)
    assert (judge.n, judge.threshold) == (3, 0.6)
    one = asyncio.run(judge.judge_turn(_turn()))
    assert (one.verdict, one.votes, one.invalid, one.counts[1]) == (0, [1, None, -1], 1, 1)  # 1/2 < 0.6
    assert one.to_metadata()["counts"] == {"1": 1, "-1": 1, "0": 0}
    many = asyncio.run(PRMJudge(backend, majority_vote_n=5, num_workers=2).judge_many([_turn()] * 6))
    assert [j.verdict for j in many] == [1] * 6 and backend.peak == 2
    with pytest.raises(ValueError):
        asyncio.run(judge.judge_many([_turn(), _turn(next_state=None)]))
    with pytest.raises(ValueError):
        PRMJudge(backend, majority_vote_n=0)


@pytest.fixture(scope="module")
def tiny_logprob():
    return LocalJudgeBackend("builtin:tiny-qwen3", mode="logprob", vote="sample", seed=5)


def test_logprob_mode_probabilities_and_determinism(tiny_logprob):
    msgs = CASES[0].messages()
    a = asyncio.run(tiny_logprob.score(msgs, 7))
    b = asyncio.run(tiny_logprob.score(msgs, 7))
    assert math.isclose(sum(a.probs.values()), 1.0, abs_tol=1e-9) and set(a.probs) == {1, -1, 0}
    assert all(p > 0 for p in a.probs.values())
    assert a.probs == b.probs and a.votes == b.votes and len(a.votes) == 7
    assert set(a.votes) <= {1, -1, 0}  # never invalid
    # the cached scoring equals a plain full-sequence forward pass
    import torch

    lp = tiny_logprob.verdict_logprobs(msgs)
    prompt = tiny_logprob._prompt_ids(tiny_logprob.prompt_text(msgs))
    cand = tiny_logprob._cand_ids[-1]
    with torch.inference_mode():
        logits = tiny_logprob.model(input_ids=torch.tensor([prompt + cand])).logits[0]
    ref = torch.log_softmax(logits[len(prompt) - 1:-1].float(), -1).gather(
        -1, torch.tensor(cand)[:, None]).sum()
    assert math.isclose(lp[-1], float(ref), rel_tol=1e-4, abs_tol=1e-4)
    argmax = LocalJudgeBackend(mode="logprob", vote="argmax", model=tiny_logprob.model,
                               tokenizer=tiny_logprob.tokenizer)
    res = asyncio.run(argmax.score(msgs, 3))
    assert res.votes == [max(res.probs, key=res.probs.get)] * 3


def test_generate_mode_mechanics(tiny_logprob):
    gen = LocalJudgeBackend(mode="generate", max_new_tokens=6, model=tiny_logprob.model,
                            tokenizer=tiny_logprob.tokenizer, seed=1)
    judge = PRMJudge(gen, majority_vote_n=2, threshold=0.5)
    j = asyncio.run(judge.judge_turn(_turn()))
    assert len(j.votes) == len(j.texts) == 2 and j.probs is None
    assert j.invalid == sum(v is None for v in j.votes)
    again = asyncio.run(judge.judge_turn(_turn()))
    assert again.texts == j.texts  # seeded from (seed, prompt): reproducible


def test_smollm2_logprob_thanks_beats_correction():
    backend = LocalJudgeBackend("builtin:smollm2-135m", mode="logprob")
    cases = {c.name: c for c in CASES}
    thanks = backend.verdict_probs(cases["thanks"].messages())
    correction = backend.verdict_probs(cases["correction"].messages())
    assert thanks[1] > correction[1]
    assert correction[-1] > thanks[-1]


def test_openai_endpoint_backend_against_real_server(tmp_path):
    with running_server("builtin:tiny-qwen3", tmp_path / "buf", "--default-max-tokens", "8") as srv:
        backend = OpenAIJudgeBackend(srv.base_url, "builtin:tiny-qwen3", api_key=srv.api_key,
                                     max_tokens=8, seed=1, max_retries=0)
        judge = PRMJudge(backend, majority_vote_n=3, threshold=0.5, num_workers=2)

        async def run():
            try:
                return await judge.judge_many([_turn(), _turn("[tool c] Error", "tool")])
            finally:
                await judge.aclose()

        results = asyncio.run(run())
    for j in results:
        assert len(j.votes) == len(j.texts) == 3
        assert j.invalid == sum(v is None for v in j.votes)
        assert j.invalid + sum(j.counts.values()) == 3
        assert j.invalid == 3 and j.verdict == 0  # a random model does not write verdicts
