"""The rule-based simulated users on crafted responses, and the interval statistics."""

from __future__ import annotations

import math

import pytest

from openclaw_rl import simulated_user
from openclaw_rl.evaluation.stats import paired_delta, summarize, t_quantile_975, wilson_interval
from openclaw_rl.evaluation.tasks.conversation import ConversationTask, teacher_item
from openclaw_rl.judges.lexical import lexical_verdict
from openclaw_rl.personas import PERSONAS, make_user

PROBLEM = {"id": "gsm8k-1", "question": "Tom has 3 bags with 4 apples each. How many apples does he have?",
           "solution": "He has 3 * 4 = <<3*4=12>>12 apples.\n#### 12", "answer": "12"}
STUDENT_ITEM = {"id": "student-gsm8k-1", "question": PROBLEM["question"], "answer": "12"}


def test_student_rates_a_friendly_correct_answer_5():
    user = make_user("student")
    r = user.rate("Tom has 3 bags and each one holds 4 apples, so you just multiply 3 by 4. That gives 12.",
                  STUDENT_ITEM)
    assert r.score == 5.0 and r.failed == () and r.by == "rules"
    assert "Thanks" in r.reply_to_agent
    assert "Here's a problem from my math homework" in user.opening(STUDENT_ITEM)[-1]["content"]
    assert user.preference in user.opening(STUDENT_ITEM)[-1]["content"]


@pytest.mark.parametrize("reply,failed", [
    ("Tom has 3 bags of 4 apples, so 3 times 4 makes 13.", ["correct"]),
    ("**Answer:** 3 times 4 apples is 12 apples in total for Tom.", ["plain_text"]),
    ("- 3 bags\n- 4 apples each\nSo Tom has 12 apples.", ["plain_text"]),
    ("You multiply \\(3 \\times 4\\) and Tom ends up with 12.", ["plain_text"]),
    ("Certainly! Tom has 3 bags of 4 apples, so he has 12.", ["no_chatbot_phrases"]),
    ("Let's break it down step by step: 3 bags of 4 apples is 12.", ["no_chatbot_phrases"]),
    ("Tom's apples: " + " ".join(str(n) for n in range(100, 230)) + " many, 12.", ["short"]),
    ("**Certainly!** Tom has three bags of four apples, so it is 11.", ["correct", "plain_text", "no_chatbot_phrases"]),
])
def test_student_rules(reply, failed):
    r = make_user("student").rate(reply, STUDENT_ITEM)
    assert list(r.failed) == failed
    assert r.score == 1 + 4 * (4 - len(failed)) / 4
    assert r.reply_to_agent == PERSONAS["student"].corrections[failed[0]]


def test_empty_reply_is_rated_1():
    for name, item in (("student", STUDENT_ITEM), ("teacher", teacher_item(PROBLEM, flawed=False))):
        assert make_user(name).rate("   ", item).score == 1.0


def test_teacher_items_and_rules():
    right = teacher_item(PROBLEM, flawed=False)
    slip = teacher_item(PROBLEM, flawed=True)
    assert right["work"].endswith("So the answer is 12.") and "<<" not in right["work"]
    assert slip["flawed"] and slip["given"] == "14" and "14 apples" in slip["work"] and slip["work"].endswith("14.")
    teacher = make_user("teacher")
    assert "My student's solution:\n" + slip["work"] in teacher.opening(slip)[0]["content"]
    good_right = "Great job! You multiplied 3 bags by 4 apples and got 12, which is correct. Keep it up!"
    assert teacher.rate(good_right, right).score == 5.0
    good_slip = ("Nice setup: multiplying 3 by 4 is the right idea. Check the last step again, 3 times 4 is 12, "
                 "not 14. You are very close, keep going!")
    assert teacher.rate(good_slip, slip).score == 5.0
    assert teacher.rate(good_right, slip).failed == ("addresses_result",)  # praises a wrong answer
    assert "specific" in teacher.rate("Great work, keep practicing and you will do well in this class!", right).failed
    harsh = "This is careless work. You multiplied 3 by 4 and got 12, which is correct, but it is sloppy."
    assert teacher.rate(harsh, right).failed == ("encouraging",)
    assert teacher.rate("Good job, 12 is right.", right).failed == ("comment_length",)


def test_plain_persona_is_the_main_jobs_user():
    plain = make_user("plain")
    for reply in ("Paris is the capital of France.", "- Paris\n- Lyon", "**Paris**", ""):
        assert plain.feedback(reply, {"question": "q"}) == simulated_user.feedback(reply)
        if reply:
            assert (plain.rate(reply, {"question": "q"}).score == 5.0) != simulated_user.violates_preference(reply)
    assert plain.preference == simulated_user.PREFERENCE


@pytest.mark.parametrize("persona", ["student", "teacher", "plain"])
@pytest.mark.parametrize("reply,said", [
    ("Tom has 3 bags, so I think that I think that I think that I think that it is 12.", "repeating"),
    ("Tom has apples, apples, apples, apples, apples, apples, apples, apples: 12.", "repeat"),
    ("Tom has 12 apples \ufffd\ufffd\ufffd\ufffd\ufffd\ufffd apples.", "garbled"),
])
def test_every_persona_rates_a_degenerate_reply_1_and_says_what_is_wrong(persona, reply, said):
    """A repetition loop or garbled text that meets the letter of a preference (the student's
    right final number, plain text) is what a person rejects: rated 1 like an empty reply."""
    user = make_user(persona)
    item = STUDENT_ITEM if persona != "teacher" else teacher_item(PROBLEM, flawed=False)
    r = user.rate(reply, item)
    assert r.score == 1.0 and r.failed == user.checks
    assert said in r.reply_to_agent and r.reply_to_agent == user.feedback(reply, item)
    assert lexical_verdict(r.reply_to_agent, "user") == -1


def test_conversation_items_interleave_student_and_teacher():
    items = ConversationTask().items()
    assert len(items) == 200 and [it["group"] for it in items[:4]] == ["student", "teacher"] * 2
    assert len({it["id"] for it in items}) == 200
    assert sum(it.get("flawed", False) for it in items) == 50


def test_wilson_interval_known_values():
    lo, hi = wilson_interval(5, 10)
    assert lo == pytest.approx(0.2366, abs=1e-4) and hi == pytest.approx(0.7634, abs=1e-4)
    assert wilson_interval(0, 10) == (0.0, pytest.approx(0.2775, abs=1e-4))
    assert wilson_interval(10, 10)[1] == 1.0
    assert wilson_interval(0, 0) == (0.0, 1.0)
    with pytest.raises(ValueError):
        wilson_interval(3, 2)


def test_t_quantiles_and_mean_intervals():
    table = {1: 12.7062, 2: 4.3027, 3: 3.1824, 4: 2.7764, 5: 2.5706, 10: 2.2281, 30: 2.0423, 120: 1.9799}
    for df, t in table.items():
        assert t_quantile_975(df) == pytest.approx(t, abs=5e-4)
    s = summarize([1.0, 5.0, 5.0], "mean", bounds=(1.0, 5.0))
    assert s["value"] == pytest.approx(11 / 3) and s["ci95"] == [1.0, 5.0]  # clipped to the scale
    s = summarize([2.0, 3.0, 4.0], "mean")
    assert s["ci95"][0] == pytest.approx(3 - 4.3027 / math.sqrt(3), abs=1e-3)
    assert summarize([1, 0, 1, 1], "proportion")["value"] == 0.75
    d = paired_delta({"a": 0, "b": 0, "c": 1}, {"a": 1, "b": 1, "c": 1, "d": 0})
    assert d["n"] == 3 and d["delta"] == pytest.approx(2 / 3)
