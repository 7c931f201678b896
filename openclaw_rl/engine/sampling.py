"""Token sampling from next-token logits, with the logprob of the sampled token.

Follows the usual temperature + nucleus (top-p, Holtzman et al. 2020) pipeline; the reported
logprob is that of the distribution actually sampled from (see :class:`TokenEvent`).

The token is drawn by a two-level Gumbel-max (Gumbel 1954; Maddison et al. 2014, "A* sampling"):
the vocabulary is cut into blocks of :data:`BLOCK` ids, a block is chosen by Gumbel-max over the
blocks' probability masses, then an id within it by Gumbel-max over its probabilities. That
samples the categorical distribution exactly, costs one pass over the vocabulary plus
``V / BLOCK + BLOCK`` uniforms from the request's own generator (a fixed count per token, so a
request's RNG stream is its own, whatever shares its batch), about 1 ms per token where
``torch.multinomial`` takes about 12 ms on a 150k vocabulary (one loaded CPU core). And each
decision is an argmax over independent noisy scores, so the float rounding by which a batched
forward pass differs from a lone one (a few 1e-6 in logprob) changes the sampled id only when two
noisy scores fall that close (none in 1000 draws on a flat 150k distribution; inverse-CDF
sampling, whose every boundary moves by the accumulated rounding, flipped 2 of them).
"""

from __future__ import annotations

import torch

from openclaw_rl.engine.base import SamplingParams, TokenEvent

#: ids per block of the two-level Gumbel-max draw (:func:`draw_token`)
BLOCK = 512


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
        token = draw_token(logprobs_V, generator)
    top: tuple[tuple[int, float], ...] = ()
    if params.top_logprobs > 0:
        vals, idx = torch.topk(logprobs_V, k=min(params.top_logprobs, logprobs_V.numel()))
        top = tuple((int(i), float(v)) for i, v in zip(idx, vals) if v > float("-inf"))
    return TokenEvent(token_id=token, logprob=float(logprobs_V[token]), top_logprobs=top)


def draw_token(logprobs_V: torch.Tensor, generator: torch.Generator) -> int:
    """Draw one id from ``exp(logprobs_V)`` (shape [V], normalised) by two-level Gumbel-max.

    Uses exactly ``ceil(V / BLOCK) + BLOCK`` float64 uniforms from ``generator``. Ids with
    probability 0 (logprob ``-inf``) are never drawn, nor are blocks without mass.
    """
    n = logprobs_V.numel()
    blocks = -(-n // BLOCK)
    probs_K_S = torch.nn.functional.pad(logprobs_V.exp(), (0, blocks * BLOCK - n)).view(blocks, BLOCK)
    gumbel = -torch.log(-torch.log(torch.rand(blocks + BLOCK, generator=generator, dtype=torch.float64)))
    block = int(torch.argmax(torch.log(probs_K_S.sum(-1, dtype=torch.float64)) + gumbel[:blocks]))
    within = int(torch.argmax(torch.log(probs_K_S[block].double()) + gumbel[blocks:]))
    return block * BLOCK + within
