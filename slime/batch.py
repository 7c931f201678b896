"""Collate :class:`~slime.sample.Sample` records into right-padded ``[B, T]`` training tensors.

Every per-token tensor is aligned with ``input_ids_B_T`` (the convention of
:mod:`slime.logprobs`): a sample with prompt length ``P`` and response length ``R`` has its
response quantities at columns ``P .. P + R - 1``; prompt and padding columns hold 0. The result
plugs straight into :func:`slime.logprobs.compute_token_logprobs` (``response_mask_B_T``) and
:class:`slime.losses.LossInputs`. ``T`` is the sequence axis everywhere (``T = max(len(tokens))``).

Follows slime's per-sample packing of ``tokens``/``loss_masks``/``rollout_log_probs``
(THUDM/slime), without sequence packing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from slime.sample import Sample

__all__ = ["SampleBatch", "collate_samples", "split_micro_batches"]


@dataclass
class SampleBatch:
    """Right-padded tensors for ``B`` samples, ``T = max(len(tokens))``.

    input_ids_B_T: long token ids (``pad_token_id`` in padding).
    attention_mask_B_T: long, 1 on real tokens.
    response_mask_B_T: bool, True on response tokens (the positions whose log-prob is computed).
    loss_mask_B_T: float, the sample's ``loss_mask`` on response tokens, 0 elsewhere.
    rollout_logprobs_B_T: float, ``rollout_log_probs`` on response tokens.
    advantages_B_T: float, ``advantages`` on response tokens, or ``None`` if no sample has them.
    teacher_logprobs_B_T: float, ``teacher_log_probs`` on response tokens (0 for samples without
        them, e.g. Combine's RL-only turns), or ``None`` when no sample has them.
    teacher_topk_ids_B_T_K / teacher_topk_logprobs_B_T_K: the teacher's top-K token ids and their
        log-probs at each response position (from ``Sample.teacher_topk_ids`` /
        ``teacher_topk_log_probs``, ``[R][K]`` per sample; top-K distillation), or ``None``.
    """

    input_ids_B_T: torch.Tensor
    attention_mask_B_T: torch.Tensor
    response_mask_B_T: torch.Tensor
    loss_mask_B_T: torch.Tensor
    rollout_logprobs_B_T: torch.Tensor
    advantages_B_T: torch.Tensor | None
    teacher_logprobs_B_T: torch.Tensor | None
    teacher_topk_ids_B_T_K: torch.Tensor | None = None
    teacher_topk_logprobs_B_T_K: torch.Tensor | None = None

    @property
    def num_loss_tokens(self) -> float:
        """``loss_mask_B_T.sum()`` as a float."""
        return float(self.loss_mask_B_T.sum())


def collate_samples(
    samples: Sequence[Sample], *, pad_token_id: int = 0, dtype: torch.dtype = torch.float32,
    device: torch.device | str | None = None,
) -> SampleBatch:
    """Stack ``samples`` into a right-padded :class:`SampleBatch`.

    Args:
        samples: one or more valid samples; each must have ``prompt_length >= 1`` (the first
            response token needs a prefix).
        pad_token_id: id written into padding columns.
        dtype: float dtype of the per-token float tensors.
        device: target device (default CPU).

    Raises:
        ValueError: empty ``samples``, a sample with an empty prompt, or only some samples
            carrying ``advantages``.
    """
    if not samples:
        raise ValueError("collate_samples needs at least one sample")
    have = [s.advantages is not None for s in samples]
    if any(have) and not all(have):
        raise ValueError("only some samples have advantages; fill all or none")
    B, T = len(samples), max(len(s.tokens) for s in samples)
    ids = torch.full((B, T), pad_token_id, dtype=torch.long)
    attn = torch.zeros(B, T, dtype=torch.long)
    resp = torch.zeros(B, T, dtype=torch.bool)
    loss = torch.zeros(B, T, dtype=dtype)
    rollout = torch.zeros(B, T, dtype=dtype)
    adv = torch.zeros(B, T, dtype=dtype) if samples[0].advantages is not None else None
    teacher = torch.zeros(B, T, dtype=dtype) if any(s.teacher_log_probs is not None for s in samples) else None
    for b, s in enumerate(samples):
        if s.prompt_length < 1:
            raise ValueError(f"sample {b} has an empty prompt; the first response token needs a prefix")
        n, p = len(s.tokens), s.prompt_length
        ids[b, :n] = torch.tensor(s.tokens, dtype=torch.long)
        attn[b, :n] = 1
        resp[b, p:n] = True
        loss[b, p:n] = torch.tensor(s.loss_mask, dtype=dtype)
        rollout[b, p:n] = torch.tensor(s.rollout_log_probs, dtype=dtype)
        if adv is not None:
            adv[b, p:n] = torch.tensor(s.advantages, dtype=dtype)
        if s.teacher_log_probs is not None:
            teacher[b, p:n] = torch.tensor(s.teacher_log_probs, dtype=dtype)
    topk_ids, topk_lp = _collate_topk(samples, T, dtype)
    batch = SampleBatch(ids, attn, resp, loss, rollout, adv, teacher, topk_ids, topk_lp)
    if device is not None:
        batch = SampleBatch(*(t.to(device) if t is not None else None for t in (
            batch.input_ids_B_T, batch.attention_mask_B_T, batch.response_mask_B_T, batch.loss_mask_B_T,
            batch.rollout_logprobs_B_T, batch.advantages_B_T, batch.teacher_logprobs_B_T,
            batch.teacher_topk_ids_B_T_K, batch.teacher_topk_logprobs_B_T_K)))
    return batch


def _collate_topk(samples: Sequence[Sample], T: int, dtype: torch.dtype):
    """``[B, T, K]`` teacher top-K ids / log-probs on response positions (None when no sample has
    them; samples without them get id 0 and log-prob 0, and must be loss-masked by the caller)."""
    rows = [(s.teacher_topk_ids, s.teacher_topk_log_probs) for s in samples]
    if not any(ids for ids, _ in rows):
        return None, None
    K = len(next(ids for ids, _ in rows if ids)[0])
    ids_B_T_K = torch.zeros(len(samples), T, K, dtype=torch.long)
    lp_B_T_K = torch.zeros(len(samples), T, K, dtype=dtype)
    for b, (s, (ids, lps)) in enumerate(zip(samples, rows)):
        if not ids:
            continue
        if len(ids) != s.response_length or len(lps) != s.response_length or any(len(r) != K for r in ids):
            raise ValueError(f"sample {b}: teacher top-K must be [response_length={s.response_length}][K={K}]")
        p = s.prompt_length
        ids_B_T_K[b, p:p + s.response_length] = torch.tensor(ids, dtype=torch.long)
        lp_B_T_K[b, p:p + s.response_length] = torch.tensor(lps, dtype=dtype)
    return ids_B_T_K, lp_B_T_K


def split_micro_batches(samples: Sequence[Sample], micro_batch_size: int) -> list[list[Sample]]:
    """Split ``samples`` in order into lists of ``micro_batch_size`` (the last may be shorter).

    Raises ``ValueError`` if ``micro_batch_size < 1``.
    """
    if micro_batch_size < 1:
        raise ValueError(f"micro_batch_size must be >= 1, got {micro_batch_size}")
    return [list(samples[i : i + micro_batch_size]) for i in range(0, len(samples), micro_batch_size)]
