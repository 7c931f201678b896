"""Advantages of on-policy distillation (OPD) and of Combine (OPD + Binary RL).

OPD, per response token ``t`` of a turn with an accepted hint:

    A_t = log pi_teacher(y_t | x + hint, y_<t) - log pi_old(y_t | x, y_<t)

where ``pi_old`` is the behaviour policy that sampled the turn: its log-probs are the sample's
``rollout_log_probs``, recorded at serving time (at most ``--max-staleness`` versions old), so no
extra student pass is needed. ``--opd-adv-clip C`` clips ``|A_t|`` to ``C`` since log-gaps are
unbounded. The loss is slime's PPO clipped surrogate on these advantages.

Combine dispatches each judged turn to branches (:func:`dispatch_branch`, the table below) and
mixes, per token,

    A_t = w_opd * Â_opd,t + w_rl * r̂

with each branch normalised over its own tokens before mixing, so neither dominates by scale:
``Â_opd = A_opd / (rms_opd + eps)`` where ``rms_opd`` is the root-mean-square of ``A_opd`` over
the loss tokens of all OPD-branch samples in the batch, and ``r̂ = r / (rms_rl + eps)`` with
``rms_rl`` over the loss tokens of the RL-branch samples (``rms_rl = 1`` for ±1 rewards). Weights
``--combine-w-opd`` / ``--combine-w-rl`` (env ``OPENCLAW_COMBINE_W_OPD`` / ``OPENCLAW_COMBINE_W_RL``,
default 1.0).

``--combine-rl-baseline batch-mean`` first subtracts the mean reward of the batch's RL-branch
samples from each of their rewards (a REINFORCE baseline over the batch, as REINFORCE++ /
GRPO normalise over a group; each live turn is its own prompt, so the batch is the only group):
with 2 accepted and 6 rejected replies an accepted one gets +1.5 and a rejected one -0.5 before
normalisation, so the rare replies the user accepted are not outweighed by the many they
rejected, and a batch that is all rejected (or all accepted) carries no RL signal. ``none``
(default) trains the rewards as they are.

Dispatch table (hint judge x PRM verdict), each turn at most one sample:

=================  ===========  =============
hint               verdict ±1   verdict 0
=================  ===========  =============
accepted           both         opd
rejected           rl           none (no sample)
=================  ===========  =============

References: OpenClaw-RL (Binary RL + hindsight OPD, "Combine"); Schulman et al. 2017 (PPO).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

from slime.record.sample import Sample

__all__ = ["BRANCHES", "RL_BASELINES", "dispatch_branch", "opd_token_advantages", "opd_advantages", "combine_advantages"]

BRANCHES = ("both", "opd", "rl", "none")
#: ``--combine-rl-baseline`` values
RL_BASELINES = ("none", "batch-mean")
_EPS = 1e-6


def dispatch_branch(hint_accepted: bool, verdict: int) -> str:
    """The Combine branch of a turn (see the module's table): ``both``, ``opd``, ``rl`` or ``none``.

    Raises:
        ValueError: ``verdict`` not in {-1, 0, 1}.
    """
    if verdict not in (-1, 0, 1):
        raise ValueError(f"verdict must be -1, 0 or 1, got {verdict!r}")
    if hint_accepted:
        return "both" if verdict else "opd"
    return "rl" if verdict else "none"


def opd_token_advantages(sample: Sample, clip: float | None = None) -> list[float]:
    """Per-token OPD advantages ``teacher - rollout`` of one sample (0 off the loss mask).

    Args:
        sample: has ``teacher_log_probs`` [R] and ``rollout_log_probs`` [R].
        clip: clip each advantage to ``[-clip, clip]`` (None: no clipping).

    Returns:
        ``R`` floats.

    Raises:
        ValueError: no ``teacher_log_probs``, or ``clip <= 0``.
    """
    if sample.teacher_log_probs is None:
        raise ValueError(f"sample {sample.turn_id or '?'} has no teacher_log_probs; score the teacher first")
    if clip is not None and not clip > 0:
        raise ValueError(f"--opd-adv-clip must be > 0, got {clip}")
    bound = math.inf if clip is None else clip
    return [max(-bound, min(bound, t - o)) if m else 0.0
            for t, o, m in zip(sample.teacher_log_probs, sample.rollout_log_probs, sample.loss_mask)]  # type: ignore[arg-type]


def opd_advantages(samples: Sequence[Sample], clip: float | None = None) -> tuple[list[Sample], dict]:
    """Set ``advantages`` of OPD samples; samples without a teacher get zero loss mask.

    Returns:
        ``(samples, metrics)`` with ``opd/n``, ``opd/adv_mean``, ``opd/adv_abs_mean`` (of the
        advantages used), ``opd/adv_clipfrac`` (share of loss tokens at the clip bound) and
        ``opd/adv_clip`` (the bound in force; only with ``--opd-adv-clip``).
    """
    total = abs_total = clipped = n_tok = 0.0
    n = 0
    for s in samples:
        if s.teacher_log_probs is None:
            s.loss_mask = [0] * s.response_length
            s.advantages = [0.0] * s.response_length
            continue
        s.advantages = opd_token_advantages(s, clip)
        n += 1
        for a, m in zip(s.advantages, s.loss_mask):  # type: ignore[arg-type]
            if m:
                n_tok += 1
                total += a
                abs_total += abs(a)
                clipped += float(clip is not None and abs(a) >= clip)
    d = max(1.0, n_tok)
    metrics = {"opd/n": n, "opd/adv_mean": total / d, "opd/adv_abs_mean": abs_total / d,
               "opd/adv_clipfrac": clipped / d}
    if clip is not None:
        metrics["opd/adv_clip"] = clip
    return list(samples), metrics


def _rms(values: list[float]) -> float:
    return math.sqrt(sum(v * v for v in values) / len(values)) if values else 0.0


def _branch(s: Sample) -> str:
    b = (s.metadata.get("judgement") or {}).get("branch")
    if b in BRANCHES:
        return b
    return dispatch_branch(s.teacher_log_probs is not None, int(round(s.reward)) if s.reward else 0)


def combine_advantages(samples: Sequence[Sample], w_opd: float = 1.0, w_rl: float = 1.0,
                       clip: float | None = None, rl_baseline: str = "none") -> tuple[list[Sample], dict]:
    """Combine's per-token advantages (module docstring), written into ``advantages``.

    Args:
        samples: judged samples; the branch comes from ``metadata["judgement"]["branch"]``
            (else from the presence of ``teacher_log_probs`` and the reward).
        w_opd / w_rl: branch weights (>= 0).
        clip: ``--opd-adv-clip`` applied to the raw OPD advantages before normalisation.
        rl_baseline: ``none`` or ``batch-mean`` (``--combine-rl-baseline``, module docstring).

    Returns:
        ``(samples, metrics)``: ``combine/n_{both,opd,rl,none}``, ``combine/opd_rms``,
        ``combine/rl_rms`` (the normalisers), ``combine/opd_contrib`` and ``combine/rl_contrib``
        (mean ``|w * Â|`` of each branch over all loss tokens of the batch), ``combine/w_opd`` and
        ``combine/w_rl`` (the weights in force), ``combine/rl_baseline`` (the mean reward
        subtracted; 0 with ``none``).

    Raises:
        ValueError: negative weights, an unknown ``rl_baseline``, or an OPD-branch sample without
            ``teacher_log_probs``.
    """
    if w_opd < 0 or w_rl < 0:
        raise ValueError(f"combine weights must be >= 0, got w_opd={w_opd}, w_rl={w_rl}")
    if rl_baseline not in RL_BASELINES:
        raise ValueError(f"rl_baseline must be one of {', '.join(RL_BASELINES)}, got {rl_baseline!r}")
    branches = [_branch(s) for s in samples]
    counts = Counter(branches)
    opd_raw = {i: opd_token_advantages(s, clip) for i, (s, b) in enumerate(zip(samples, branches))
               if b in ("both", "opd")}
    opd_tokens = [a for i, adv in opd_raw.items() for a, m in zip(adv, samples[i].loss_mask) if m]
    rl_rewards = [float(s.reward) for s, b in zip(samples, branches) if b in ("both", "rl")]
    baseline = sum(rl_rewards) / len(rl_rewards) if rl_baseline == "batch-mean" and rl_rewards else 0.0
    rl_tokens = [float(s.reward) - baseline for s, b in zip(samples, branches) if b in ("both", "rl")
                 for m in s.loss_mask if m]
    opd_rms, rl_rms = _rms(opd_tokens), _rms(rl_tokens)
    opd_contrib = rl_contrib = n_tok = 0.0
    for i, (s, b) in enumerate(zip(samples, branches)):
        if b == "none":
            s.loss_mask = [0] * s.response_length
        adv = [0.0] * s.response_length
        for t, m in enumerate(s.loss_mask):
            if not m:
                continue
            n_tok += 1
            if i in opd_raw:
                a = w_opd * opd_raw[i][t] / (opd_rms + _EPS)
                adv[t] += a
                opd_contrib += abs(a)
            if b in ("both", "rl"):
                a = w_rl * (float(s.reward) - baseline) / (rl_rms + _EPS)
                adv[t] += a
                rl_contrib += abs(a)
        s.advantages = adv
    d = max(1.0, n_tok)
    metrics = {f"combine/n_{b}": counts.get(b, 0) for b in BRANCHES}
    metrics.update({"combine/opd_rms": opd_rms, "combine/rl_rms": rl_rms,
                    "combine/opd_contrib": opd_contrib / d, "combine/rl_contrib": rl_contrib / d,
                    "combine/w_opd": w_opd, "combine/w_rl": w_rl, "combine/rl_baseline": baseline})
    return list(samples), metrics
