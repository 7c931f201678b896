"""Token sampling from next-token logits, with the logprob of the sampled token.

Follows the usual temperature + nucleus (top-p, Holtzman et al. 2020) pipeline; the reported
logprob is that of the distribution actually sampled from (see :class:`TokenEvent`).
"""

from __future__ import annotations

import torch

from openclaw_rl.engine.base import SamplingParams, TokenEvent


def sample_next_token(logits_V: torch.Tensor, params: SamplingParams,
                      generator: torch.Generator, allowed_V: torch.Tensor | None = None) -> TokenEvent:
    """Sample one token.

    Args:
        logits_V: next-token logits, shape [V], any float dtype (computed in float32).
        params: temperature / top_p / top_logprobs.
        generator: the request's RNG (seeded for reproducibility).
        allowed_V: optional boolean mask [V] of the tokens a grammar allows; the others get
            probability 0 before temperature, top-p and the reported logprobs.

    Returns:
        A :class:`TokenEvent` with the sampled id and its logprob under the sampling
        distribution (temperature-scaled, top-p-renormalised; raw log-softmax when greedy).
    """
    logits_V = logits_V.float()
    if allowed_V is not None:
        logits_V = logits_V.masked_fill(~allowed_V, float("-inf"))
    if params.temperature <= 0.0:
        logprobs_V = torch.log_softmax(logits_V, dim=-1)
        token = int(torch.argmax(logprobs_V))
    else:
        logprobs_V = torch.log_softmax(logits_V / params.temperature, dim=-1)
        if params.top_p < 1.0:
            sorted_lp, sorted_idx = torch.sort(logprobs_V, descending=True)
            cum = torch.cumsum(sorted_lp.exp(), dim=-1)
            # keep the smallest prefix whose mass reaches top_p (always at least one token)
            drop_sorted = (cum - sorted_lp.exp()) >= params.top_p
            drop = torch.zeros_like(drop_sorted).scatter(0, sorted_idx, drop_sorted)
            logprobs_V = torch.log_softmax(logprobs_V.masked_fill(drop, float("-inf")), dim=-1)
        token = int(torch.multinomial(logprobs_V.exp(), 1, generator=generator))
    top: tuple[tuple[int, float], ...] = ()
    if params.top_logprobs > 0:
        vals, idx = torch.topk(logprobs_V, k=min(params.top_logprobs, logprobs_V.numel()))
        top = tuple((int(i), float(v)) for i, v in zip(idx, vals) if v > float("-inf"))
    return TokenEvent(token_id=token, logprob=float(logprobs_V[token]), top_logprobs=top)
