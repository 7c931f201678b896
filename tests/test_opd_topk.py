"""The ``--distill-topk`` reverse-KL loss: against a hand computation, and one real training step."""

from __future__ import annotations

import math

import pytest
import torch

from openclaw_rl.opd.topk_loss import topk_reverse_kl, topk_reverse_kl_loss
from slime.algorithms.losses import LossInputs, PolicyLossConfig


def test_topk_reverse_kl_matches_hand_computation():
    s = [0.5, 0.2]  # student probs of the teacher's top-2; tail 0.3
    t = [0.6, 0.3]  # teacher; tail 0.1
    want = (0.5 * math.log(0.5 / 0.6) + 0.2 * math.log(0.2 / 0.3) + 0.3 * math.log(0.3 / 0.1))
    got = topk_reverse_kl(torch.tensor([[s]]).log(), torch.tensor([[t]]).log())
    assert got.shape == (1, 1) and float(got[0, 0]) == pytest.approx(want, rel=1e-6)
    # identical distributions: zero
    assert float(topk_reverse_kl(torch.tensor([[t]]).log(), torch.tensor([[t]]).log())[0, 0]) == pytest.approx(0, abs=1e-7)


def test_topk_loss_masks_normalises_and_has_grad():
    s_lp = torch.tensor([[[0.5, 0.2], [0.1, 0.1]]], dtype=torch.float64).log().requires_grad_(True)
    t_lp = torch.tensor([[[0.6, 0.3], [0.7, 0.2]]], dtype=torch.float64).log()
    lp = torch.zeros(1, 2, dtype=torch.float64)
    inputs = LossInputs(logprobs_B_T=lp, old_logprobs_B_T=lp, advantages_B_T=lp,
                        loss_mask_B_T=torch.tensor([[1.0, 0.0]], dtype=torch.float64), global_num_tokens=4.0,
                        student_topk_logprobs_B_T_K=s_lp, teacher_topk_logprobs_B_T_K=t_lp)
    out = topk_reverse_kl_loss(inputs, PolicyLossConfig())
    want = (0.5 * math.log(0.5 / 0.6) + 0.2 * math.log(0.2 / 0.3) + 0.3 * math.log(0.3 / 0.1)) / 4.0
    assert float(out.loss.detach()) == pytest.approx(want, rel=1e-6)  # second position masked out
    out.loss.backward()
    assert s_lp.grad is not None and float(s_lp.grad[0, 1].abs().sum()) == 0.0
    assert out.metrics()["topk_kl"] == pytest.approx(want * 4.0, rel=1e-6)


def test_topk_distillation_step_lowers_the_topk_kl():
    """Real backend, real tiny Qwen3: teacher top-K from the hinted prompt, one-step descent."""
    from openclaw_rl.models import load_tokenizer
    from openclaw_rl.opd.advantages import opd_advantages
    from openclaw_rl.opd.hint_prompt import teacher_prompt_ids
    from openclaw_rl.opd.teacher import score_teacher
    from slime.config.arguments import parse_args
    from slime.trainer.backend import TrainingBackend
    from slime.record.sample import Sample

    tok = load_tokenizer("builtin:tiny-qwen3")
    cfg = parse_args(["--model-path", "builtin:tiny-qwen3", "--rollout-batch-size", "1", "--lr", "5e-3",
                      "--advantage-estimator", "opd", "--use-lora", "--lora-rank", "4"])
    backend = TrainingBackend(cfg, loss_fn=topk_reverse_kl_loss)
    msgs = [{"role": "user", "content": "Name a color."}]
    p = tok(tok.apply_chat_template(msgs, add_generation_prompt=True, tokenize=False), add_special_tokens=False)["input_ids"]
    resp = tok("Blue is a nice color.", add_special_tokens=False)["input_ids"]

    def sample():
        s = Sample(tokens=p + resp, response_length=len(resp), rollout_log_probs=[-1.0] * len(resp))
        s.metadata["teacher_prompt_ids"] = teacher_prompt_ids(tok, msgs, None, "Answer with one word: " + "red " * 30, p)
        return opd_advantages(score_teacher(backend, [s], "base", topk=8))[0][0]

    s0 = sample()
    assert len(s0.teacher_topk_ids) == len(resp) and len(s0.teacher_topk_ids[0]) == 8
    kls = [backend.train_step([sample()])["topk_kl"] for _ in range(6)]
    assert all(math.isfinite(k) for k in kls) and kls[-1] < kls[0]
