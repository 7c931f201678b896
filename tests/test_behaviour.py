"""The behaviour checks shared by the promotion gate, the collapse guard and the simulated user."""

import pytest

from slime.guards.behaviour import Problem, behaviour_problems, distinct_pairs, over_applied_word

CLEAN = [
    "Sure, Alex! The capital of France is Paris, a city known for its art and food.",
    "The answer is 12. First, 3 + 4 = 7, then 7 + 5 = 12. So the answer is 12.",
    "Hello Alex, here is a short plan: wake up early, drink water, and take a walk...",
    "Das Ergebnis ist 42, weil 6 mal 7 gleich 42 ist.",
    "用Python写一个函数，返回Δx的值；naïve café, São Paulo, Łódź, μm und Ωs.",
    "Столица Франции - Париж (Paris), PDF-файл готов.",
    "ใช้Pythonดีไหม ប្រើPythonល្អ Googleपर खोजें, JSONа нет, ובGitHub, Xin chào, Türkçe, Łódź.",
    '<tool_call>{"name": "ls", "arguments": {}}</tool_call>',
]


@pytest.mark.parametrize("text", CLEAN)
def test_ordinary_replies_have_no_problem(text):
    assert behaviour_problems(text, ("Alex",)) == {}


@pytest.mark.parametrize("text,problem", [
    ("Alex, Alex's the friendly one here, Alex. Alex, Alex, Alex! So, Alex, Alex xD.", Problem.OVER_APPLICATION),
    ("Alex responds grammatically incorrect abouterved aside. Alex: Alex Alex Babby", Problem.OVER_APPLICATION),
    ("I think that I think that I think that it is fine", Problem.REPETITION_LOOP),
    ("the the the the cat", Problem.REPETITION_LOOP),
    ("ḍḍḍḍḍḍḍḍḍḍḍḍ", Problem.RARE_CHAR_RUN),
    ("ok \ufffd fine", Problem.RARE_CHAR_RUN),
    ("wow !!!!!!!!", Problem.RARE_CHAR_RUN),
    # garbage seen in real runs: a Tamil vowel sign and Cyrillic look-alikes inside Latin words
    ('"Mit\u0bc6ravitirin AmazonviravavimāVRiirvivarakamāra debya', Problem.MIXED_SCRIPT),
    ("Daleth or doeth: 2 worsted in wool Shirl, bil, st\u0430r, make.", Problem.MIXED_SCRIPT),
    ('<tool_call>{"x":1}</tool_call> <tool_call>{"x": 1}</tool_call><tool_call>{"x":1}</tool_call>',
     Problem.TOOL_CALL_LOOP),
])
def test_degenerate_replies_are_found(text, problem):
    assert problem in behaviour_problems(text, ("Alex",))


def test_a_requested_word_counts_at_three_uses_any_other_word_needs_a_share():
    text = "Alex, here it is, Alex: the plan for the week is simple and short, Alex, with long walks daily."
    assert over_applied_word(text, ("Alex",)) == "alex"
    assert over_applied_word(text) is None  # 3 of 19 words: not over-used without the request


def test_distinct_pairs():
    assert distinct_pairs("a b c d") == 1.0
    assert distinct_pairs("a b a b a b") == pytest.approx(2 / 5)
    assert distinct_pairs("one") == 1.0
