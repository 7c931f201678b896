"""Tests for slime.record.sample.Sample: lengths, validation, JSON round trip."""

from __future__ import annotations

import json

import numpy as np
import pytest

from slime.record.sample import Sample, SampleStatus


def make(**kw):
    base = dict(tokens=[5, 6, 7, 8, 9], response_length=2, rollout_log_probs=[-0.5, -1.25])
    base.update(kw)
    return Sample(**base)


def test_lengths_and_defaults():
    s = make()
    assert s.prompt_length == 3
    assert s.prompt_tokens == [5, 6, 7]
    assert s.response_tokens == [8, 9]
    assert s.loss_mask == [1, 1]
    assert s.status is SampleStatus.PENDING
    assert s.num_loss_tokens == 2


def test_round_trip_through_json():
    s = make(loss_mask=[1, 0], reward=-1.0, status="truncated", weight_version=3, session_id="sess",
             turn_id="t-1", turn_index=4, metadata={"votes": [1, -1]}, teacher_log_probs=[-0.1, -0.2],
             advantages=[0.5, 0.0])
    text = json.dumps(s.to_dict())
    back = Sample.from_dict(json.loads(text))
    assert back == s
    assert back.status is SampleStatus.TRUNCATED
    assert json.loads(text)["status"] == "truncated"


def test_numpy_ints_are_accepted_as_plain_ints():
    s = make(tokens=list(np.array([1, 2, 3], dtype=np.int64)), response_length=1, rollout_log_probs=[-0.3])
    assert all(type(t) is int for t in s.tokens)
    json.dumps(s.to_dict())


@pytest.mark.parametrize(
    "kw, fragment",
    [
        (dict(loss_mask=[1]), "loss_mask"),
        (dict(loss_mask=[1, 2]), "0 or 1"),
        (dict(rollout_log_probs=[-0.5]), "rollout_log_probs"),
        (dict(rollout_log_probs=[-0.5, float("nan")]), "finite"),
        (dict(response_length=6, rollout_log_probs=[0.0] * 6), "response_length"),
        (dict(response_length=-1, rollout_log_probs=[]), "response_length"),
        (dict(teacher_log_probs=[-1.0]), "teacher_log_probs"),
        (dict(advantages=[1.0, 2.0, 3.0]), "advantages"),
        (dict(status="done"), "status"),
        (dict(weight_version=-1), "weight_version"),
        (dict(reward=float("inf")), "reward"),
        (dict(tokens=[1, 2, -3, 4, 5]), "tokens"),
        (dict(tokens=[1, 2, 3.5, 4, 5]), "tokens"),
    ],
)
def test_inconsistent_samples_raise(kw, fragment):
    with pytest.raises(ValueError, match=fragment):
        make(**kw)


def test_validate_catches_later_mutation():
    s = make()
    s.advantages = [1.0]
    with pytest.raises(ValueError, match="advantages"):
        s.validate()


def test_from_dict_rejects_unknown_and_missing_keys():
    d = make().to_dict()
    with pytest.raises(ValueError, match="unknown"):
        Sample.from_dict({**d, "bogus": 1})
    del d["tokens"]
    with pytest.raises(ValueError, match="missing"):
        Sample.from_dict(d)


def test_empty_response_is_valid():
    s = Sample(tokens=[1, 2], response_length=0, rollout_log_probs=[])
    assert s.prompt_length == 2 and s.loss_mask == []


def _with_images(n_patches=4, grid=((1, 2, 2),)):
    import torch

    g = torch.Generator().manual_seed(0)
    return Sample(tokens=[1, 2, 3], response_length=1, rollout_log_probs=[-0.5],
                  multimodal_train_inputs={"pixel_values": torch.rand(n_patches, 6, generator=g),
                                           "image_grid_thw": [list(r) for r in grid]})


def test_multimodal_train_inputs_round_trip_through_json():
    import torch

    s = _with_images()
    assert s.multimodal_train_inputs["image_grid_thw"].dtype == torch.long
    back = Sample.from_dict(json.loads(json.dumps(s.to_dict())))
    assert back == s and torch.equal(back.multimodal_train_inputs["pixel_values"], s.multimodal_train_inputs["pixel_values"])
    text = Sample(tokens=[1, 2, 3], response_length=1, rollout_log_probs=[-0.5])
    assert "multimodal_train_inputs" not in text.to_dict() and text != s


@pytest.mark.parametrize("inputs, needle", [
    ({"pixel_values": [[0.0] * 6] * 3, "image_grid_thw": [[1, 2, 2]]}, "sum(t*h*w)=4"),
    ({"pixel_values": [[0.0] * 6] * 4}, "together"),
    ({"pixel_values": [[float("nan")] * 6] * 4, "image_grid_thw": [[1, 2, 2]]}, "finite"),
    ({"pixel_values": [[0.0] * 6] * 4, "image_grid_thw": [[1, 0, 2]]}, "positive"),
    ({"pixel_values": "abc", "image_grid_thw": [[1, 2, 2]]}, "nested list"),
])
def test_bad_multimodal_train_inputs_are_refused(inputs, needle):
    with pytest.raises(ValueError, match="multimodal_train_inputs") as err:
        Sample(tokens=[1, 2, 3], response_length=1, rollout_log_probs=[-0.5], multimodal_train_inputs=inputs)
    assert needle in str(err.value)


def test_collate_concatenates_images_in_batch_order():
    from slime.record.batch import collate_samples

    a, b = _with_images(), _with_images(8, ((1, 2, 2), (1, 2, 2)))
    text = Sample(tokens=[1, 2], response_length=1, rollout_log_probs=[-0.1])
    batch = collate_samples([a, text, b])
    assert batch.multimodal["image_grid_thw"].tolist() == [[1, 2, 2]] * 3
    assert batch.multimodal["pixel_values"].shape == (12, 6)
    assert collate_samples([text]).multimodal is None
