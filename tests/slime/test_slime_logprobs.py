"""Tests for slime.algorithms.logprobs: chunked log-probs/entropy equal the full-logits reference."""

from __future__ import annotations

import math

import pytest
import torch

from slime.algorithms.logprobs import compute_token_logprobs, entropy_from_logits, token_logprobs_from_logits


def test_helper_matches_hand_computed_values():
    # V = 2, logits [0, ln 3] -> p = [1/4, 3/4]; position 0 has no prediction.
    logits = torch.tensor([[[0.0, math.log(3.0)], [0.0, 0.0]]], dtype=torch.float64)
    ids = torch.tensor([[0, 1]])
    lp = token_logprobs_from_logits(logits, ids)
    assert lp.shape == (1, 2)
    assert lp[0, 0].item() == 0.0
    assert lp[0, 1].item() == pytest.approx(math.log(0.75), abs=1e-12)
    ent = entropy_from_logits(logits)
    assert ent[0, 1].item() == pytest.approx(-(0.25 * math.log(0.25) + 0.75 * math.log(0.75)), abs=1e-12)
    # temperature 2 -> logits [0, ln3 / 2] -> p1 = sqrt3 / (1 + sqrt3)
    lp_t = token_logprobs_from_logits(logits, ids, temperature=2.0)
    assert lp_t[0, 1].item() == pytest.approx(math.log(math.sqrt(3) / (1 + math.sqrt(3))), abs=1e-12)


def _batch():
    torch.manual_seed(1)
    ids = torch.randint(0, 512, (3, 11))
    attn = torch.ones(3, 11, dtype=torch.long)
    attn[1, 8:] = 0  # right padding
    attn[2, 5:] = 0
    resp = torch.zeros(3, 11, dtype=torch.bool)
    resp[0, 4:11] = True
    resp[1, 3:8] = True
    resp[2, 2:5] = True
    return ids, attn, resp


def _reference(model, ids, attn, temperature=1.0):
    pos = (attn.cumsum(-1) - 1).clamp(min=0)
    logits = model(input_ids=ids, attention_mask=attn, position_ids=pos).logits
    return token_logprobs_from_logits(logits, ids, temperature), entropy_from_logits(logits, temperature)


@pytest.mark.parametrize("chunk_size", [1, 3, 4096])
def test_chunked_equals_unchunked(tiny_model, chunk_size):
    ids, attn, resp = _batch()
    with torch.no_grad():
        out = compute_token_logprobs(tiny_model, ids, attn, resp, chunk_size=chunk_size, temperature=0.7,
                                     return_entropy=True)
        ref_lp, ref_ent = _reference(tiny_model, ids, attn, temperature=0.7)
    torch.testing.assert_close(out.logprobs_B_T, ref_lp * resp, atol=1e-6, rtol=0)
    torch.testing.assert_close(out.entropy_B_T, ref_ent * resp, atol=1e-6, rtol=0)
    assert (out.logprobs_B_T[~resp] == 0).all()


def test_float32_model_within_tolerance(make_tiny_model):
    model = make_tiny_model(dtype=torch.float32)
    ids, attn, resp = _batch()
    with torch.no_grad():
        out = compute_token_logprobs(model, ids, attn, resp, chunk_size=2)
        ref_lp, _ = _reference(model, ids, attn)
    assert out.logprobs_B_T.dtype == torch.float32
    torch.testing.assert_close(out.logprobs_B_T, ref_lp * resp, atol=1e-5, rtol=0)


def test_gradients_match_through_checkpointed_chunks(tiny_model):
    ids, attn, resp = _batch()
    out = compute_token_logprobs(tiny_model, ids, attn, resp, chunk_size=2, return_entropy=True)
    (out.logprobs_B_T.sum() + 0.3 * out.entropy_B_T.sum()).backward()
    chunked = [p.grad.clone() for p in tiny_model.parameters()]
    tiny_model.zero_grad()
    ref_lp, ref_ent = _reference(tiny_model, ids, attn)
    ((ref_lp * resp).sum() + 0.3 * (ref_ent * resp).sum()).backward()
    for g, p in zip(chunked, tiny_model.parameters()):
        torch.testing.assert_close(g, p.grad, atol=1e-6, rtol=0)


def test_left_padding_gives_same_logprobs_as_unpadded(tiny_model):
    torch.manual_seed(2)
    seq = torch.randint(0, 512, (1, 6))
    padded = torch.cat([torch.zeros(1, 3, dtype=torch.long), seq], dim=1)
    attn = torch.cat([torch.zeros(1, 3, dtype=torch.long), torch.ones(1, 6, dtype=torch.long)], dim=1)
    with torch.no_grad():
        a = compute_token_logprobs(tiny_model, seq).logprobs_B_T
        b = compute_token_logprobs(tiny_model, padded, attn).logprobs_B_T
    torch.testing.assert_close(b[:, 3:], a, atol=1e-6, rtol=0)
    assert (b[:, :4] == 0).all()  # padding and the first real token have no log-prob


def test_bad_inputs_raise(tiny_model):
    ids, attn, resp = _batch()
    bad = resp.clone()
    bad[0, 0] = True
    with pytest.raises(ValueError, match="position 0"):
        compute_token_logprobs(tiny_model, ids, attn, bad)
    with pytest.raises(ValueError, match="chunk_size"):
        compute_token_logprobs(tiny_model, ids, attn, resp, chunk_size=0)
    with pytest.raises(ValueError, match="temperature"):
        compute_token_logprobs(tiny_model, ids, attn, resp, temperature=0.0)
    with pytest.raises(ValueError, match="attention_mask"):
        compute_token_logprobs(tiny_model, ids, attn[:, :5], resp)


def test_selecting_first_token_after_left_padding_raises(tiny_model):
    ids = torch.randint(0, 512, (1, 5))
    attn = torch.tensor([[0, 0, 1, 1, 1]])
    resp = torch.tensor([[False, False, True, True, True]])
    with pytest.raises(ValueError, match="predecessor is padding"):
        compute_token_logprobs(tiny_model, ids, attn, resp)
