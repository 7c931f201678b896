"""``--distill-topk K``: reverse KL between student and teacher over the teacher's top-K tokens plus
a tail bin, as a loss plugin (typed convention: ``loss(inputs, config) -> LossOutputs``).

At each trained response position the teacher's K most likely tokens (scored with the hint, see
:mod:`openclaw_rl.opd.teacher`) define K+1 bins: the K tokens and "everything else". With
``s_k`` / ``t_k`` the student / teacher probabilities of token ``k`` and the tails
``s_tail = 1 - sum_k s_k``, ``t_tail = 1 - sum_k t_k`` (each clamped to at least 1e-8):

    KL_t(student || teacher) = sum_k s_k (log s_k - log t_k) + s_tail (log s_tail - log t_tail)

This is the exact reverse KL of the two distributions coarsened to the K+1 bins (a lower bound
on the full-vocabulary KL), differentiable in the student's log-probs of the K tokens. The loss is
``sum(mask * KL_t) / global_num_tokens`` (token mean over the global batch, like the PPO loss).
A micro-batch without top-K tensors falls back to :func:`slime.algorithms.losses.policy_loss` on the OPD
advantages. Use it with ``--advantage-estimator opd``; ``--distill-topk`` loads it by default, or
name it yourself: ``--custom-loss-function-path openclaw_rl/opd/topk_loss.py:topk_reverse_kl_loss``.

Reference: Agarwal et al. 2024, "On-Policy Distillation of Language Models" (GKD, reverse KL);
Gu et al. 2024, "MiniLLM" (reverse KL for LM distillation); top-K + tail bin as in
tinker-cookbook's and prime-rl's sparse distillation losses.
"""

from __future__ import annotations

import torch

from slime.algorithms.losses import LossInputs, LossOutputs, PolicyLossConfig, policy_loss

__all__ = ["topk_reverse_kl", "topk_reverse_kl_loss"]

_TAIL_FLOOR = 1e-8


def topk_reverse_kl(student_lp_B_T_K: torch.Tensor, teacher_lp_B_T_K: torch.Tensor) -> torch.Tensor:
    """Per-position reverse KL over K bins + tail (module docstring).

    Args:
        student_lp_B_T_K: student log-probs of the teacher's top-K tokens (may carry grad).
        teacher_lp_B_T_K: teacher log-probs of the same tokens.

    Returns:
        ``[B, T]`` KL values (>= 0 up to rounding).

    Raises:
        ValueError: shape mismatch.
    """
    if student_lp_B_T_K.shape != teacher_lp_B_T_K.shape:
        raise ValueError(f"student {tuple(student_lp_B_T_K.shape)} and teacher "
                         f"{tuple(teacher_lp_B_T_K.shape)} top-K log-probs differ in shape")
    t_lp = teacher_lp_B_T_K.detach().to(student_lp_B_T_K.dtype)
    s_p = student_lp_B_T_K.exp()
    head = (s_p * (student_lp_B_T_K - t_lp)).sum(-1)
    s_tail = (1.0 - s_p.sum(-1)).clamp_min(_TAIL_FLOOR)
    t_tail = (1.0 - t_lp.exp().sum(-1)).clamp_min(_TAIL_FLOOR)
    return head + s_tail * (s_tail.log() - t_tail.log())


def topk_reverse_kl_loss(inputs: LossInputs, config: PolicyLossConfig) -> LossOutputs:
    """The top-K reverse-KL distillation loss of one micro-batch.

    Args:
        inputs: needs ``student_topk_logprobs_B_T_K`` and ``teacher_topk_logprobs_B_T_K`` (the
            backend fills them when samples carry a teacher top-K); else PPO on the advantages.
        config: unused by the KL itself (kept for the loss signature).

    Returns:
        :class:`LossOutputs` with metrics ``topk_kl`` (mean KL per loss token) and ``pg_loss``
        (the same value, so dashboards keep one loss curve).
    """
    if inputs.student_topk_logprobs_B_T_K is None or inputs.teacher_topk_logprobs_B_T_K is None:
        return policy_loss(inputs, config)
    mask_B_T = inputs.loss_mask_B_T.to(inputs.student_topk_logprobs_B_T_K.dtype)
    on_B_T = mask_B_T > 0
    kl_B_T = topk_reverse_kl(inputs.student_topk_logprobs_B_T_K, inputs.teacher_topk_logprobs_B_T_K)
    kl_B_T = torch.where(on_B_T, kl_B_T * mask_B_T, 0.0)
    loss = kl_B_T.sum() / float(inputs.global_num_tokens)
    n_tok = float(mask_B_T.sum())
    total = float(kl_B_T.detach().sum())
    return LossOutputs(loss=loss, num_tokens=n_tok, sums={"topk_kl": total, "pg_loss": total},
                       counts={"topk_kl": n_tok, "pg_loss": n_tok})
