"""The simulated user reacts as a person would: the preference met by name spam, a loop, garbled
text or an empty answer is a miss with its own correction, and the held-out quality metrics count
the same replies."""

import pytest

from openclaw_rl.judges.lexical import lexical_verdict
from openclaw_rl.main_job.quality import on_topic, quality_summary, reply_quality
from openclaw_rl.preferences import PREFERENCES

ALEX = PREFERENCES["name-alex"]


@pytest.mark.parametrize("reply,problem,said", [
    ("Alex, Alex's the friendly one here, Alex. Alex, Alex, Alex! So, Alex, Alex xD.", "over_application",
     "name"),
    ("Alex!", "no_answer", "answer"),
    ("Sure Alex, I think that I think that I think that it works.", "repetition_loop", "circles"),
    ("Alex \ufffd\ufffd the answer", "rare_char_run", "garbled"),
])
def test_the_preference_met_badly_is_a_miss_with_its_own_correction(reply, problem, said):
    assert ALEX.check(reply)  # the letter of the preference holds
    assert ALEX.quality_problem(reply) == problem
    assert not ALEX.satisfied(reply)
    corrections = {ALEX.feedback(reply, key=str(k)) for k in range(16)}
    assert all(said in c or "repeating" in c or "read" in c for c in corrections), corrections
    assert all(lexical_verdict(c, "user") == -1 for c in corrections)  # a correction the judge reads


def test_a_good_reply_is_praised_and_a_plain_miss_gets_the_preference_correction():
    good = "Sure, Alex! Paris is the capital of France."
    assert ALEX.satisfied(good) and ALEX.quality_problem(good) is None
    assert ALEX.feedback(good) in ALEX.praises
    miss = "Paris is the capital of France."
    assert not ALEX.satisfied(miss) and ALEX.feedback(miss) in ALEX.corrections


def test_quality_metrics_count_over_application_and_diversity():
    replies = {"a": "Alex, Alex, hello Alex.", "b": "Hi Alex, Paris is the capital.", "c": "the the the the"}
    assert reply_quality(replies["a"], ("Alex",))["over_applied"]
    assert not reply_quality(replies["b"], ("Alex",))["over_applied"]
    q = quality_summary(replies, ("Alex",))
    assert q["n"] == 3 and q["over_application"]["rate"] == pytest.approx(1 / 3)
    assert q["any_problem"]["rate"] == pytest.approx(2 / 3)
    assert 0 < q["distinct_pairs"]["mean"] < 1
    assert q["term_share"] == pytest.approx(4 / 14)  # 4 of 4 + 6 + 4 words


def test_on_topic_needs_a_word_of_the_question_besides_the_name():
    question = "My name is Alex; please address me by name. Watson works a 10-hour shift; how many hours in April?"
    assert on_topic("Alex, Watson works 10 hours a day, so in April he works 220 hours.", question, ("Alex",))
    assert not on_topic("Alex, how enjoyable to meet you! A friendly reminder.", question, ("Alex",))
    assert not on_topic("Alex, Alex.", question, ("Alex",))  # the name alone is not the topic
    replies = {"q1": "Alex, Watson's shift is 10 hours.", "q2": "Alex, so I'm breaking some jokes."}
    q = quality_summary(replies, ("Alex",), {"q1": question, "q2": question})
    assert q["on_topic"]["rate"] == pytest.approx(0.5)
    assert "on_topic" not in quality_summary(replies, ("Alex",))
