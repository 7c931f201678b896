"""Collate :class:`~slime.record.sample.Sample` records into right-padded ``[B, T]`` training tensors.

Every per-token tensor is aligned with ``input_ids_B_T`` (the convention of
:mod:`slime.algorithms.logprobs`): a sample with prompt length ``P`` and response length ``R`` has its
response quantities at columns ``P .. P + R - 1``; prompt and padding columns hold 0. The result
plugs straight into :func:`slime.algorithms.logprobs.compute_token_logprobs` (``response_mask_B_T``) and
:class:`slime.algorithms.losses.LossInputs`. ``T`` is the sequence axis everywhere (``T = max(len(tokens))``).

Follows slime's per-sample packing of ``tokens``/``loss_masks``/``rollout_log_probs``
(THUDM/slime), without sequence packing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from slime.record.sample import LogprobSource, Sample

__all__ = ["SampleBatch", "collate_multimodal", "collate_samples", "sampling_params_of", "split_micro_batches"]


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
    temperature_B / top_p_B: ``[B]`` float64, the temperature and nucleus mass each sample's
        log-probs are computed at (:func:`sampling_params_of`).
    engine_logprobs_B: ``[B]`` bool, True where ``rollout_log_probs`` are the engine's sampling
        log-probs (``Sample.logprob_source == "engine"``), comparable with the trainer's.
    multimodal: the samples' ``multimodal_train_inputs`` concatenated in batch order (``pixel_values``
        ``[sum N_patches, D]``, ``image_grid_thw`` ``[sum N_images, 3]``), or None when no sample
        has images (:func:`collate_multimodal`).
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
    temperature_B: torch.Tensor | None = None
    top_p_B: torch.Tensor | None = None
    engine_logprobs_B: torch.Tensor | None = None
    multimodal: dict[str, torch.Tensor] | None = None

    @property
    def num_loss_tokens(self) -> float:
        """``loss_mask_B_T.sum()`` as a float."""
        return float(self.loss_mask_B_T.sum())


def sampling_params_of(sample: Sample, default_temperature: float = 1.0) -> tuple[float, float]:
    """``(temperature, top_p)`` the trainer computes ``sample``'s log-probs at, so they are the
    log-probs of the distribution the engine sampled from.

    The sample's own ``sampling_temperature`` / ``sampling_top_p``; ``default_temperature``
    (``--rollout-temperature``) and 1.0 where unknown. Greedy decoding (temperature 0) gives
    ``(1.0, 1.0)``: the serving engine reports the raw log-softmax for greedy tokens.
    """
    t = default_temperature if sample.sampling_temperature is None else sample.sampling_temperature
    p = 1.0 if sample.sampling_top_p is None else sample.sampling_top_p
    if t <= 0:
        return 1.0, 1.0
    return float(t), float(p)


def collate_samples(
    samples: Sequence[Sample], *, pad_token_id: int = 0, dtype: torch.dtype = torch.float32,
    device: torch.device | str | None = None, default_temperature: float = 1.0,
) -> SampleBatch:
    """Stack ``samples`` into a right-padded :class:`SampleBatch`.

    Args:
        samples: one or more valid samples; each must have ``prompt_length >= 1`` (the first
            response token needs a prefix).
        pad_token_id: id written into padding columns.
        dtype: float dtype of the per-token float tensors.
        device: target device (default CPU).
        default_temperature: temperature of samples that recorded none (``--rollout-temperature``).

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
    params = [sampling_params_of(s, default_temperature) for s in samples]
    temperature = torch.tensor([t for t, _ in params], dtype=torch.float64)
    top_p = torch.tensor([p for _, p in params], dtype=torch.float64)
    engine = torch.tensor([s.logprob_source == LogprobSource.ENGINE for s in samples], dtype=torch.bool)
    batch = SampleBatch(ids, attn, resp, loss, rollout, adv, teacher, topk_ids, topk_lp, temperature, top_p, engine)
    if device is not None:
        batch = SampleBatch(*(t.to(device) if t is not None else None for t in (
            batch.input_ids_B_T, batch.attention_mask_B_T, batch.response_mask_B_T, batch.loss_mask_B_T,
            batch.rollout_logprobs_B_T, batch.advantages_B_T, batch.teacher_logprobs_B_T,
            batch.teacher_topk_ids_B_T_K, batch.teacher_topk_logprobs_B_T_K, batch.temperature_B, batch.top_p_B,
            batch.engine_logprobs_B)))
    batch.multimodal = collate_multimodal(samples, device)
    return batch


def collate_multimodal(samples: Sequence[Sample], device: torch.device | str | None = None
                       ) -> dict[str, torch.Tensor] | None:
    """The ``multimodal_train_inputs`` of ``samples`` concatenated along the first axis, in batch
    order (the order the model consumes images: row by row, each row's images in token order).

    Returns:
        ``{key: tensor}`` for every key any sample has (``pixel_values`` ``[sum N_patches, D]``,
        ``image_grid_thw`` ``[sum N_images, 3]``), on ``device``; None when no sample has any.

    Raises:
        ValueError: the samples' pixel rows differ in width (images from different processors).
    """
    parts = [s.multimodal_train_inputs for s in samples if s.multimodal_train_inputs]
    if not parts:
        return None
    out = {}
    for key in sorted({k for p in parts for k in p}):
        values = [p[key] for p in parts if key in p]
        if len({tuple(v.shape[1:]) for v in values}) != 1:
            raise ValueError(f"multimodal_train_inputs[{key!r}] rows differ in shape across the batch: "
                             f"{sorted({tuple(v.shape[1:]) for v in values})}")
        out[key] = torch.cat(values, 0).to(device) if device is not None else torch.cat(values, 0)
    return out


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
