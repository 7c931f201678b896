"""Pieces of :meth:`slime.trainer.backend.TrainingBackend.train_step`: the micro-batch record, the metric
keys every step reports, and the combination of the train ranks' metrics (data parallel)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from slime.record.batch import SampleBatch
from slime.algorithms.losses import LossOutputs
from slime.record.sample import Sample

__all__ = ["BASE_METRICS", "MicroBatch", "empty_metrics", "gathered_metrics"]

#: metric keys every :meth:`slime.trainer.backend.TrainingBackend.train_step` result holds (skipped steps included).
BASE_METRICS = (
    "loss", "pg_loss", "pg_clipfrac", "approx_kl", "kl_loss", "entropy", "grad_norm",
    "n_samples", "n_trained_samples", "n_tokens", "n_seq_tokens", "n_tokens_without_engine_logprobs",
    "train_rollout_logprob_abs_diff", "train_rollout_logprob_abs_diff_max", "staleness_mean", "staleness_min",
    "staleness_max", "tokens_per_s", "step_time_s", "skipped", "weight_version",
)


@dataclass
class MicroBatch:
    """One micro-batch: collated tensors plus what the no-grad pass computed. ``filler``: a
    zero-weighted pass of a data-parallel rank with a smaller share, that keeps the ranks'
    collectives in step (its gradient is 0 and its metrics are not counted)."""

    samples: list[Sample]
    batch: SampleBatch
    filler: bool = False
    old_logprobs_B_T: torch.Tensor | None = None
    ref_logprobs_B_T: torch.Tensor | None = None
    entropy_B_T: torch.Tensor | None = None


def empty_metrics(samples: Sequence[Sample], weight_version: int) -> dict[str, float]:
    """Every key of :data:`BASE_METRICS` at 0, with ``n_samples``, ``weight_version`` and the
    staleness of ``samples`` (``weight_version`` minus each sample's) filled in."""
    metrics = {k: 0.0 for k in BASE_METRICS}
    metrics["n_samples"] = float(len(samples))
    metrics["weight_version"] = float(weight_version)
    if samples:
        stale = [weight_version - s.weight_version for s in samples]
        metrics.update(staleness_mean=sum(stale) / len(stale), staleness_min=float(min(stale)),
                       staleness_max=float(max(stale)))
    return metrics


def gathered_metrics(parts: list[tuple]) -> tuple[float, float, float, float, list[LossOutputs]]:
    """The step metrics of all ranks combined: ``(loss, |diff| sum, |diff| max, compared tokens,
    loss outputs)`` from each rank's ``(loss, |diff| sum, |diff| max, compared tokens, [(sums,
    counts)])``; the outputs carry no loss tensor (only :func:`slime.algorithms.losses.reduce_metrics` reads them)."""
    outputs = [LossOutputs(loss=torch.zeros(()), num_tokens=0.0, sums=sums, counts=counts)
               for part in parts for sums, counts in part[4]]
    return (sum(p[0] for p in parts), sum(p[1] for p in parts), max(p[2] for p in parts),
            sum(p[3] for p in parts), outputs)
