"""Tests for slime.algorithms.losses: hand-computed PPO clip, dual clip, KL estimators, TIS, entropy,
metric reduction, and micro-batch gradient invariance on a tiny model."""

from __future__ import annotations

import math

import pytest
import torch

from slime.record.batch import collate_samples, split_micro_batches
from slime.algorithms.logprobs import compute_token_logprobs
from slime.algorithms.losses import (
    LossInputs,
    PolicyLossConfig,
    global_token_count,
    kl_estimate,
    policy_loss,
    reduce_metrics,
    tis_weights,
)
from slime.record.sample import Sample

D = torch.float64


def t(values):
    return torch.tensor([values], dtype=D)


def clip_inputs(global_num_tokens=4.0, mask=(1, 1, 1, 1)):
    old = t([0.0, 0.0, 0.0, 0.0])
    logp = t([math.log(1.5), math.log(0.9), math.log(0.5), math.log(1.1)]).requires_grad_(True)
    return LossInputs(logprobs_B_T=logp, old_logprobs_B_T=old, advantages_B_T=t([1.0, 1.0, -1.0, -1.0]),
                      loss_mask_B_T=t(list(mask)), global_num_tokens=global_num_tokens)


def test_clipped_surrogate_asymmetric_by_hand():
    inp = clip_inputs()
    out = policy_loss(inp, PolicyLossConfig(eps_clip=0.2, eps_clip_high=0.28))
    # per token: max(-A r, -A clip(r, 0.8, 1.28)) = [-1.28, -0.9, 0.8, 1.1]
    assert out.loss.item() == pytest.approx((-1.28 - 0.9 + 0.8 + 1.1) / 4, abs=1e-12)
    m = out.metrics()
    assert m["pg_clipfrac"] == pytest.approx(0.5)
    assert m["ratio_dev"] == pytest.approx((0.5 + 0.1 + 0.5 + 0.1) / 4)
    assert m["pg_loss"] == pytest.approx(-0.07)
    # approx_kl = mean of exp(-d) - 1 + d with d = logp - old
    ks = [1 / r - 1 + math.log(r) for r in (1.5, 0.9, 0.5, 1.1)]
    assert m["approx_kl"] == pytest.approx(sum(ks) / 4)
    out.loss.backward()
    # clipped tokens get no gradient; unclipped: d/dlogp (-A r)/4 = -A r / 4
    torch.testing.assert_close(inp.logprobs_B_T.grad, t([0.0, -0.9 / 4, 0.0, 1.1 / 4]))


def test_symmetric_clip_and_global_normaliser():
    out = policy_loss(clip_inputs(), PolicyLossConfig(eps_clip=0.2))
    assert out.loss.item() == pytest.approx((-1.2 - 0.9 + 0.8 + 1.1) / 4, abs=1e-12)
    # masking token 3 and dividing by a global count of 10 (other micro-batches hold the rest)
    out = policy_loss(clip_inputs(global_num_tokens=10.0, mask=(1, 1, 1, 0)), PolicyLossConfig(eps_clip=0.2))
    assert out.loss.item() == pytest.approx((-1.2 - 0.9 + 0.8) / 10, abs=1e-12)
    assert out.num_tokens == 3 and out.counts["pg_loss"] == 3


def test_dual_clip_by_hand():
    # A = -1, ratio 5: max(5, 1.2) = 5, dual clip with c = 3 caps it at 3; A > 0 token unaffected
    inp = LossInputs(logprobs_B_T=t([math.log(5.0), math.log(5.0)]), old_logprobs_B_T=t([0.0, 0.0]),
                     advantages_B_T=t([-1.0, 1.0]), loss_mask_B_T=t([1.0, 1.0]), global_num_tokens=2)
    out = policy_loss(inp, PolicyLossConfig(eps_clip=0.2, eps_clip_c=3.0))
    assert out.loss.item() == pytest.approx((3.0 - 1.2) / 2)
    assert out.metrics()["dual_clipfrac"] == pytest.approx(0.5)
    no_dual = policy_loss(inp, PolicyLossConfig(eps_clip=0.2))
    assert no_dual.loss.item() == pytest.approx((5.0 - 1.2) / 2)


def test_kl_estimators_by_hand():
    # policy assigns twice the reference probability: logp - ref = ln 2
    logp, ref = t([math.log(0.5)]), t([math.log(0.25)])
    ln2 = math.log(2.0)
    assert kl_estimate(logp, ref, "k1").item() == pytest.approx(ln2)
    assert kl_estimate(logp, ref, "k2").item() == pytest.approx(ln2 ** 2 / 2)
    assert kl_estimate(logp, ref, "k3").item() == pytest.approx(0.5 - 1 + ln2)
    assert kl_estimate(logp, ref, "low_var_kl").item() == pytest.approx(0.5 - 1 + ln2)
    # far apart: k3 = e^20 - 21, low_var_kl clamps it to 10
    far_logp, far_ref = t([-20.0]), t([0.0])
    assert kl_estimate(far_logp, far_ref, "k3").item() == pytest.approx(math.exp(20) - 21)
    assert kl_estimate(far_logp, far_ref, "low_var_kl").item() == 10.0
    with pytest.raises(ValueError, match="unknown"):
        kl_estimate(logp, ref, "k9")


@pytest.mark.parametrize("kl_type, per_token", [("k1", math.log(2.0)), ("k2", math.log(2.0) ** 2 / 2),
                                                 ("k3", 0.5 - 1 + math.log(2.0))])
def test_kl_term_in_loss(kl_type, per_token):
    logp = t([math.log(0.5), math.log(0.5)]).requires_grad_(True)
    inp = LossInputs(logprobs_B_T=logp, old_logprobs_B_T=logp.detach(), advantages_B_T=t([0.0, 0.0]),
                     loss_mask_B_T=t([1.0, 1.0]), global_num_tokens=2, ref_logprobs_B_T=t([math.log(0.25)] * 2))
    out = policy_loss(inp, PolicyLossConfig(use_kl_loss=True, kl_loss_coef=0.5, kl_loss_type=kl_type))
    assert out.loss.item() == pytest.approx(0.5 * per_token)
    assert out.metrics()["kl_loss"] == pytest.approx(per_token)


def test_tis_by_hand():
    # old - rollout = [ln 0.5, ln 3] -> weights min(., 2) = [0.5, 2]
    old = t([0.0, 0.0])
    rollout = t([math.log(2.0), math.log(1 / 3)])
    torch.testing.assert_close(tis_weights(old, rollout, 2.0), t([0.5, 2.0]))
    inp = LossInputs(logprobs_B_T=old.clone().requires_grad_(True), old_logprobs_B_T=old, advantages_B_T=t([1.0, 1.0]),
                     loss_mask_B_T=t([1.0, 1.0]), global_num_tokens=2, rollout_logprobs_B_T=rollout)
    out = policy_loss(inp, PolicyLossConfig(use_tis=True, tis_cap=2.0))
    assert out.loss.item() == pytest.approx((-0.5 - 2.0) / 2)
    m = out.metrics()
    assert m["tis_weight"] == pytest.approx(1.25) and m["tis_clipfrac"] == pytest.approx(0.5)
    assert policy_loss(inp, PolicyLossConfig()).loss.item() == pytest.approx(-1.0)


def test_entropy_bonus_by_hand():
    ent = t([1.0, 2.0]).requires_grad_(True)
    inp = LossInputs(logprobs_B_T=t([0.0, 0.0]), old_logprobs_B_T=t([0.0, 0.0]), advantages_B_T=t([0.0, 0.0]),
                     loss_mask_B_T=t([1.0, 1.0]), global_num_tokens=2, entropy_B_T=ent)
    out = policy_loss(inp, PolicyLossConfig(entropy_coef=0.1))
    assert out.loss.item() == pytest.approx(-0.1 * 3 / 2)
    assert out.metrics()["entropy"] == pytest.approx(1.5)


def test_missing_inputs_and_bad_config_raise():
    base = dict(logprobs_B_T=t([0.0]), old_logprobs_B_T=t([0.0]), advantages_B_T=t([1.0]),
                loss_mask_B_T=t([1.0]), global_num_tokens=1)
    with pytest.raises(ValueError, match="ref_logprobs"):
        policy_loss(LossInputs(**base), PolicyLossConfig(use_kl_loss=True, kl_loss_coef=0.1))
    with pytest.raises(ValueError, match="rollout_logprobs"):
        policy_loss(LossInputs(**base), PolicyLossConfig(use_tis=True))
    with pytest.raises(ValueError, match="entropy_B_T"):
        policy_loss(LossInputs(**base), PolicyLossConfig(entropy_coef=0.1))
    with pytest.raises(ValueError, match="shape"):
        LossInputs(**{**base, "advantages_B_T": t([1.0, 2.0])})
    with pytest.raises(ValueError, match="global_num_tokens"):
        LossInputs(**{**base, "global_num_tokens": 0})
    with pytest.raises(ValueError, match="eps_clip"):
        PolicyLossConfig(eps_clip=0.0)
    with pytest.raises(ValueError, match="kl_loss_type"):
        PolicyLossConfig(kl_loss_type="k4")


def test_garbage_off_the_mask_cannot_poison_the_loss():
    logp = t([math.log(0.5), 500.0]).requires_grad_(True)  # position 1 is padding with a garbage value
    inp = LossInputs(logprobs_B_T=logp, old_logprobs_B_T=t([math.log(0.5), -500.0]), advantages_B_T=t([1.0, 1.0]),
                     loss_mask_B_T=t([1.0, 0.0]), global_num_tokens=1, rollout_logprobs_B_T=t([0.0, -900.0]),
                     ref_logprobs_B_T=t([math.log(0.5), -900.0]), entropy_B_T=t([0.3, float("nan")]))
    out = policy_loss(inp, PolicyLossConfig(use_kl_loss=True, kl_loss_coef=0.1, kl_loss_type="k3", use_tis=True,
                                            tis_cap=2.0, entropy_coef=0.0))
    out.loss.backward()
    # TIS weight at position 0: min(exp(ln 0.5 - 0), 2) = 0.5 -> loss -0.5
    assert out.loss.item() == pytest.approx(-0.5)
    assert torch.isfinite(logp.grad).all() and logp.grad[0, 1].item() == 0.0
    assert all(math.isfinite(v) for v in out.metrics().values())


def test_reduce_metrics_weights_by_token_counts():
    a = policy_loss(clip_inputs(mask=(1, 0, 0, 0)), PolicyLossConfig(eps_clip=0.2))  # 1 token, clipped
    b = policy_loss(clip_inputs(mask=(0, 1, 1, 1)), PolicyLossConfig(eps_clip=0.2))  # 3 tokens, 1 clipped
    m = reduce_metrics([a, b])
    assert m["pg_clipfrac"] == pytest.approx(2 / 4)
    assert m["pg_loss"] == pytest.approx((-1.2 - 0.9 + 0.8 + 1.1) / 4)


def _samples():
    gen = torch.Generator().manual_seed(3)
    lengths = [(3, 4), (5, 2), (2, 6), (4, 3)]  # (prompt, response)
    out = []
    for i, (p, r) in enumerate(lengths):
        toks = torch.randint(0, 512, (p + r,), generator=gen).tolist()
        mask = [1] * r
        if i == 2:
            mask[1] = 0  # e.g. a tool-output token inside the response
        out.append(Sample(tokens=toks, response_length=r, loss_mask=mask,
                          rollout_log_probs=(-torch.rand(r, generator=gen) * 6).tolist(),
                          advantages=[(1.0 if i % 2 == 0 else -0.5) * m for m in mask], reward=1.0))
    return out


def _accumulated_grads(model, samples, micro_batch_size, config):
    model.zero_grad()
    global_n = global_token_count([s.loss_mask for s in samples])
    outputs = []
    for mb in split_micro_batches(samples, micro_batch_size):
        batch = collate_samples(mb, dtype=D)
        out = compute_token_logprobs(model, batch.input_ids_B_T, batch.attention_mask_B_T, batch.response_mask_B_T,
                                     chunk_size=3, return_entropy=True)
        # old policy = current policy shifted so that some ratios leave the clip range
        # (a function of the absolute position only, so it does not depend on the padded length)
        shift = (torch.arange(batch.input_ids_B_T.shape[1], dtype=D) % 5 - 2) * 0.15
        old = (out.logprobs_B_T.detach() + shift) * batch.response_mask_B_T
        ref = (out.logprobs_B_T.detach() - 0.3 * shift) * batch.response_mask_B_T
        res = policy_loss(LossInputs(
            logprobs_B_T=out.logprobs_B_T, old_logprobs_B_T=old, advantages_B_T=batch.advantages_B_T,
            loss_mask_B_T=batch.loss_mask_B_T, global_num_tokens=global_n,
            rollout_logprobs_B_T=batch.rollout_logprobs_B_T, ref_logprobs_B_T=ref, entropy_B_T=out.entropy_B_T,
        ), config)
        res.loss.backward()
        outputs.append(res)
    return [p.grad.clone() for p in model.parameters()], reduce_metrics(outputs)


def test_micro_batches_give_the_same_gradient_as_one_batch(tiny_model):
    config = PolicyLossConfig(eps_clip=0.2, eps_clip_high=0.28, use_kl_loss=True, kl_loss_coef=0.1,
                              kl_loss_type="low_var_kl", entropy_coef=0.01, use_tis=True, tis_cap=2.0)
    samples = _samples()
    full, m_full = _accumulated_grads(tiny_model, samples, 4, config)
    assert 0 < m_full["pg_clipfrac"] < 1  # the clip is exercised
    assert any(g.abs().sum() > 0 for g in full)
    for mbs in (1, 2):
        split, m_split = _accumulated_grads(tiny_model, samples, mbs, config)
        for g_full, g_split in zip(full, split):
            torch.testing.assert_close(g_split, g_full, atol=1e-6, rtol=0)
        for k in m_full:
            assert m_split[k] == pytest.approx(m_full[k], abs=1e-9)
