"""Step-wise advantages (``--advantage-estimator step_wise``): one normalised reward per agent step.

Upstream OpenClaw-RL's ``step_wise`` estimator (its ``slime/ray/rollout.py``
``_post_process_step_wise_rewards`` and ``megatron_utils/loss.py``), on the typed
:class:`slime.record.sample.Trajectory` the agent rollout sets on each sample (``Sample.trajectory``; upstream
keeps it in the sample metadata) (docs/track2.md, "How an episode becomes training data" and "Advantages"):

``trajectory.step_spans``      ``[(start, end), ...]`` in response coordinates: each step's action tokens
``trajectory.step_indices``    the global step index ``k`` of each span (None: ``0, 1, ...``)
``trajectory.step_scores``     the step PRM's score of each span (None: PRM off, every score 0.0)
``trajectory.group_index``     the prompt the trajectory answers (None: ``i // --n-samples-per-prompt``)
``trajectory.id``              the trajectory (no ``Sample.trajectory``: the sample is its own trajectory)
``sample.reward``               the trajectory's outcome (the same on every step-sample of one trajectory)

A sample without step spans is one step spanning its whole response (index 0), so a plain
prompt rollout trains as GRPO with population std and constant groups dropped.

Per step ``k`` of a trajectory::

    r_k = reward + prm_step_coef * step_scores[k]

This is the one place ``--prm-step-coef`` is applied: the step PRM judge stores raw scores (mean of
its ``+1/-1`` votes). Upstream applies its coefficient inconsistently: the SWE and GUI families add
``coef * mean(step scores)`` to the scalar outcome only (the per-step scores stay unscaled), and
the terminal family reads a different flag (``prm_turn_coef``) so ``--prm-step-coef`` never reaches
it. Here every family gets the same formula.

Normalisation: the rewards of one **bucket**, a ``(group, step index)`` pair, over the group's
trajectories (each trajectory's step ``k`` counted once, also under ``--dynamic-history`` where
several step-samples share one ``trajectory_id``), become ``(r - mean) / (std + 1e-6)`` with the
population std. A bucket of one trajectory keeps its raw ``r_k``. A bucket whose rewards are all
equal (range <= 1e-12) carries no signal and is **dropped**: its spans get advantage 0 and their
tokens leave the loss mask (upstream keeps them in the mask with advantage 0, which only dilutes the
token-mean loss; it also keeps one constant bucket when all are constant, which we do not). A sample
left with no kept step is removed from the step's batch. ``--disable-rewards-normalization``
broadcasts the raw ``r_k`` (nothing dropped); ``--disable-grpo-std-normalization`` subtracts the
bucket mean only.

Each kept step's value is broadcast over its span's tokens under the loss mask; every other token
(observations, tokens outside any span) has advantage 0, and loss tokens outside every span leave
the loss mask (no reward is defined for them; counted in ``step_wise/unspanned_tokens``).
Failed samples (``status == failed``) are not bucketed and keep advantage 0.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from slime.config.flags import flag
from slime.methods.base import Method
from slime.record.sample import Sample, SampleStatus

__all__ = ["StepWiseFlags", "StepWiseMethod", "sample_steps", "step_wise_advantages"]

EPS = 1e-6
_EQUAL_TOL = 1e-12


@dataclass(frozen=True)
class StepWiseFlags:
    """Flags of ``--advantage-estimator step_wise``."""

    prm_step_coef: float = flag(1.0, "weight of the step PRM score in each step's reward: r_k = outcome + "
                                "coef * step PRM score (applied here only)", env="PRM_STEP_COEF")


@dataclass(frozen=True)
class _Step:
    span: tuple[int, int]
    index: int
    score: float


def sample_steps(sample: Sample, where: str = "sample") -> list[_Step]:
    """The steps of one sample from its :class:`~slime.record.sample.Trajectory` (module docstring).

    Args:
        sample: a judged sample.
        where: names the sample in error messages.

    Returns:
        One ``_Step(span, index, score)`` per span, in order; a sample without trajectory or spans
        is one step ``(0, R)`` with index 0 and score 0.0 (none when ``R == 0``).

    Raises:
        ValueError: a span outside ``[0, R]`` or empty, or a step PRM score that is not finite.
    """
    R = sample.response_length
    traj = sample.trajectory
    if traj is None or not traj.step_spans:
        return [_Step((0, R), 0, 0.0)] if R > 0 else []
    traj.check_spans(R)  # a plugin may have changed it after the sample was built
    spans = traj.step_spans
    indices = list(range(len(spans))) if traj.step_indices is None else traj.step_indices
    scores = [0.0] * len(spans) if traj.step_scores is None else traj.step_scores
    out = []
    for span, k, score in zip(spans, indices, scores):
        if not math.isfinite(score):
            raise ValueError(f"step_wise: {where} step {k} has PRM score {score}")
        out.append(_Step(tuple(span), int(k), float(score)))
    return out


def _keys(samples: Sequence[Sample], n_per_prompt: int, dynamic: bool) -> list[tuple[Any, Any]]:
    """``(group, trajectory)`` of each sample (module docstring for the fallbacks)."""
    out = []
    for i, s in enumerate(samples):
        traj = s.trajectory
        if dynamic and (traj is None or traj.group_index is None):
            raise ValueError(f"--dynamic-history: sample {i} has no trajectory with a group index; the "
                             "agent rollout must set Sample.trajectory (id and group_index) on every step-sample")
        group = i // max(1, n_per_prompt) if traj is None or traj.group_index is None else traj.group_index
        out.append((group, ("#sample", i) if traj is None else traj.id))
    return out


def _normalise(values: list[float], normalize: bool, std_norm: bool) -> tuple[list[float] | None, str]:
    """Normalised bucket values and the bucket's kind (``single``, ``dropped``, ``kept``); None when dropped."""
    if not normalize:
        return list(values), "raw"
    if len(values) == 1:
        return list(values), "single"
    if max(values) - min(values) <= _EQUAL_TOL:
        return None, "dropped"
    mean = sum(values) / len(values)
    centred = [v - mean for v in values]
    if not std_norm:
        return centred, "kept"
    std = math.sqrt(sum(c * c for c in centred) / len(values))  # population std
    return [c / (std + EPS) for c in centred], "kept"


def step_wise_advantages(samples: Sequence[Sample], *, coef: float, n_per_prompt: int, dynamic: bool = False,
                         normalize: bool = True, std_norm: bool = True) -> tuple[list[Sample], dict[str, float]]:
    """Set per-token step-wise advantages (module docstring) and narrow the loss masks.

    Args:
        samples: the step's judged samples.
        coef: ``--prm-step-coef``.
        n_per_prompt: ``--n-samples-per-prompt`` (groups when a sample has no group index).
        dynamic: ``--dynamic-history`` (then every sample needs a trajectory with a group index).
        normalize: False for ``--disable-rewards-normalization`` (raw step rewards).
        std_norm: False for ``--disable-grpo-std-normalization`` (mean-centring only).

    Returns:
        ``(kept samples, metrics)``: samples left with no kept step are removed; metrics
        ``step_wise/steps``, ``buckets``, ``single_buckets``, ``dropped_buckets``,
        ``removed_samples``, ``unspanned_tokens``, ``adv_abs_mean`` (mean ``|A|`` over the loss
        tokens of the kept samples).

    Raises:
        ValueError: a sample without reward, a non-finite step score, missing trajectories under
            ``dynamic``, or one trajectory whose step ``k`` has two different rewards.
    """
    keys = _keys(samples, n_per_prompt, dynamic)
    steps: list[list[_Step]] = []
    buckets: dict[tuple[Any, int], dict[Any, float]] = {}
    for i, s in enumerate(samples):
        if s.status == SampleStatus.FAILED:
            steps.append([])
            continue
        if s.reward is None:
            raise ValueError(f"step_wise: sample {i} has no reward; judge it before computing advantages")
        steps.append(sample_steps(s, f"sample {i}"))
        group, traj = keys[i]
        for st in steps[-1]:
            r = float(s.reward) + coef * st.score
            seen = buckets.setdefault((group, st.index), {})
            if traj in seen and abs(seen[traj] - r) > _EQUAL_TOL:
                raise ValueError(f"step_wise: trajectory {traj!r} step {st.index} has two rewards "
                                 f"({seen[traj]} and {r})")
            seen[traj] = r
    values: dict[tuple[Any, int], dict[Any, float] | None] = {}
    kinds = {"single": 0, "dropped": 0, "kept": 0, "raw": 0}
    for key, by_traj in buckets.items():
        normed, kind = _normalise(list(by_traj.values()), normalize, std_norm)
        kinds[kind] += 1
        values[key] = None if normed is None else dict(zip(by_traj, normed))
    kept: list[Sample] = []
    removed = unspanned = n_tok = 0
    abs_sum = 0.0
    for i, s in enumerate(samples):
        adv = [0.0] * s.response_length
        if s.status == SampleStatus.FAILED:
            s.advantages = adv
            kept.append(s)
            continue
        group, traj = keys[i]
        mask = [0] * s.response_length
        n_kept = 0
        for st in steps[i]:
            bucket = values[(group, st.index)]
            if bucket is None:
                continue  # dropped: advantage 0, out of the loss
            n_kept += 1
            for t in range(*st.span):
                if s.loss_mask[t]:  # type: ignore[index]
                    mask[t], adv[t] = 1, bucket[traj]
        if n_kept == 0:
            removed += 1
            continue
        spanned = {t for st in steps[i] for t in range(*st.span)}
        unspanned += sum(1 for t, m in enumerate(s.loss_mask) if m and t not in spanned)  # type: ignore[arg-type]
        s.loss_mask, s.advantages = mask, adv
        n_tok += sum(mask)
        abs_sum += sum(abs(a) for a in adv)
        kept.append(s)
    metrics = {"step_wise/steps": float(sum(len(x) for x in steps)), "step_wise/buckets": float(len(buckets)),
               "step_wise/single_buckets": float(kinds["single"]), "step_wise/dropped_buckets": float(kinds["dropped"]),
               "step_wise/removed_samples": float(removed), "step_wise/unspanned_tokens": float(unspanned),
               "step_wise/adv_abs_mean": abs_sum / n_tok if n_tok else 0.0}
    return kept, metrics


class StepWiseMethod(Method):
    """``--advantage-estimator step_wise``: per-step rewards normalised per ``(group, step)`` bucket
    (module docstring); agent rollouts, with or without ``--dynamic-history``."""

    name = "step_wise"
    Flags = StepWiseFlags

    def needs_groups(self) -> bool:
        """True unless ``--disable-rewards-normalization`` (buckets compare a group's trajectories)."""
        return not self.cfg.disable_rewards_normalization

    def compute_advantages(self, samples: Sequence[Sample]) -> tuple[list[Sample], dict[str, float]]:
        """:func:`step_wise_advantages` with the run's flags; raises ``ValueError`` as it does."""
        return step_wise_advantages(samples, coef=self.flags.prm_step_coef, n_per_prompt=self.cfg.n_samples_per_prompt,
                                    dynamic=bool(self.cfg.dynamic_history),
                                    normalize=not self.cfg.disable_rewards_normalization,
                                    std_norm=not self.cfg.disable_grpo_std_normalization)
