"""slime.guards.admission step 4 (``--rejected-repeat-credit``): a reply the judge rejected that repeats
one word is trained as a negative example only from the word's second use on, so that a -1 for
"Alex ... Alex ... Alex" does not push down the first "Alex" the same user asked for. Real Qwen
tokenizer and samples; ``whole`` is the control (every token trained, as before)."""

from __future__ import annotations

import pytest

from slime.guards.admission import AdmissionPolicy, admit
from slime.config.arguments import parse_args
from slime.trainer.backend import TrainingBackend
from slime.guards.behaviour import repeat_onset
from slime.trainer.models import load_tokenizer
from slime.record.sample import Sample

TINY_QWEN3 = "builtin:tiny-qwen3"
SPAM = "Alex, boil the egg for nine minutes. Then, Alex, cool it in water, Alex!"


@pytest.fixture(scope="module")
def tokenizer():
    """The Qwen vocabulary of ``builtin:tiny-qwen3``."""
    return load_tokenizer(TINY_QWEN3)


@pytest.fixture(scope="module")
def backend():
    """The trainer's backend on ``builtin:tiny-qwen3`` (admit reads its tokenizer)."""
    return TrainingBackend(parse_args(["--rollout-batch-size", "3", "--model-path", TINY_QWEN3]))


def _sample(tokenizer, reply: str, reward: float) -> Sample:
    prompt = tokenizer.encode("<|im_start|>user\nHow do I boil an egg?<|im_end|>\n<|im_start|>assistant\n",
                              add_special_tokens=False)
    ids = tokenizer.encode(reply, add_special_tokens=False) + [tokenizer.convert_tokens_to_ids("<|im_end|>")]
    return Sample(tokens=prompt + ids, response_length=len(ids), rollout_log_probs=[-1.0] * len(ids),
                  advantages=[reward] * len(ids), reward=reward, turn_id=f"t{reward}", weight_version=0)


def test_the_onset_is_the_second_use_of_the_word_said_three_times():
    word, offset = repeat_onset(SPAM)
    assert word == "alex" and SPAM[offset:].startswith("Alex, cool")
    assert repeat_onset("Alex's egg: boil it, Alex, then alex's done.")[0] == "alex"  # possessive, any case
    assert repeat_onset("Alex, boil the egg, Alex.") is None  # twice is not a repeat
    assert repeat_onset("Boil the egg for nine minutes.") is None
    call = '<tool_call>{"name": "egg", "arguments": {"egg": "egg"}}</tool_call>'
    assert repeat_onset(f"Egg time. {call} The egg is done.") is None  # words inside tool calls do not count


def test_a_rejected_repeating_reply_is_trained_from_the_repeat_on(tokenizer, backend):
    rejected, rewarded = _sample(tokenizer, SPAM, -1.0), _sample(tokenizer, SPAM, 1.0)
    plain = _sample(tokenizer, "Boil the egg for nine minutes, then cool it.", -1.0)
    out, metrics = admit([rejected, rewarded, plain], AdmissionPolicy(), backend)
    assert metrics["samples/rejected_repeat_onset"] == 1
    mask, adv = out[0].loss_mask, out[0].advantages
    first = mask.index(1)
    assert first > 0 and all(mask[first:]) and not any(mask[:first])
    assert tokenizer.decode(out[0].response_tokens[first:]).startswith(" Alex, cool")
    assert set(adv[:first]) == {0.0} and set(adv[first:]) == {-1.0}
    # a rewarded reply and a rejected one that repeats nothing keep every token
    assert out[1].num_loss_tokens == out[1].response_length
    assert out[2].num_loss_tokens == out[2].response_length


def test_whole_trains_every_token(tokenizer, backend):
    out, metrics = admit([_sample(tokenizer, SPAM, -1.0)], AdmissionPolicy(rejected_repeat_credit="whole"),
                         backend)
    assert metrics["samples/rejected_repeat_onset"] == 0 and out[0].num_loss_tokens == out[0].response_length


def test_the_policy_reads_the_flag():
    base = ["--rollout-batch-size", "1"]
    assert AdmissionPolicy.from_config(parse_args(base), None, False).rejected_repeat_credit == "onset"
    cfg = parse_args(base + ["--rejected-repeat-credit", "whole"])
    assert AdmissionPolicy.from_config(cfg, None, False).rejected_repeat_credit == "whole"

