"""The promotion gate (slime/guards/promotion.py): the verdict per check, and measuring a real policy."""

from __future__ import annotations

import pytest
import torch

from slime.config.arguments import parse_args
from slime.trainer.backend import TrainingBackend
from slime.guards.promotion import (CanaryReply, GateData, GateMode, GateThresholds, PromotionGate, VersionMeasure,
                             measure_version, sign_test_p)
from slime.record.sample import Sample

TINY_QWEN3 = "builtin:tiny-qwen3"
CLEAN = CanaryReply("Paris is the capital of France.", False, ())
SPAM = CanaryReply("Alex, Alex, Alex, Alex!", False, ("repetition_loop",))


def _measure(logprob=None, nll=None, canary=None) -> VersionMeasure:
    return VersionMeasure(dict(logprob or {}), dict(nll or {}), dict(canary or {}))


def _gate(**kw) -> PromotionGate:
    gate = PromotionGate(GateMode.ENFORCE, GateThresholds(**kw))
    base = _measure({"heldout:a": -2.0, "heldout:r": -2.0}, {"reference:0": (200.0, 100)},
                    {f"canary:{i}": CLEAN for i in range(10)})
    gate.refresh_baseline(lambda skip: base)
    return gate


REWARDS = {"heldout:a": 1.0, "heldout:r": -1.0}


def test_a_version_like_the_last_good_one_passes():
    gate = _gate()
    report = gate.judge(_measure({"heldout:a": -1.9, "heldout:r": -2.1}, {"reference:0": (202.0, 100)},
                                 {f"canary:{i}": CLEAN for i in range(10)}), REWARDS)
    assert report.passed, report.failed
    assert report.metrics["gate/passed"] == 1.0
    assert report.metrics["gate/reference_nll_rise"] == pytest.approx(0.01)


@pytest.mark.parametrize("candidate,check", [
    (_measure({"heldout:a": -2.5, "heldout:r": -2.0}), "accepted replies less likely"),
    (_measure({"heldout:a": -2.0, "heldout:r": -1.5}), "rejected replies more likely"),
    (_measure(nll={"reference:0": (212.0, 100)}), "reference NLL up"),
    (_measure(canary={**{f"canary:{i}": CLEAN for i in range(8)}, "canary:8": SPAM, "canary:9": SPAM}),
     "newly degenerate"),
    (_measure(canary={**{f"canary:{i}": CLEAN for i in range(5)},
                      **{f"canary:{i}": CanaryReply("and so on and", True, ()) for i in range(5, 10)}}),
     "newly run to the token limit"),
])
def test_each_check_rejects_what_it_guards(candidate, check):
    report = _gate().judge(candidate, REWARDS)
    assert not report.passed
    assert any(check in f for f in report.failed), report.failed
    assert report.metrics["gate/passed"] == 0.0


def test_one_changed_canary_is_noise():
    gate = PromotionGate(GateMode.ENFORCE)
    gate.refresh_baseline(lambda skip: _measure(canary={f"canary:{i}": CLEAN for i in range(6)}))
    assert gate.judge(_measure(canary={**{f"canary:{i}": CLEAN for i in range(5)}, "canary:5": SPAM}), {}).passed
    assert not gate.judge(_measure(canary={**{f"canary:{i}": CLEAN for i in range(4)}, "canary:4": SPAM,
                                           "canary:5": SPAM}), {}).passed


def test_a_few_replies_newly_cut_are_not_significant_but_many_are():
    """The default run's steps 2 and 3 were rejected for 2 of 5 and 2 of 6 replies newly cut at a
    32-token budget, none newly ended: sampling. A run-on version cuts them all."""
    cut = CanaryReply("and so on and", True, ())
    assert sign_test_p(2, 0) == 0.25 and sign_test_p(5, 0) == 1 / 32 and sign_test_p(0, 0) == 1.0
    gate = PromotionGate(GateMode.ENFORCE)
    gate.refresh_baseline(lambda skip: _measure(canary={f"canary:{i}": CLEAN for i in range(6)}))
    two = gate.judge(_measure(canary={**{f"canary:{i}": CLEAN for i in range(4)}, "canary:4": cut, "canary:5": cut}), {})
    assert two.passed and two.metrics["gate/new_truncation_share"] == pytest.approx(2 / 6)
    assert not gate.judge(_measure(canary={f"canary:{i}": cut for i in range(6)}), {}).passed


def test_replies_newly_cut_are_offset_by_replies_that_now_end():
    cut = CanaryReply("and so on and", True, ())
    gate = PromotionGate(GateMode.ENFORCE)
    gate.refresh_baseline(lambda skip: _measure(canary={**{f"canary:{i}": CLEAN for i in range(4)},
                                                        **{f"canary:{i}": cut for i in range(4, 8)}}))
    swapped = {**{f"canary:{i}": cut for i in range(3)}, "canary:3": CLEAN,
               **{f"canary:{i}": CLEAN for i in range(4, 7)}, "canary:7": cut}
    report = gate.judge(_measure(canary=swapped), {})  # 3 newly cut, 3 newly end: the same share cut
    assert report.passed, report.failed
    assert report.metrics["gate/new_truncation_share"] == 0.0


def test_problems_the_last_good_version_already_had_are_not_new():
    gate = PromotionGate(GateMode.ENFORCE)
    gate.refresh_baseline(lambda skip: _measure(canary={"canary:0": SPAM, "canary:1": CLEAN}))
    assert gate.judge(_measure(canary={"canary:0": SPAM, "canary:1": CLEAN}), {}).passed


def test_the_baseline_is_measured_once_per_item_and_promotion_replaces_it():
    gate = PromotionGate()
    asked = []

    def measure(skip):
        asked.append(set(skip))
        return _measure(canary={k: CLEAN for k in ("canary:0", "canary:1") if k not in skip})

    gate.refresh_baseline(measure)
    gate.refresh_baseline(measure)
    assert asked == [set(), {"canary:0", "canary:1"}]
    new = _measure(canary={"canary:0": SPAM})
    gate.promote(new)
    assert gate.baseline is new


def test_measure_version_on_a_real_policy():
    cfg = parse_args(["--model-path", TINY_QWEN3, "--rollout-batch-size", "2", "--lr", "1e-3"])
    backend = TrainingBackend(cfg, device=torch.device("cpu"), dtype=torch.float32)
    tok = backend.tokenizer
    prompt = tok.apply_chat_template([{"role": "user", "content": "hi"}], add_generation_prompt=True, tokenize=False)
    p_ids = tok(prompt, add_special_tokens=False)["input_ids"]
    r_ids = tok("hello there", add_special_tokens=False)["input_ids"]
    held = Sample(tokens=p_ids + r_ids, response_length=len(r_ids), rollout_log_probs=[0.0] * len(r_ids),
                  reward=1.0, turn_id="t1", sampling_temperature=1.0)
    data = GateData(heldout=[held], canary_messages=[[{"role": "user", "content": "What is 2+2?"}]],
                    reference=[([{"role": "user", "content": "Say hi"}], "Hi! How can I help you today?")])
    m = measure_version(backend, data, canary_max_tokens=6)
    assert set(m.keys()) == {"heldout:t1", "user:t1", "canary:0", "reference:0"}
    assert m.logprob["heldout:t1"] < 0
    total, n = m.nll["reference:0"]
    assert n > 3 and total > 0
    assert all(isinstance(c.text, str) for c in m.canary.values())
    again = measure_version(backend, data, canary_max_tokens=6)
    assert again.canary == m.canary  # same weights, same seed: the same replies
    assert measure_version(backend, data, skip=m.keys()).keys() == set()


def test_the_trainer_goes_back_to_the_checkpoint_of_a_rolled_back_version(tmp_path):
    """What TrainActor.restore_version does when serving was rolled back to version 1."""
    from slime.trainer.checkpoint import find_checkpoint_of_version

    cfg = parse_args(["--model-path", TINY_QWEN3, "--rollout-batch-size", "1", "--lr", "1e-2", "--use-lora"])
    backend = TrainingBackend(cfg, device=torch.device("cpu"), dtype=torch.float32)
    sample = Sample(tokens=[151644, 872, 198, 9707, 151645, 198, 9707, 1879, 0], response_length=3,
                    rollout_log_probs=[0.0] * 3, advantages=[1.0] * 3)
    weights = {}
    for step in (1, 2):
        backend.train_step([sample])
        backend.save(tmp_path, step=step)
        weights[backend.weight_version] = [p.detach().clone() for p in backend.trainable_parameters]
    assert sorted(weights) == [1, 2]
    ckpt = find_checkpoint_of_version(tmp_path, 1)
    assert ckpt is not None and ckpt.name == "checkpoint-1"
    assert find_checkpoint_of_version(tmp_path, 7) is None
    out = backend.restore_last_good(None, checkpoint=ckpt)
    assert out["restored"] == str(ckpt) and backend.weight_version == 3  # versions are never reused
    assert all(torch.equal(p, w) for p, w in zip(backend.trainable_parameters, weights[1]))


def test_canaries_that_were_already_degenerate_cannot_tell_worse():
    gate = PromotionGate(GateMode.ENFORCE)
    gate.refresh_baseline(lambda skip: _measure(canary={f"canary:{i}": SPAM if i < 2 else CLEAN for i in range(4)}))
    report = gate.judge(_measure(canary={f"canary:{i}": SPAM for i in range(4)}), {})
    assert report.passed and report.metrics["gate/canary_check_skipped"] == 1.0
