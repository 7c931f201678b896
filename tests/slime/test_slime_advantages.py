"""Tests for slime.algorithms.advantages with hand-computed GRPO and broadcast values."""

from __future__ import annotations

import math

import pytest
import torch

from slime.algorithms.advantages import broadcast_reward, compute_advantages, grpo, grpo_advantages
from slime.config.arguments import parse_args
from slime.record.sample import Sample


def test_grpo_std_normalised_by_hand():
    rewards = torch.tensor([1.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0, 0.0])
    adv = grpo_advantages(rewards, group_size=4)
    # group 1: mean 0.5, unbiased std sqrt(1/3); group 2: mean 0.75, unbiased std 0.5
    a = 0.5 / (math.sqrt(1 / 3) + 1e-6)
    expected = [a, -a, -a, a, 0.25 / 0.500001, 0.25 / 0.500001, 0.25 / 0.500001, -0.75 / 0.500001]
    torch.testing.assert_close(adv, torch.tensor(expected), atol=1e-6, rtol=0)


def test_grpo_mean_only_and_constant_groups():
    rewards = torch.tensor([1.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0, 0.0])
    adv = grpo_advantages(rewards, group_size=4, normalize_std=False)
    torch.testing.assert_close(adv, torch.tensor([0.5, -0.5, -0.5, 0.5, 0.25, 0.25, 0.25, -0.75]))
    # a group with identical rewards carries no signal
    assert grpo_advantages(torch.tensor([2.0, 2.0, 2.0]), 3).abs().max().item() == 0.0


def test_grpo_errors():
    with pytest.raises(ValueError, match="group_size >= 2"):
        grpo_advantages(torch.tensor([1.0, 0.0]), 1)
    with pytest.raises(ValueError, match="divisible"):
        grpo_advantages(torch.tensor([1.0, 0.0, 1.0]), 2)


def mk(reward, r=3, mask=None):
    return Sample(tokens=list(range(2 + r)), response_length=r, rollout_log_probs=[-1.0] * r,
                  loss_mask=mask, reward=reward)


def test_grpo_on_samples_broadcasts_and_zeroes_masked_tokens():
    samples = [mk(1.0, mask=[1, 0, 1]), mk(0.0, r=2)]
    out = grpo(samples, group_size=2, normalize_std=False)
    assert out[0] is samples[0]
    assert samples[0].advantages == [0.5, 0.0, 0.5]
    assert samples[1].advantages == [-0.5, -0.5]
    samples[0].validate()


def test_broadcast_reward_binary_rl():
    samples = [mk(-1.0, mask=[1, 0, 1]), mk(1.0, r=2), mk(0.0, r=1)]
    broadcast_reward(samples)
    assert [s.advantages for s in samples] == [[-1.0, 0.0, -1.0], [1.0, 1.0], [0.0]]


def test_missing_reward_raises():
    with pytest.raises(ValueError, match="no reward"):
        broadcast_reward([mk(1.0), mk(None)])


def test_compute_advantages_dispatch():
    samples = [mk(1.0), mk(0.0)]
    compute_advantages(samples, parse_args(["--n-samples-per-prompt", "2", "--rollout-batch-size", "1"]))
    assert samples[0].advantages[0] == pytest.approx(0.5 / (math.sqrt(0.5) + 1e-6))
    compute_advantages(samples, parse_args(["--advantage-estimator", "broadcast"]))
    assert samples[1].advantages == [0.0, 0.0, 0.0] and samples[0].advantages == [1.0] * 3
    compute_advantages(samples, parse_args(["--disable-rewards-normalization"]))
    assert samples[0].advantages == [1.0] * 3
    with pytest.raises(NotImplementedError, match="opd"):
        compute_advantages(samples, parse_args(["--advantage-estimator", "opd"]))
