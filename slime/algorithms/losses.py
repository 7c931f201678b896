"""Policy-gradient loss: PPO clipped surrogate + KL to reference + entropy bonus + TIS.

Typed inputs and outputs in the style of prime-rl: :class:`LossInputs` carries per-token tensors
(``[B, T]``, any ``T`` as long as all agree) and the global batch's token count;
:class:`LossOutputs` carries the differentiable scalar loss plus per-metric sums and token counts,
so metrics reduce exactly across micro-batches (:func:`reduce_metrics`).

Normalisation is a token-level mean over the WHOLE global batch (DAPO / Dr. GRPO "token-level"
aggregation): a micro-batch contributes ``sum(mask * per_token_loss) / global_num_tokens``. Summing
the gradients of all micro-batches therefore gives exactly the gradient of one pass over the whole
global batch, whatever the split.

References:
    PPO clip: Schulman et al. 2017, "Proximal Policy Optimization Algorithms".
    Clip-higher (``eps_clip_high``): Yu et al. 2025, "DAPO".
    Dual clip (``eps_clip_c``): Ye et al. 2020, "Mastering Complex Control in MOBA Games with DRL".
    KL estimators k1/k2/k3: J. Schulman, "Approximating KL Divergence" (2020 note); ``low_var_kl``
    is k3 clamped to [-10, 10] as in slime/verl.
    Truncated importance sampling: Yao et al. 2025, "Your Efficient RL Framework Secretly Brings
    You Off-Policy RL Training" (weights ``min(exp(old_train_logp - rollout_logp), cap)``).
    Code layout follows slime's ``compute_policy_loss``/``compute_approx_kl`` (THUDM/slime).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from slime.config.checks import KL_LOSS_TYPES

__all__ = [
    "LossInputs",
    "LossOutputs",
    "PolicyLossConfig",
    "global_token_count",
    "kl_estimate",
    "policy_loss",
    "reduce_metrics",
    "tis_weights",
]


@dataclass(frozen=True)
class PolicyLossConfig:
    """Hyper-parameters of :func:`policy_loss` (the loss subset of ``SlimeConfig``).

    ``eps_clip_high=None`` means symmetric clipping (``eps_clip``). Raises ``ValueError`` on
    ``eps_clip <= 0``, ``eps_clip_high <= 0``, ``eps_clip_c <= 1``, unknown ``kl_loss_type``,
    negative coefficients or ``tis_cap <= 0``.
    """
    eps_clip: float = 0.2
    eps_clip_high: float | None = None
    eps_clip_c: float | None = None
    use_kl_loss: bool = False
    kl_loss_coef: float = 0.0
    kl_loss_type: str = "k1"
    entropy_coef: float = 0.0
    use_tis: bool = False
    tis_cap: float = 2.0

    def __post_init__(self) -> None:
        if self.eps_clip_high is None:
            object.__setattr__(self, "eps_clip_high", self.eps_clip)
        if not self.eps_clip > 0 or not self.eps_clip_high > 0:
            raise ValueError(f"eps_clip and eps_clip_high must be > 0, got {self.eps_clip}, {self.eps_clip_high}")
        if self.eps_clip_c is not None and not self.eps_clip_c > 1:
            raise ValueError(f"eps_clip_c must be > 1, got {self.eps_clip_c}")
        if self.kl_loss_type not in KL_LOSS_TYPES:
            raise ValueError(f"kl_loss_type {self.kl_loss_type!r} is unknown; choose one of {', '.join(KL_LOSS_TYPES)}")
        if self.kl_loss_coef < 0 or self.entropy_coef < 0:
            raise ValueError("kl_loss_coef and entropy_coef must be >= 0")
        if not self.tis_cap > 0:
            raise ValueError(f"tis_cap must be > 0, got {self.tis_cap}")

    @classmethod
    def from_config(cls, cfg: Any) -> "PolicyLossConfig":
        """Take the loss fields from a :class:`slime.config.arguments.SlimeConfig` (or any object with them)."""
        return cls(
            eps_clip=cfg.eps_clip, eps_clip_high=cfg.eps_clip_high, eps_clip_c=cfg.eps_clip_c,
            use_kl_loss=cfg.use_kl_loss, kl_loss_coef=cfg.kl_loss_coef, kl_loss_type=cfg.kl_loss_type,
            entropy_coef=cfg.entropy_coef, use_tis=cfg.use_tis, tis_cap=cfg.tis_cap,
        )


@dataclass
class LossInputs:
    """Per-token tensors of one micro-batch, all ``[B, T]`` on one device.

    logprobs_B_T: current policy log-probs of the realised tokens (carries grad).
    old_logprobs_B_T: log-probs of the policy before this update (the PPO ratio's denominator);
        with no separate recompute pass, the rollout log-probs.
    advantages_B_T: per-token advantages.
    loss_mask_B_T: 1.0 for tokens in the loss, 0.0 otherwise (padding, prompt, tool output).
    global_num_tokens: ``loss_mask.sum()`` over the WHOLE global batch (> 0); the divisor of
        every micro-batch's loss (see :func:`global_token_count`).
    rollout_logprobs_B_T: sampling log-probs reported by the inference engine; needed for TIS.
    ref_logprobs_B_T: reference-policy log-probs; needed when the KL loss is on.
    entropy_B_T: current-policy entropy per token (carries grad); needed when ``entropy_coef > 0``.
    response_mask_B_T: bool, True on response tokens (loss-masked ones included); loss plugins
        in slime's or the simple convention use it to cut per-sample responses out of ``[B, T]``.
    input_ids_B_T: long token ids (prompt + response, padding after); slime's ``unconcat_tokens``.
    rewards_B: ``[B]`` scalar reward of each sample (0.0 where it has none).
    global_num_samples: samples in the WHOLE global batch (> 0): the divisor of per-sample-mean
        losses (slime's convention), like ``global_num_tokens`` for token means.
    teacher_logprobs_B_T: OPD teacher log-probs of the realised tokens (0 for samples without a
        teacher); only when some sample carries ``teacher_log_probs``.
    student_topk_logprobs_B_T_K / teacher_topk_logprobs_B_T_K: ``[B, T, K]`` current-policy
        (with grad) and teacher log-probs of the teacher's top-K tokens at each position; only
        when the samples carry a teacher top-K (``--distill-topk``).

    Raises ``ValueError`` (in ``__post_init__``) on a shape mismatch or ``global_num_tokens <= 0``.
    """
    logprobs_B_T: torch.Tensor
    old_logprobs_B_T: torch.Tensor
    advantages_B_T: torch.Tensor
    loss_mask_B_T: torch.Tensor
    global_num_tokens: float
    rollout_logprobs_B_T: torch.Tensor | None = None
    ref_logprobs_B_T: torch.Tensor | None = None
    entropy_B_T: torch.Tensor | None = None
    response_mask_B_T: torch.Tensor | None = None
    input_ids_B_T: torch.Tensor | None = None
    rewards_B: torch.Tensor | None = None
    global_num_samples: float | None = None
    teacher_logprobs_B_T: torch.Tensor | None = None
    student_topk_logprobs_B_T_K: torch.Tensor | None = None
    teacher_topk_logprobs_B_T_K: torch.Tensor | None = None

    def __post_init__(self) -> None:
        shape = self.logprobs_B_T.shape
        if self.logprobs_B_T.dim() != 2:
            raise ValueError(f"logprobs_B_T must be 2-D [B, T], got {tuple(shape)}")
        if self.rewards_B is not None and tuple(self.rewards_B.shape) != (shape[0],):
            raise ValueError(f"rewards_B has shape {tuple(self.rewards_B.shape)}, expected ({shape[0]},)")
        for name in ("old_logprobs_B_T", "advantages_B_T", "loss_mask_B_T", "rollout_logprobs_B_T",
                     "ref_logprobs_B_T", "entropy_B_T", "response_mask_B_T", "input_ids_B_T",
                     "teacher_logprobs_B_T"):
            t = getattr(self, name)
            if t is not None and t.shape != shape:
                raise ValueError(f"{name} has shape {tuple(t.shape)}, expected {tuple(shape)}")
        if not float(self.global_num_tokens) > 0:
            raise ValueError(f"global_num_tokens must be > 0, got {self.global_num_tokens}")


@dataclass
class LossOutputs:
    """Result of a loss function on one micro-batch.

    loss: differentiable scalar, ``sum(mask * per_token_loss) / global_num_tokens``; call
        ``loss.backward()`` per micro-batch and step once per global batch.
    num_tokens: loss tokens in this micro-batch.
    sums: un-normalised per-token sums of each metric (python floats).
    counts: token count each metric in ``sums`` is normalised by.
    """
    loss: torch.Tensor
    num_tokens: float
    sums: dict[str, float] = field(default_factory=dict)
    counts: dict[str, float] = field(default_factory=dict)

    def metrics(self) -> dict[str, float]:
        """Per-metric means ``sums[k] / counts[k]`` for this micro-batch (0.0 where the count is 0)."""
        return reduce_metrics([self])


def reduce_metrics(outputs: Iterable[LossOutputs]) -> dict[str, float]:
    """Exact means over micro-batches: ``sum_i sums_i[k] / sum_i counts_i[k]`` for each metric ``k``.

    Takes any iterable of :class:`LossOutputs`; returns ``{metric: mean}`` (0.0 for zero counts).
    """
    sums: dict[str, float] = {}
    counts: dict[str, float] = {}
    for out in outputs:
        for k, v in out.sums.items():
            sums[k] = sums.get(k, 0.0) + v
            counts[k] = counts.get(k, 0.0) + out.counts[k]
    return {k: (sums[k] / counts[k] if counts[k] > 0 else 0.0) for k in sums}


def global_token_count(loss_masks: Sequence[torch.Tensor] | Sequence[Sequence[int]]) -> float:
    """Total number of loss tokens in a global batch.

    Args:
        loss_masks: one mask per sample or per micro-batch (tensors of any shape, or lists of 0/1).

    Returns:
        ``sum`` of all mask entries as a float (the ``global_num_tokens`` of :class:`LossInputs`).
    """
    total = 0.0
    for m in loss_masks:
        total += float(m.sum()) if isinstance(m, torch.Tensor) else float(sum(m))
    return total


def kl_estimate(logprobs_B_T: torch.Tensor, ref_logprobs_B_T: torch.Tensor, kl_type: str) -> torch.Tensor:
    """Per-token estimate of ``KL(policy || reference)`` from samples of the policy.

    With ``r = ref_logprobs - logprobs`` (log of ref/policy at the sampled token):
    ``k1 = -r``, ``k2 = r**2 / 2``, ``k3 = exp(r) - 1 - r``, ``low_var_kl = clamp(k3, -10, 10)``
    (Schulman, "Approximating KL Divergence"). Returns a ``[B, T]`` tensor; raises ``ValueError``
    on an unknown ``kl_type``.
    """
    log_ratio_B_T = logprobs_B_T - ref_logprobs_B_T
    if kl_type == "k1":
        return log_ratio_B_T
    if kl_type == "k2":
        return log_ratio_B_T.pow(2) / 2.0
    if kl_type in ("k3", "low_var_kl"):
        r_B_T = -log_ratio_B_T
        k3_B_T = r_B_T.exp() - 1.0 - r_B_T
        return k3_B_T.clamp(-10.0, 10.0) if kl_type == "low_var_kl" else k3_B_T
    raise ValueError(f"kl_type {kl_type!r} is unknown; choose one of {', '.join(KL_LOSS_TYPES)}")


def tis_weights(old_logprobs_B_T: torch.Tensor, rollout_logprobs_B_T: torch.Tensor, cap: float) -> torch.Tensor:
    """Truncated importance-sampling weights ``min(exp(old_logprobs - rollout_logprobs), cap)``.

    Corrects for the mismatch between the trainer's and the inference engine's numerics / weight
    versions (Yao et al. 2025). Returns a detached ``[B, T]`` tensor.
    """
    return torch.exp(old_logprobs_B_T.detach() - rollout_logprobs_B_T.detach()).clamp(max=cap)


def policy_loss(inputs: LossInputs, config: PolicyLossConfig) -> LossOutputs:
    """PPO clipped surrogate with optional dual clip, TIS, KL-to-reference and entropy bonus.

    Per token (``A`` advantage, ``rho = exp(logp - old_logp)``):
        ``pg = max(-A * rho, -A * clip(rho, 1 - eps_clip, 1 + eps_clip_high))``;
        with ``eps_clip_c``: ``pg = min(pg, -c * A)`` where ``A < 0``;
        with TIS: ``pg *= min(exp(old_logp - rollout_logp), tis_cap)``;
        ``token_loss = pg + kl_loss_coef * KL - entropy_coef * entropy``.
    Loss: ``sum(mask * token_loss) / global_num_tokens`` (token mean over the global batch).

    Args:
        inputs: the micro-batch tensors (see :class:`LossInputs`).
        config: clip / KL / entropy / TIS settings.

    Returns:
        :class:`LossOutputs` with metrics ``pg_loss``, ``pg_clipfrac`` (fraction of tokens where
        the clipped branch is active), ``approx_kl`` (Schulman k3 on ``logp - old_logp``, a PPO drift monitor),
        ``ratio_dev`` (mean ``|rho - 1|``), and when applicable ``dual_clipfrac``, ``kl_loss``,
        ``entropy``, ``tis_weight``, ``tis_clipfrac``; each normalised by its own token count.

    Raises:
        ValueError: a required optional input is missing (``ref_logprobs_B_T`` with the KL loss,
            ``rollout_logprobs_B_T`` with TIS, ``entropy_B_T`` with ``entropy_coef > 0``).
    """
    mask_B_T = inputs.loss_mask_B_T.to(inputs.logprobs_B_T.dtype)
    on_B_T = mask_B_T > 0
    n_tok = float(mask_B_T.sum())
    adv_B_T = inputs.advantages_B_T.to(inputs.logprobs_B_T.dtype).detach()
    # zero the log-ratio off the mask so garbage there (padding) can never overflow into inf/NaN
    log_ratio_B_T = torch.where(on_B_T, inputs.logprobs_B_T - inputs.old_logprobs_B_T.detach(), 0.0)
    ratio_B_T = log_ratio_B_T.exp()

    pg1_B_T = -adv_B_T * ratio_B_T
    pg2_B_T = -adv_B_T * ratio_B_T.clamp(1.0 - config.eps_clip, 1.0 + config.eps_clip_high)
    pg_B_T = torch.maximum(pg1_B_T, pg2_B_T)
    sums: dict[str, float] = {}
    counts: dict[str, float] = {}

    def record(name: str, per_token_B_T: torch.Tensor) -> None:
        sums[name] = float(torch.where(on_B_T, per_token_B_T.detach() * mask_B_T, 0.0).sum())
        counts[name] = n_tok

    record("pg_clipfrac", (pg2_B_T > pg1_B_T).to(mask_B_T.dtype))
    if config.eps_clip_c is not None:
        pg3_B_T = -config.eps_clip_c * adv_B_T
        dual_B_T = torch.minimum(pg_B_T, pg3_B_T)
        record("dual_clipfrac", ((adv_B_T < 0) & (pg3_B_T < pg_B_T)).to(mask_B_T.dtype))
        pg_B_T = torch.where(adv_B_T < 0, dual_B_T, pg_B_T)
    if config.use_tis:
        if inputs.rollout_logprobs_B_T is None:
            raise ValueError("use_tis needs rollout_logprobs_B_T")
        raw_B_T = torch.exp(torch.where(
            on_B_T, inputs.old_logprobs_B_T.detach() - inputs.rollout_logprobs_B_T.detach(), 0.0))
        w_B_T = raw_B_T.clamp(max=config.tis_cap).to(pg_B_T.dtype)
        record("tis_weight", w_B_T)
        record("tis_clipfrac", (raw_B_T > config.tis_cap).to(mask_B_T.dtype))
        pg_B_T = pg_B_T * w_B_T
    record("pg_loss", pg_B_T)
    record("ratio_dev", (ratio_B_T - 1.0).abs())
    record("approx_kl", kl_estimate(log_ratio_B_T.detach(), torch.zeros_like(log_ratio_B_T), "k3"))
    token_loss_B_T = pg_B_T

    if config.use_kl_loss:
        if inputs.ref_logprobs_B_T is None:
            raise ValueError("use_kl_loss needs ref_logprobs_B_T")
        ref_diff_B_T = torch.where(on_B_T, inputs.logprobs_B_T - inputs.ref_logprobs_B_T.detach(), 0.0)
        kl_B_T = kl_estimate(ref_diff_B_T, torch.zeros_like(ref_diff_B_T), config.kl_loss_type)
        record("kl_loss", kl_B_T)
        token_loss_B_T = token_loss_B_T + config.kl_loss_coef * kl_B_T
    if inputs.entropy_B_T is not None:
        record("entropy", inputs.entropy_B_T)
    if config.entropy_coef > 0:
        if inputs.entropy_B_T is None:
            raise ValueError("entropy_coef > 0 needs entropy_B_T")
        token_loss_B_T = token_loss_B_T - config.entropy_coef * inputs.entropy_B_T

    loss = torch.where(on_B_T, token_loss_B_T * mask_B_T, 0.0).sum() / float(inputs.global_num_tokens)
    return LossOutputs(loss=loss, num_tokens=n_tok, sums=sums, counts=counts)
