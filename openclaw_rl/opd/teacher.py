"""The OPD teacher scored on the student's exact tokens.

The teacher's prompt is the turn's prompt with the hint added
(:mod:`openclaw_rl.opd.hint_prompt`, built where the turn is judged). The teacher sequence is
``teacher_prompt_ids + response_ids``, where ``response_ids`` are the student's sampled ids taken
from the sample unchanged: the response is never re-rendered or re-tokenized, so teacher log-prob
``t`` and student log-prob ``t`` are both of response token ``t``.

:func:`response_logprobs` scores ``R`` response tokens after any prompt in one forward pass.
:func:`score_teacher` fills ``Sample.teacher_log_probs`` for a batch (the advantage's baseline is
the sample's own ``rollout_log_probs``, so no student pass is needed), with the teacher source of
``--opd-teacher``:

* ``base`` (default): the frozen base weights (LoRA: the adapter disabled; full fine-tuning: the
  base checkpoint loaded once from ``--model-path``, so a resumed run still uses the base);
* ``live``: the current policy.

Reference: OpenClaw-RL hindsight-hint OPD; Agarwal et al. 2024 (GKD); Thinking Machines,
"On-Policy Distillation" (2025): per-token reverse-KL advantage ``log p_teacher - log p_student``.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Sequence
from typing import Any

import torch

from slime.algorithms.logprobs import compute_token_logprobs
from slime.record.sample import Sample

__all__ = ["TEACHER_SOURCES", "response_logprobs", "response_logprobs_topk", "score_teacher", "teacher_ids"]

log = logging.getLogger(__name__)

TEACHER_SOURCES = ("base", "live")


def response_logprobs(model: torch.nn.Module, prompt_ids: Sequence[int], response_ids: Sequence[int],
                      temperature: float = 1.0, device: torch.device | str | None = None) -> torch.Tensor:
    """Log-probs of ``response_ids`` after ``prompt_ids`` under ``model``, one forward pass, no grad.

    Args:
        model: a causal LM (peft-wrapped is fine).
        prompt_ids: ``P >= 1`` context ids. response_ids: ``R`` ids to score.
        temperature: logits are divided by it (match the sampling temperature).
        device: where to run (default: the model's device).

    Returns:
        ``[R]`` float tensor on CPU, entry ``t`` = ``log p(response_ids[t] | prompt, response[:t])``.

    Raises:
        ValueError: empty ``prompt_ids``.
    """
    if not prompt_ids:
        raise ValueError("the teacher prompt is empty")
    dev = device or next(model.parameters()).device
    ids = list(prompt_ids) + list(response_ids)
    P, R = len(prompt_ids), len(response_ids)
    ids_1_T = torch.tensor([ids], dtype=torch.long, device=dev)
    resp_1_T = torch.zeros_like(ids_1_T, dtype=torch.bool)
    resp_1_T[0, P:] = True
    with torch.no_grad():
        out = compute_token_logprobs(model, ids_1_T, torch.ones_like(ids_1_T), resp_1_T,
                                     temperature=temperature)
    return out.logprobs_B_T[0, P:P + R].detach().float().cpu()


def response_logprobs_topk(model: torch.nn.Module, prompt_ids: Sequence[int], response_ids: Sequence[int],
                           k: int, temperature: float = 1.0) -> tuple[list[float], list[list[int]], list[list[float]]]:
    """Like :func:`response_logprobs`, plus the model's top-``k`` next tokens at each response
    position, from the same forward pass (full ``[R, V]`` logits; no grad).

    Returns:
        ``(logprobs [R], topk_ids [R][k], topk_logprobs [R][k])`` (logits divided by ``temperature``).

    Raises:
        ValueError: empty ``prompt_ids`` or ``k < 1``.
    """
    if not prompt_ids or k < 1:
        raise ValueError("the teacher prompt is empty or k < 1")
    dev = next(model.parameters()).device
    P, R = len(prompt_ids), len(response_ids)
    ids_1_T = torch.tensor([list(prompt_ids) + list(response_ids)], dtype=torch.long, device=dev)
    with torch.no_grad():
        logits_R_V = model(input_ids=ids_1_T).logits[0, P - 1:P + R - 1].float() / temperature
        logp_R_V = torch.log_softmax(logits_R_V, -1)
        taken_R = logp_R_V.gather(-1, ids_1_T[0, P:, None]).squeeze(-1)
        top = logp_R_V.topk(k, dim=-1)
    return taken_R.cpu().tolist(), top.indices.cpu().tolist(), top.values.cpu().tolist()


@contextlib.contextmanager
def _teacher_model(backend: Any, source: str):
    """Yield the teacher module for ``source`` (see module docstring); eval mode, no grad."""
    if source == "live":
        yield backend.model
    elif backend.is_lora:
        with backend.model.disable_adapter():
            yield backend.model
    else:
        if backend.ref_model is None:  # the base checkpoint, loaded once from disk
            from openclaw_rl.models import load_model
            base = load_model(backend.cfg.model_path, dtype=backend.param_dtype).to(backend.device)
            backend.ref_model = base.eval().requires_grad_(False)
        yield backend.ref_model


def teacher_ids(sample: Sample) -> list[int] | None:
    """The sample's teacher prompt ids: ``metadata["teacher_prompt_ids"]``, else those the OPD judge
    stored with its judgement (``metadata["judgement"]["teacher_prompt_ids"]``); None without a hint."""
    return sample.metadata.get("teacher_prompt_ids") or (sample.metadata.get("judgement") or {}).get(
        "teacher_prompt_ids")


def score_teacher(backend: Any, samples: Sequence[Sample], source: str = "base",
                  topk: int | None = None) -> list[Sample]:
    """Fill ``teacher_log_probs`` for the samples that have teacher prompt ids (:func:`teacher_ids`).

    One teacher forward pass per such sample; others are returned untouched. When the teacher
    prompt equals the student prompt (identical contexts), the teacher log-probs are set to the
    sample's ``rollout_log_probs`` without a forward pass, so the OPD advantage is exactly zero.

    Args:
        backend: a :class:`slime.trainer.backend.TrainingBackend` (its model, LoRA state, temperature).
        samples: the rollout's samples.
        source: ``"base"`` or ``"live"`` (``--opd-teacher``).
        topk: also store the teacher's top-K tokens per position (``--distill-topk``) in
            ``Sample.teacher_topk_ids`` / ``teacher_topk_log_probs`` (``[R][K]``), from the
            same forward pass (identical contexts: from the current policy).

    Returns:
        The same samples (mutated), ``teacher_log_probs`` [R] at the sampling temperature.

    Raises:
        ValueError: unknown ``source``.
    """
    if source not in TEACHER_SOURCES:
        raise ValueError(f"--opd-teacher must be one of {', '.join(TEACHER_SOURCES)}, got {source!r}")
    todo = [(s, teacher_ids(s)) for s in samples if teacher_ids(s)]
    if not todo:
        return list(samples)
    was_training = backend.model.training
    backend.model.eval()
    try:
        for s, t_ids in todo:
            if list(t_ids) == s.prompt_tokens:
                s.teacher_log_probs = list(s.rollout_log_probs)
                if topk:
                    _, s.teacher_topk_ids, s.teacher_topk_log_probs = response_logprobs_topk(
                        backend.model, t_ids, s.response_tokens, topk, backend.temperature)
        with _teacher_model(backend, source) as teacher:
            for s, t_ids in todo:
                if s.teacher_log_probs is not None:
                    continue
                if topk:
                    s.teacher_log_probs, s.teacher_topk_ids, s.teacher_topk_log_probs = \
                        response_logprobs_topk(teacher, t_ids, s.response_tokens, topk, backend.temperature)
                else:
                    s.teacher_log_probs = response_logprobs(teacher, t_ids, s.response_tokens,
                                                            backend.temperature).tolist()
    finally:
        backend.model.train(was_training)
    for s, _ in todo:
        s.validate()
    return list(samples)
