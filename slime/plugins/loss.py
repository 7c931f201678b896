"""Loss plugins (``--custom-loss-function-path``) in three calling conventions.

The canonical one is **typed**, the :class:`slime.plugins.hooks.LossFunction` protocol
(:func:`slime.algorithms.losses.policy_loss`'s own signature); **simple** (the seed's README form) and
**slime** (THUDM/slime's ``loss_function``) are adapters to it, chosen from the signature.

The training backend calls its loss once per micro-batch with :func:`slime.algorithms.losses.policy_loss`'s
typed signature ``loss(inputs: LossInputs, config: PolicyLossConfig) -> LossOutputs``.
:func:`load_loss_plugin` loads a user function, detects its convention from its signature and
wraps it into that signature (:class:`LossPlugin`):

* **simple** (the README's form): ``compute_loss(policy_logits, reference_logits, rewards,
  advantages, config) -> torch.Tensor``. ``policy_logits`` / ``reference_logits`` are per-token
  log-probs of each response under the current and the old (pre-update) policy, ``[B, T]``
  response-aligned (``T`` = longest response of the micro-batch), 0 at padding and at
  loss-masked tokens; ``rewards`` ``[B]``; ``advantages`` ``[B, T]`` (masked the same way);
  ``config`` a dict (:func:`simple_config`). The scalar it returns is taken as the micro-batch's
  mean over samples: the backend weights it by ``B / global_num_samples``, so with one
  micro-batch the step minimises exactly the returned value.
* **slime** (THUDM/slime ``loss_function`` -> ``custom_loss``): ``loss(args, batch, logits,
  sum_of_sample_mean) -> (loss, metrics)``. ``batch`` holds slime's per-sample lists
  (:func:`slime_batch`); ``logits`` is NOT ``[1, T, V]`` vocabulary logits (the backend never
  materialises them, see :mod:`slime.algorithms.logprobs`) but the current policy's log-probs of the response
  tokens, concatenated over the micro-batch's samples, ``[sum(response_lengths)]``, with
  gradient; ``sum_of_sample_mean(x)`` sums the per-sample masked means of such a flat tensor, as
  slime's does with context parallelism off. As in slime (``calculate_per_token_loss`` off), the
  step's loss is the mean over the global batch of per-sample means: ``loss / global_num_samples``.
* **typed**: ``loss(inputs, config) -> LossOutputs | torch.Tensor``, used as is.

Detection: the parameter names (``policy_logits, reference_logits, ...``; ``args, batch, logits,
sum_of_sample_mean``; ``inputs, config``), else the number of positional parameters (5, 4, 2).
:func:`probe_loss_plugin` calls a loaded plugin once on a small synthetic batch at start-up, so a
wrong return type fails before any training. Failures at training time raise
:class:`slime.guards.loss.LossPluginError` naming the plugin (the backend then skips the step).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F

from slime.guards.loss import LossPluginError, checked_loss
from slime.algorithms.losses import LossInputs, LossOutputs, PolicyLossConfig, kl_estimate
from slime.plugins.loader import (PluginError, check_return_annotation, load_function, positional_parameters,
                           signature_text, split_spec)

__all__ = ["CONVENTIONS", "DEFAULT_LOSS_NAMES", "LossPlugin", "detect_loss_convention",
           "load_loss_plugin", "probe_inputs", "probe_loss_plugin", "simple_config", "slime_batch", "sum_of_sample_mean_fn"]

FLAG = "--custom-loss-function-path"
#: default function names, tried in order, when the spec names only a file
DEFAULT_LOSS_NAMES = ("compute_loss", "loss_function")
#: convention -> positional parameter names
CONVENTIONS = {
    "simple": ("policy_logits", "reference_logits", "rewards", "advantages", "config"),
    "slime": ("args", "batch", "logits", "sum_of_sample_mean"),
    "typed": ("inputs", "config"),
}
_EXPECTED = ("compute_loss(policy_logits, reference_logits, rewards, advantages, config) -> torch.Tensor, "
             "loss(args, batch, logits, sum_of_sample_mean) -> (loss, metrics) or "
             "loss(inputs: LossInputs, config: PolicyLossConfig) -> LossOutputs")
_RETURNS = {"simple": ((torch.Tensor,), "a scalar torch.Tensor"),
            "slime": ((tuple, list), "a (loss, metrics) tuple"),
            "typed": ((LossOutputs, torch.Tensor), "LossOutputs or a scalar torch.Tensor")}


def detect_loss_convention(fn: Callable, spec: str = "") -> str:
    """Return ``"simple"``, ``"slime"`` or ``"typed"`` from ``fn``'s parameters.

    Raises:
        PluginError: no convention fits (one line naming the flag, the signature and the forms).
    """
    names = tuple(p.name for p in positional_parameters(fn))
    for conv, want in CONVENTIONS.items():
        if names[: len(want)] == want and all(p.default is not p.empty for p in positional_parameters(fn)[len(want):]):
            return conv
    required = [p for p in positional_parameters(fn) if p.default is p.empty]
    by_count = {5: "simple", 4: "slime", 2: "typed"}
    if len(names) == len(required) and len(names) in by_count:
        return by_count[len(names)]
    raise PluginError(f"{FLAG} {spec}: {signature_text(fn)} matches no loss convention; expected {_EXPECTED}")


def _response_index(inputs: LossInputs) -> list[torch.Tensor]:
    """Per row, the column indices of its response tokens (``response_mask``, else loss mask)."""
    mask = inputs.response_mask_B_T if inputs.response_mask_B_T is not None else inputs.loss_mask_B_T > 0
    return [row.nonzero(as_tuple=True)[0] for row in mask.bool()]


def _pack(t_B_T: torch.Tensor | None, idx: list[torch.Tensor], width: int) -> torch.Tensor | None:
    """Gather each row's response columns into a right-padded ``[B, width]`` tensor (grad kept)."""
    if t_B_T is None:
        return None
    rows = [F.pad(t_B_T[b, i], (0, width - len(i))) for b, i in enumerate(idx)]
    return torch.stack(rows)


def simple_config(config: PolicyLossConfig, inputs: LossInputs, mask_B_T: torch.Tensor,
                  idx: list[torch.Tensor], width: int) -> dict[str, Any]:
    """The ``config`` dict of the simple convention.

    Settings: ``clip_range`` (``--eps-clip``), ``clip_range_high`` (``--eps-clip-high``),
    ``dual_clip`` (``--eps-clip-c``), ``kl_coeff`` (``--kl-loss-coef``), ``kl_loss_type``,
    ``use_kl_loss``, ``entropy_coeff`` (``--entropy-coef``), ``use_tis``, ``tis_cap``, plus the
    same under slime's names (``eps_clip``, ``kl_loss_coef``, ...). Per-batch extras, all
    ``[B, T]`` response-aligned like ``policy_logits``: ``loss_mask`` (1.0 on trained tokens),
    ``rollout_log_probs`` (the serving engine's sampling log-probs), ``ref_log_probs`` (frozen
    reference policy, only with ``--use-kl-loss``, else None), ``entropy`` (current policy, or
    None); and ``response_lengths`` (list of int), ``num_samples`` (``B``),
    ``global_num_samples``.
    """
    out: dict[str, Any] = dataclasses.asdict(config)
    out.update(clip_range=config.eps_clip, clip_range_high=config.eps_clip_high, dual_clip=config.eps_clip_c,
               kl_coeff=config.kl_loss_coef, entropy_coeff=config.entropy_coef)
    masked = lambda t: None if t is None else _pack(t, idx, width) * mask_B_T  # noqa: E731
    out.update(loss_mask=mask_B_T, rollout_log_probs=masked(inputs.rollout_logprobs_B_T),
               ref_log_probs=masked(inputs.ref_logprobs_B_T), entropy=masked(inputs.entropy_B_T),
               response_lengths=[len(i) for i in idx], num_samples=len(idx),
               global_num_samples=inputs.global_num_samples or len(idx))
    return out


def sum_of_sample_mean_fn(response_lengths: list[int], loss_masks: list[torch.Tensor]) -> Callable:
    """slime's ``sum_of_sample_mean`` (context parallelism off).

    Returns ``f(x)`` for a flat ``[sum(response_lengths)]`` tensor: ``sum_i (x_i * m_i).sum() /
    max(m_i.sum(), 1)`` over samples ``i``. Raises ``ValueError`` for another shape.
    """
    total = sum(response_lengths)

    def sum_of_sample_mean(x: torch.Tensor) -> torch.Tensor:
        if x.dim() != 1 or x.shape[0] != total:
            raise ValueError(f"sum_of_sample_mean expects a flat [{total}] tensor (response tokens of the "
                             f"micro-batch, concatenated), got {tuple(x.shape)}")
        parts = [(x_i * m_i).sum() / torch.clamp_min(m_i.sum(), 1)
                 for x_i, m_i in zip(x.split(response_lengths), loss_masks)]
        return torch.stack(parts).sum()

    return sum_of_sample_mean


def slime_batch(inputs: LossInputs, idx: list[torch.Tensor]) -> dict[str, Any]:
    """slime's micro-batch dict: per-sample lists of response-aligned 1-D tensors (length ``R_i``).

    Keys: ``unconcat_tokens`` (prompt + response ids), ``total_lengths``, ``response_lengths``,
    ``loss_masks`` (float), ``advantages``, ``returns`` (= advantages), ``log_probs`` (old policy,
    recomputed before the update), ``rollout_log_probs`` (serving engine), ``ref_log_probs``
    (only with ``--use-kl-loss``), ``cur_log_probs`` (current policy, with gradient; their
    concatenation is ``logits``), ``entropy`` (current policy, or None), ``rewards`` and
    ``raw_reward`` (list of float), ``teacher_log_probs`` (when the batch carries them).
    """
    def take(t):
        return None if t is None else [t[b, i] for b, i in enumerate(idx)]

    ends = [int(i[-1]) + 1 if len(i) else 0 for i in idx]
    rewards = inputs.rewards_B.tolist() if inputs.rewards_B is not None else [0.0] * len(idx)
    batch: dict[str, Any] = {
        "total_lengths": ends, "response_lengths": [len(i) for i in idx],
        "loss_masks": take(inputs.loss_mask_B_T), "advantages": take(inputs.advantages_B_T),
        "log_probs": take(inputs.old_logprobs_B_T), "rollout_log_probs": take(inputs.rollout_logprobs_B_T),
        "ref_log_probs": take(inputs.ref_logprobs_B_T), "cur_log_probs": take(inputs.logprobs_B_T),
        "entropy": take(inputs.entropy_B_T), "rewards": rewards, "raw_reward": list(rewards),
    }
    batch["returns"] = batch["advantages"]
    if inputs.input_ids_B_T is not None:
        batch["unconcat_tokens"] = [inputs.input_ids_B_T[b, :e] for b, e in enumerate(ends)]
    if inputs.teacher_logprobs_B_T is not None:
        batch["teacher_log_probs"] = take(inputs.teacher_logprobs_B_T)
    return batch


def _monitor(inputs: LossInputs, n: float) -> tuple[dict[str, float], dict[str, float]]:
    """Token sums of ``approx_kl`` (k3, new vs old) and ``entropy`` for the step's metrics."""
    on = inputs.loss_mask_B_T > 0
    sums = {"approx_kl": float(kl_estimate(inputs.logprobs_B_T.detach(), inputs.old_logprobs_B_T.detach(),
                                           "k3")[on].sum())}
    if inputs.entropy_B_T is not None:
        sums["entropy"] = float(inputs.entropy_B_T.detach()[on].sum())
    return sums, {k: n for k in sums}


def _as_float(name: str, key: str, value: Any) -> float:
    if isinstance(value, torch.Tensor):
        return float(value.detach().float().mean())
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    raise LossPluginError(name, f"metric {key!r} is {type(value).__name__}; expected a number or tensor")


class LossPlugin:
    """A user loss adapted to :func:`slime.algorithms.losses.policy_loss`'s signature.

    Args:
        fn: the user function.
        convention: ``"simple"``, ``"slime"`` or ``"typed"`` (see module doc).
        name: shown in errors (``plugin_name``), e.g. ``"plugin my/custom_loss.py:compute_loss
            (simple convention)"``.
        args: the run's config, passed as slime's ``args``.

    Calling it returns :class:`LossOutputs` whose loss is normalised for the global batch.

    Raises:
        LossPluginError: the plugin returned the wrong type (naming what was expected); exceptions
            inside the plugin propagate and :func:`slime.guards.loss.checked_loss` names them.
    """

    def __init__(self, fn: Callable, convention: str, name: str, args: Any = None):
        self.fn, self.convention, self.plugin_name, self.args = fn, convention, name, args
        self.__name__ = getattr(fn, "__name__", "loss")

    def __call__(self, inputs: LossInputs, config: PolicyLossConfig) -> LossOutputs:
        if self.convention == "typed":
            return self.fn(inputs, config)
        idx = _response_index(inputs)
        B = len(idx)
        G = float(inputs.global_num_samples or B)
        mask_sum = float(inputs.loss_mask_B_T.sum())
        sums, counts = _monitor(inputs, mask_sum)
        if self.convention == "simple":
            width = max(1, max(len(i) for i in idx))
            mask = _pack(inputs.loss_mask_B_T, idx, width)
            out = self.fn(_pack(inputs.logprobs_B_T, idx, width) * mask,
                          _pack(inputs.old_logprobs_B_T.detach(), idx, width) * mask,
                          inputs.rewards_B if inputs.rewards_B is not None else torch.zeros(B),
                          _pack(inputs.advantages_B_T.detach(), idx, width) * mask,
                          simple_config(config, inputs, mask, idx, width))
            loss = self._scalar(out, "simple")
            sums["plugin_loss"], counts["plugin_loss"] = float(loss.detach()) * B, float(B)
            return LossOutputs(loss=loss * (B / G), num_tokens=mask_sum, sums=sums, counts=counts)
        batch = slime_batch(inputs, idx)
        logits = torch.cat(batch["cur_log_probs"])
        out = self.fn(self.args, batch, logits, sum_of_sample_mean_fn(batch["response_lengths"], batch["loss_masks"]))
        if not isinstance(out, (tuple, list)) or len(out) != 2 or not isinstance(out[1], (dict, type(None))):
            raise LossPluginError(self.plugin_name, f"returned {type(out).__name__}; expected a (loss, metrics) "
                                                    "tuple: a scalar tensor and a dict")
        loss = self._scalar(out[0], "slime")
        for key, value in (out[1] or {}).items():
            sums[str(key)], counts[str(key)] = _as_float(self.plugin_name, key, value), float(B)
        sums["plugin_loss"], counts["plugin_loss"] = float(loss.detach()), float(B)
        return LossOutputs(loss=loss / G, num_tokens=mask_sum, sums=sums, counts=counts)

    def _scalar(self, value: Any, convention: str) -> torch.Tensor:
        if not isinstance(value, torch.Tensor) or value.numel() != 1:
            shown = (f"a tensor of shape {tuple(value.shape)}" if isinstance(value, torch.Tensor)
                     else type(value).__name__)
            raise LossPluginError(self.plugin_name, f"returned {shown}; expected {_RETURNS[convention][1]}"
                                                    + (" as the loss" if convention == "slime" else ""))
        return value.reshape(())


def load_loss_plugin(spec: str, args: Any = None) -> LossPlugin:
    """Load ``--custom-loss-function-path`` and wrap it (see module doc).

    Args:
        spec: ``file.py`` (function ``compute_loss``, else ``loss_function``), ``file.py:fn`` or
            ``package.module.fn``; files resolve against the working directory, then the repo root.
        args: the run's config (slime's ``args``).

    Raises:
        PluginError: missing file / function, parameters matching no convention, or a return
            annotation naming the wrong type.
    """
    fn = load_function(spec, FLAG, default_name=DEFAULT_LOSS_NAMES)
    convention = detect_loss_convention(fn, spec)
    allowed, expected = _RETURNS[convention]
    check_return_annotation(fn, f"{FLAG} {spec}", allowed,
                            f"{expected} (the {convention} convention: {', '.join(CONVENTIONS[convention])})")
    target, func, is_file = split_spec(spec)
    shown = spec if func else f"{target}:{fn.__name__}" if is_file else spec
    return LossPlugin(fn, convention, f"plugin {shown} ({convention} convention)", args)


def probe_inputs(config: PolicyLossConfig) -> LossInputs:
    """A synthetic 2-sample micro-batch with every input the backend may pass (response masks,
    token ids, rewards, rollout and reference log-probs, entropy): responses of 3 and 2 tokens in
    ``[2, 6]`` tensors, one loss-masked token, advantages +1 / -1; ``logprobs_B_T`` carries a
    gradient. Seeded, so identical on every call."""
    g = torch.Generator().manual_seed(0)
    B, T = 2, 6
    resp = torch.zeros(B, T, dtype=torch.bool)
    resp[0, 3:6], resp[1, 4:6] = True, True
    mask = resp.float()
    mask[0, 4] = 0.0
    new = (-torch.rand(B, T, generator=g, dtype=torch.float32) - 0.1).requires_grad_(True)
    logp = new * resp
    old = (logp.detach() - 0.01).masked_fill(~resp, 0.0)
    adv = torch.tensor([[1.0], [-1.0]]).expand(B, T) * mask
    return LossInputs(logprobs_B_T=logp, old_logprobs_B_T=old, advantages_B_T=adv.contiguous(),
                      loss_mask_B_T=mask, global_num_tokens=float(mask.sum()), rollout_logprobs_B_T=old.clone(),
                      ref_logprobs_B_T=old.clone() if config.use_kl_loss else None,
                      entropy_B_T=torch.rand(B, T, generator=g) * resp,
                      response_mask_B_T=resp, input_ids_B_T=torch.arange(B * T).view(B, T),
                      rewards_B=torch.tensor([1.0, -1.0]), global_num_samples=float(B))


def probe_loss_plugin(plugin: LossPlugin, config: PolicyLossConfig) -> None:
    """Call ``plugin`` once on :func:`probe_inputs` and check what it returns.

    Raises:
        PluginError: ``--custom-loss-function-path <name>: <what was wrong> (probe batch, before
            training)``.
    """
    try:
        checked_loss(plugin, plugin.plugin_name, probe_inputs(config), config)
    except LossPluginError as exc:
        raise PluginError(f"{FLAG}: {plugin.plugin_name}: {exc.detail} (probe batch, before training)") from exc
