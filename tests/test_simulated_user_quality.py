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
    ("Alex, \ufffd\ufffd the answer", "rare_char_run", "garbled"),
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


def test_a_reply_cut_by_the_token_budget_is_a_miss_even_when_it_meets_a_length_rule():
    short = PREFERENCES["max-20-words"]
    cut = "Photosynthesis turns sunlight, water and carbon dioxide into sugar and oxygen in the"
    assert short.check(cut) and short.satisfied(cut, "How does photosynthesis work?")
    assert short.quality_problem(cut, "How does photosynthesis work?", cut=True) == "cut_off"
    assert not short.satisfied(cut, "How does photosynthesis work?", cut=True)
    corrections = {short.feedback(cut, key=str(k), cut=True) for k in range(16)}
    assert corrections and all("cut off" in c or "mid-sentence" in c for c in corrections), corrections
    assert all(lexical_verdict(c, "user") == -1 for c in corrections)
    good = "Sure, Alex! Paris is the capital of France."
    assert not ALEX.satisfied(good, cut=True) and ALEX.satisfied(good)


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


def test_a_reply_that_leaves_the_question_is_a_miss_the_user_corrects():
    question = "Watson works a 10-hour shift each day. How many hours does he work in April?"
    small_talk = "Alex, how enjoyable to meet you! A friendly reminder of the helpful side of business."
    assert ALEX.satisfied(small_talk)  # the letter of the preference, and nothing else wrong with the text
    assert ALEX.quality_problem(small_talk, question) == "no_answer"
    assert not ALEX.satisfied(small_talk, question)
    corrections = {ALEX.feedback(small_talk, key=str(k), question=question) for k in range(16)}
    assert all("answer" in c for c in corrections), corrections
    assert all(lexical_verdict(c, "user") == -1 for c in corrections)
    answer = "Alex, Watson works 10 hours a day, so in April he works 300 hours."
    assert ALEX.satisfied(answer, question) and ALEX.feedback(answer, question=question) in ALEX.praises


@pytest.mark.parametrize("reply", [
    "Alex bought 3 dozen donuts for $68 each, which is 3 * 68 = 216 donuts.",  # the problem's character renamed
    "Alex's probability of having the desired outcome is based on assumptions.",
    "Alex: 16 + 25/2 = 45",
    "Dear Suresh, I'm Alex and I'll be your AI assistant today.",
])
def test_the_name_not_spoken_to_the_user_is_a_miss(reply):
    """Learned by a 24-step run (14 of its 21 accepted held-out replies): the name as the answer's
    subject satisfied "contains Alex"; a person asked to be addressed by name does not accept it."""
    assert "Alex" in reply and not ALEX.check(reply) and not ALEX.satisfied(reply)
    corrections = {ALEX.feedback(reply, key=str(k)) for k in range(16)}
    assert corrections <= set(ALEX.corrections)
    assert all(lexical_verdict(c, "user") == -1 for c in corrections)


@pytest.mark.parametrize("reply", ["Alex, Paris is the capital of France.", "Sure, Alex! Paris is the capital.",
                                   "Hi Alex. Paris is the capital.", "Paris is the capital of France, Alex.",
                                   "Thanks for asking, Alex - Paris is the capital."])
def test_the_name_spoken_to_the_user_meets_the_preference(reply):
    assert ALEX.check(reply) and ALEX.satisfied(reply, "What is the capital of France?")
