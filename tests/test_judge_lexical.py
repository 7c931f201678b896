"""The lexical next-state PRM, the hybrid mode's routing, the extractive hint and the case file:
exact tests with deterministic judges (no model)."""

from __future__ import annotations

import asyncio

import pytest

from openclaw_rl.capture.store import TurnRecord
from openclaw_rl.judges.backends import BackendScore, JudgeBackend
from openclaw_rl.judges.cases import DEFAULT_CASES_PATH, load_cases
from openclaw_rl.judges.hint_extract import ExtractiveHintBackend, extract_hint
from openclaw_rl.judges.hints import HintJudge
from openclaw_rl.judges.lexical import HybridBackend, LexicalBackend, lexical_cues, lexical_verdict
from openclaw_rl.judges.prm import PRMJudge
from openclaw_rl.judges.prompts import JudgeInput
from openclaw_rl.preferences import PREFERENCES

CASES = load_cases()


def test_case_file_covers_the_main_jobs_feedback_styles():
    states = {c.next_state for c in CASES}
    for pref in PREFERENCES.values():
        assert set(pref.corrections) <= states, pref.name
        assert set(pref.praises) <= states, pref.name
    assert len(CASES) >= 60 and len([c for c in CASES if "original" in c.tags]) == 12
    assert {c.role for c in CASES} == {"user", "tool"} and {c.expected for c in CASES} == {1, -1, 0}


@pytest.mark.parametrize("name", sorted(PREFERENCES))
def test_lexical_judges_every_preference_phrasing(name):
    pref = PREFERENCES[name]
    assert [lexical_verdict(t, "user") for t in pref.corrections] == [-1] * len(pref.corrections)
    assert [lexical_verdict(t, "user") for t in pref.praises] == [1] * len(pref.praises)


def test_lexical_on_the_case_set():
    styles = [c for c in CASES if {"preference", "simulated_user"} & set(c.tags)]
    assert len(styles) >= 40 and all(lexical_verdict(c.next_state, c.role) == c.expected for c in styles)
    wrong = sorted(c.name for c in CASES if lexical_verdict(c.next_state, c.role) != c.expected)
    # the known misses: a bare new question and a verbatim repeat look alike without cues, and
    # the cases written after the rules (tag unseen) that the rules do not cover
    assert {"new_topic_plain", "repeat_verbatim"} <= set(wrong)
    assert all(n in ("new_topic_plain", "repeat_verbatim") or "unseen" in next(c.tags for c in CASES if c.name == n)
               for n in wrong)
    seen = [c for c in CASES if "unseen" not in c.tags]
    assert sum(lexical_verdict(c.next_state, c.role) == c.expected for c in seen) == len(seen) - 2


@pytest.mark.parametrize("text, role, expected", [
    ("No problem, thanks!", "user", 1), ("Thanks, but that's wrong.", "user", -1),
    ("That's not bad at all, thank you.", "user", 1), ("No worries, that's perfect.", "user", 1),
    ("Thanks anyway.", "user", -1), ("Thanks again!", "user", 1), ("Perfect, but make it shorter.", "user", -1),
    ("ok", "user", 0), ("Why?", "user", 0), ("", "user", 0), (None, "user", 0),
    ("Great. Now convert 10 kg to pounds.", "user", 1), ("Again: what is 2+2?", "user", -1),
    ("That\u2019s not what I asked.", "user", -1), ("Nope.", "user", -1),
    ("[tool call_1] Build succeeded. 0 errors, 2 warnings.", "tool", 1),
    ("[tool c] exit code 0", "tool", 1), ("[tool c] exit code 2", "tool", -1),
    ("[tool c] Traceback (most recent call last):\nKeyError: 'x'", "tool", -1),
    ("[tool c] HTTP/1.1 503 Service Unavailable", "tool", -1), ('{"status": 404}', "tool", -1),
    ("[tool c] (no output)", "tool", 0), ("[tool c] ", "tool", 0), ('{"results": []}', "tool", 0),
    ("[tool c] Meeting at 3pm.", "tool", 1),
    ("You've got it backwards.", "user", -1), ("Got it, thanks.", "user", 1), ("Not a problem, thanks!", "user", 1),
    ("Close, but it's 3.22 km.", "user", -1), ("I'm in Paris, not Rome.", "user", -1),
    ("Ok, and how do I activate it?", "user", 1), ('[tool c] {"job_id": 9, "state": "queued"}', "tool", 0),
    ("Thanks!", None, 1),  # an unknown role reads as a user message
])
def test_lexical_rules_and_traps(text, role, expected):
    assert lexical_verdict(text, role) == expected


def test_lexical_cues_explain_the_verdict():
    v = lexical_cues("Thanks, but that's wrong.", "user")
    assert v.verdict == -1 and "wrong" in v.negative and "thanks" in v.positive
    assert lexical_cues("(no output)", "tool").empty


def test_lexical_backend_reads_only_the_next_state():
    backend = LexicalBackend()
    a = JudgeInput("Here is a list:\n- a\n- b", "Please redo it.", "user", None, "Answer without lists.")
    b = JudgeInput("Plain prose.", "Please redo it.", "user",
                   [{"function": {"name": "read", "arguments": "{}"}}], "Something else entirely.")
    ra, rb = (asyncio.run(backend.score_input(x, 3)) for x in (a, b))
    assert ra == rb and ra.votes == [-1, -1, -1] and ra.probs == {1: 0.0, -1: 1.0, 0: 0.0}
    with pytest.raises(ValueError, match="JudgeInput"):
        asyncio.run(backend.score([{"role": "user", "content": "x"}], 1))
    with pytest.raises(ValueError):
        asyncio.run(backend.score_input(a, 0))


def _turn(next_state, role="user") -> TurnRecord:
    rec = TurnRecord(session_id="s", turn_type="main", messages=[{"role": "user", "content": "Q"}], prompt_text="p",
                     prompt_ids=[1], response_ids=[2], response_logprobs=[-0.1], response_text="A",
                     finish_reason="stop", weight_version=0)
    rec.next_state, rec.next_state_role = next_state, role
    return rec


def test_prm_judge_records_the_mode_that_ran():
    judge = PRMJudge(LexicalBackend(), majority_vote_n=3, threshold=0.5, num_workers=1)
    j = asyncio.run(judge.judge_turn(_turn("No, that's not what I asked. Start with 'Sure!'.")))
    meta = j.to_metadata()
    assert (j.verdict, meta["prm_mode"], meta["backend"], meta["invalid"]) == (-1, "lexical", "lexical", 0)
    many = asyncio.run(judge.judge_many([_turn("Perfect, thank you!"), _turn("[tool c] Error: x", "tool")]))
    assert [m.verdict for m in many] == [1, -1]


class _Recording(JudgeBackend):
    """A deterministic fallback that records what it was asked (forces the hybrid's model path)."""

    name, mode = "recording", "recording"

    def __init__(self):
        self.seen = []

    async def score(self, messages, n):
        raise AssertionError("hybrid must call score_input")

    async def score_input(self, inp, n, render=None):
        self.seen.append(inp.next_state)
        return BackendScore(votes=[0] * n, probs={1: 0.2, -1: 0.2, 0: 0.6}, texts=["model"] * n)


def test_hybrid_routes_cue_less_user_states_to_the_model():
    fallback = _Recording()
    judge = PRMJudge(HybridBackend(fallback), majority_vote_n=1, threshold=0.5, num_workers=1)
    states = [("Thanks, that works.", "user", 1), ("Please redo it.", "user", -1), ("[tool c] ok", "tool", 1),
              ("[tool c] (no output)", "tool", 0), ("How tall is Mount Fuji?", "user", 0), ("I see.", "user", 0)]
    verdicts = [asyncio.run(judge.judge_turn(_turn(s, r))).verdict for s, r, _ in states]
    assert verdicts == [v for _, _, v in states]
    assert fallback.seen == ["How tall is Mount Fuji?", "I see."]
    assert asyncio.run(judge.judge_turn(_turn("I see."))).mode == "hybrid"


def test_extractive_hint_takes_the_corrective_sentences():
    assert extract_hint("No, that's not what I asked. Start your answer with 'Sure!'.", "user") == \
        "Start your answer with 'Sure!'."
    assert extract_hint("That's not right: that was far more than 20 words.", "user") == \
        "That was far more than 20 words."
    assert extract_hint("Hmm, you forgot what I asked for. Answer in French, please. Please try again.", "user") == \
        "Answer in French, please."
    assert extract_hint("No, answer in French please.", "user") == "Answer in French please."
    assert extract_hint("Still wrong.", "user") is None  # a failure without an instruction
    assert extract_hint("Thanks, but that's wrong.", "user") is None
    assert extract_hint("Thanks, that's exactly what I wanted.", "user") is None  # not a correction
    assert extract_hint("[tool c] Traceback (most recent call last):\n  File x\nNameError: name 'y' is not defined",
                        "tool") == ("The previous tool call failed: NameError: name 'y' is not defined. "
                                    "Correct the call before using its result.")
    assert extract_hint("[tool c] README.md", "tool") is None


def test_extractive_hint_judge_on_the_case_set():
    judge = HintJudge(ExtractiveHintBackend(), majority_vote_n=2)
    scored = [c for c in CASES if c.expected == -1 and c.role == "user" and c.hint_terms]
    named = [asyncio.run(judge.judge_input(c.judge_input())) for c in scored]
    assert all(j.mode == "extractive" and j.to_metadata()["hint_mode"] == "extractive" for j in named)
    share = sum(c.names_preference(j.hint) for c, j in zip(scored, named)) / len(scored)
    assert share >= 0.95  # every preference correction names the preference; a persona's "check the numbers" does not
    for pref in PREFERENCES.values():  # each correction phrasing yields a hint that states the preference
        for text in pref.corrections:
            j = asyncio.run(judge.judge_input(JudgeInput("r", text, "user")))
            assert j.accepted and j.hint and j.hint.lower() in text.lower(), (pref.name, text, j.hint)
    praise = [asyncio.run(judge.judge_input(c.judge_input())) for c in CASES if c.expected == 1]
    assert not any(j.accepted for j in praise)


def test_default_cases_path_is_shipped_in_the_package():
    assert DEFAULT_CASES_PATH.is_file() and DEFAULT_CASES_PATH.parent.name == "data"
