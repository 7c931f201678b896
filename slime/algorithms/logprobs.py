"""Per-token log-probs (and entropies) of realised tokens under a causal LM, chunk by chunk.

With a 151k-entry vocabulary the full ``[B, T, V]`` logits tensor of a long agent conversation
does not fit twice in memory (once for logits, once for the log-softmax, again for backward).
:func:`compute_token_logprobs` therefore runs only the decoder body, gathers the hidden states at
the positions whose next token is wanted (normally the response), and applies the LM head and the
log-softmax to ``chunk_size`` positions at a time. When gradients are on, each chunk is wrapped in
activation checkpointing so backward recomputes the chunk's logits instead of keeping them: peak
extra memory is ``O(chunk_size * V)`` rather than ``O(B * T * V)``.

Alignment convention (used everywhere in slime): ``logprobs_B_T[b, t]`` is
``log p(input_ids[b, t] | input_ids[b, :t])``; position 0 has no prediction and is 0. A sample
with prompt length ``P`` and response length ``R`` has its response log-probs at
``logprobs_B_T[b, P:P + R]``, aligned one-to-one with ``Sample.rollout_log_probs``.

Sampling parameters: the log-probs are those of the distribution the serving engine sampled
from, per sample: logits divided by the sample's temperature and, with top-p below 1, restricted
to the nucleus and renormalised (the serving engine reports renormalised nucleus log-probs too;
docs/plugins.md, "What the trainer recomputes"), so at identical weights they match the rollout
log-probs.

Follows slime's ``compute_log_probs``/``calculate_log_probs_and_entropy`` (THUDM/slime), the
chunked cross-entropy of Liger-Kernel / prime-rl, and divides logits by the sampling temperature
as vLLM/SGLang do when reporting sampling log-probs.
"""

from __future__ import annotations

from typing import NamedTuple

import torch
from torch.utils.checkpoint import checkpoint

__all__ = [
    "TokenLogprobs",
    "compute_token_logprobs",
    "entropy_from_logits",
    "multimodal_body",
    "multimodal_hidden_states",
    "nucleus_drop_mask",
    "token_logprobs_from_logits",
]


class TokenLogprobs(NamedTuple):
    """Output of :func:`compute_token_logprobs`.

    logprobs_B_T: ``[B, T]`` float32 (float64 for a float64 model); log-prob of each selected token given its prefix, 0 elsewhere.
    entropy_B_T: ``[B, T]`` float32 entropy of the predictive distribution for each selected token,
        0 elsewhere; ``None`` unless ``return_entropy=True``.
    extra_logprobs_B_T_K: ``[B, T, K]`` log-probs of ``extra_ids_B_T_K`` at each selected position
        (same prediction as ``logprobs_B_T``), 0 elsewhere; ``None`` unless extra ids were given.
    """

    logprobs_B_T: torch.Tensor
    entropy_B_T: torch.Tensor | None
    extra_logprobs_B_T_K: torch.Tensor | None = None


def token_logprobs_from_logits(
    logits_B_T_V: torch.Tensor, input_ids_B_T: torch.Tensor, temperature: float = 1.0
) -> torch.Tensor:
    """Return ``logprobs_B_T`` from full logits (small models / reference implementation).

    Args:
        logits_B_T_V: ``[B, T, V]`` next-token logits as returned by ``model(...).logits``
            (``logits[:, t]`` predicts ``input_ids[:, t + 1]``).
        input_ids_B_T: ``[B, T]`` token ids.
        temperature: sampling temperature the logits are divided by (> 0).

    Returns:
        ``[B, T]`` float32 tensor (float64 for float64 logits), ``out[:, t] = log p(input_ids[:, t] | input_ids[:, :t])`` for
        ``t >= 1`` and ``out[:, 0] = 0``.

    Raises:
        ValueError: on shape mismatch or ``temperature <= 0``.
    """
    _check_temperature(temperature)
    if logits_B_T_V.dim() != 3 or logits_B_T_V.shape[:2] != input_ids_B_T.shape:
        raise ValueError(f"logits {tuple(logits_B_T_V.shape)} do not match input_ids {tuple(input_ids_B_T.shape)}")
    logits = _upcast(logits_B_T_V[:, :-1]) / temperature
    logp_B_Lm1 = torch.log_softmax(logits, dim=-1).gather(-1, input_ids_B_T[:, 1:, None]).squeeze(-1)
    return torch.nn.functional.pad(logp_B_Lm1, (1, 0), value=0.0)


def entropy_from_logits(logits_B_T_V: torch.Tensor, temperature: float = 1.0) -> torch.Tensor:
    """Return ``entropy_B_T``, aligned like :func:`token_logprobs_from_logits` (position 0 is 0).

    ``out[:, t]`` is the entropy of the distribution that predicted token ``t`` (from
    ``logits[:, t - 1]``). Raises ``ValueError`` if ``temperature <= 0`` or logits are not 3-D.
    """
    _check_temperature(temperature)
    if logits_B_T_V.dim() != 3:
        raise ValueError(f"logits must be [B, T, V], got {tuple(logits_B_T_V.shape)}")
    logits = _upcast(logits_B_T_V[:, :-1]) / temperature
    logp = torch.log_softmax(logits, dim=-1)
    ent_B_Lm1 = -(logp.exp() * logp).sum(-1)
    return torch.nn.functional.pad(ent_B_Lm1, (1, 0), value=0.0)


def _upcast(x: torch.Tensor) -> torch.Tensor:
    """Half/bfloat16 -> float32; float32 and float64 are kept (so float64 tests stay exact)."""
    return x if x.dtype in (torch.float32, torch.float64) else x.float()


def _check_temperature(temperature: float) -> None:
    if not temperature > 0:
        raise ValueError(f"temperature must be > 0, got {temperature}")


#: rows of the ``[rows, V]`` sort of one top-p sub-chunk (bounds the sort's extra memory)
_TOP_P_ROWS = 64


def nucleus_drop_mask(logits_N_V: torch.Tensor, top_p_N: torch.Tensor,
                      keep_N: torch.Tensor | None = None) -> torch.Tensor:
    """Tokens outside each row's nucleus (top-p, Holtzman et al. 2020), as the serving engine
    cuts it (the serving engine's ``sample_next_token``: the smallest prefix of the
    tokens sorted by probability whose mass reaches ``top_p``; ties keep the sort's order).

    Args:
        logits_N_V: ``[N, V]`` temperature-scaled logits (float32 or float64).
        top_p_N: ``[N]`` nucleus mass per row in (0, 1]; rows with 1 drop nothing.
        keep_N: optional ``[N]`` ids never dropped (the sampled token: the engine drew it, so it
            was in the engine's nucleus even where float noise moves the boundary here).

    Returns:
        ``[N, V]`` bool, True where the token is outside the nucleus. No gradient.
    """
    with torch.no_grad():
        drop_N_V = torch.zeros(logits_N_V.shape, dtype=torch.bool, device=logits_N_V.device)
        rows = (top_p_N < 1.0).nonzero(as_tuple=True)[0]
        for start in range(0, rows.numel(), _TOP_P_ROWS):
            r = rows[start:start + _TOP_P_ROWS]
            logp_M_V = torch.log_softmax(logits_N_V[r], dim=-1)
            sorted_M_V, idx_M_V = torch.sort(logp_M_V, dim=-1, descending=True)
            p_M_V = sorted_M_V.exp()
            drop_sorted_M_V = (torch.cumsum(p_M_V, dim=-1) - p_M_V) >= top_p_N[r, None].to(p_M_V.dtype)
            drop_N_V[r] = torch.zeros_like(drop_sorted_M_V).scatter(1, idx_M_V, drop_sorted_M_V)
        if keep_N is not None and rows.numel():
            drop_N_V[rows, keep_N[rows]] = False
    return drop_N_V


def _chunk_logprob_entropy(
    hidden_N_H: torch.Tensor, targets_N: torch.Tensor, lm_head: torch.nn.Module, temperature_N: torch.Tensor,
    top_p_N: torch.Tensor, softcap: float | None, want_entropy: bool, extra_N_K: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor] | tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Log-prob of ``targets_N`` and entropy for ``N`` hidden states (two ``[N]`` float32), plus
    the ``[N, K]`` log-probs of ``extra_N_K`` when given.

    Each row's logits are divided by its ``temperature_N`` and, where ``top_p_N < 1``, cut to the
    nucleus and renormalised (the sampling distribution the engine reports log-probs under); the
    entropy is that distribution's. ``extra_N_K`` log-probs are taken under the temperature-scaled
    full distribution (top-K distillation compares whole distributions)."""
    logits_N_V = _upcast(lm_head(hidden_N_H))
    if softcap is not None:
        logits_N_V = torch.tanh(logits_N_V / softcap) * softcap
    logits_N_V = logits_N_V / temperature_N.to(logits_N_V.dtype)[:, None]
    full_N_V = logits_N_V
    if bool((top_p_N < 1.0).any()):
        logits_N_V = logits_N_V.masked_fill(nucleus_drop_mask(logits_N_V, top_p_N, targets_N), float("-inf"))
    lse_N = torch.logsumexp(logits_N_V, dim=-1)
    logp_N = logits_N_V.gather(-1, targets_N[:, None]).squeeze(-1) - lse_N
    if want_entropy:
        probs_N_V = torch.softmax(logits_N_V, dim=-1)
        ent_N = lse_N - torch.where(probs_N_V > 0, probs_N_V * logits_N_V, 0.0).sum(-1)
    else:
        ent_N = torch.zeros_like(logp_N)
    if extra_N_K is not None:
        return logp_N, ent_N, full_N_V.gather(-1, extra_N_K) - torch.logsumexp(full_N_V, dim=-1)[:, None]
    return logp_N, ent_N


def _per_row(value: float | torch.Tensor, B: int, device: torch.device, name: str) -> torch.Tensor:
    """``value`` as a ``[B]`` float64 tensor (a float is repeated); ValueError on another shape."""
    if isinstance(value, torch.Tensor):
        if tuple(value.shape) != (B,):
            raise ValueError(f"{name} must be a float or a [B={B}] tensor, got shape {tuple(value.shape)}")
        return value.to(device=device, dtype=torch.float64)
    return torch.full((B,), float(value), dtype=torch.float64, device=device)


def _decoder_and_head(model: torch.nn.Module) -> tuple[torch.nn.Module, torch.nn.Module]:
    get_decoder = getattr(model, "get_decoder", None)
    get_head = getattr(model, "get_output_embeddings", None)
    decoder = get_decoder() if callable(get_decoder) else None
    head = get_head() if callable(get_head) else None
    if decoder is None or head is None:
        raise ValueError(f"{type(model).__name__} exposes no get_decoder()/get_output_embeddings()")
    return decoder, head


def multimodal_body(model: torch.nn.Module) -> torch.nn.Module:
    """The vision + language body of a vision-language model (Qwen2-VL / Qwen2.5-VL / Qwen3-VL:
    ``model.model``, which has ``visual``, ``language_model`` and ``get_rope_index``); a peft
    wrapper is looked through (its adapter layers live inside the body).

    Raises:
        ValueError: the model has no such body (a text-only model given images).
    """
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    body = getattr(base, "model", None)
    if body is None or not all(hasattr(body, a) for a in ("visual", "language_model", "get_rope_index")):
        raise ValueError(f"{type(base).__name__} is not a vision-language model (no visual tower / "
                         "get_rope_index); a sample with images needs one")
    return body


def multimodal_hidden_states(model: torch.nn.Module, input_ids_B_T: torch.Tensor, attention_mask_B_T: torch.Tensor,
                             multimodal: dict[str, torch.Tensor]) -> torch.Tensor:
    """Last hidden states ``[B, T, H]`` of a vision-language model on a batch with images.

    Token types come from the ids (``config.image_token_id`` -> 1, ``video_token_id`` -> 2, else
    0), the 3-D M-RoPE position ids from the body's ``get_rope_index`` (text-only rows get the
    plain ``0..n-1`` positions, as in the text path), and the body replaces each image-pad
    embedding by its image feature (``pixel_values`` through the vision tower).

    Args:
        model: the policy (see :func:`multimodal_body`).
        input_ids_B_T / attention_mask_B_T: ``[B, T]`` right- or left-padded ids and mask.
        multimodal: ``pixel_values`` / ``image_grid_thw`` (and video equivalents) of the batch.
    """
    body = multimodal_body(model)
    config = body.config
    types_B_T = torch.zeros_like(input_ids_B_T, dtype=torch.int)
    for value, attr in ((1, "image_token_id"), (2, "video_token_id")):
        token = getattr(config, attr, None)
        if token is not None:
            types_B_T = torch.where(input_ids_B_T == token, value, types_B_T)
    grids = {k: multimodal[k] for k in ("image_grid_thw", "video_grid_thw") if k in multimodal}
    position_ids_3_B_T, _ = body.get_rope_index(input_ids_B_T, mm_token_type_ids=types_B_T,
                                                attention_mask=attention_mask_B_T, **grids)
    return body(input_ids=input_ids_B_T, attention_mask=attention_mask_B_T, position_ids=position_ids_3_B_T,
                use_cache=False, **multimodal).last_hidden_state


def compute_token_logprobs(
    model: torch.nn.Module,
    input_ids_B_T: torch.Tensor,
    attention_mask_B_T: torch.Tensor | None = None,
    response_mask_B_T: torch.Tensor | None = None,
    *,
    chunk_size: int = 1024,
    temperature: float | torch.Tensor = 1.0,
    top_p: float | torch.Tensor = 1.0,
    return_entropy: bool = False,
    extra_ids_B_T_K: torch.Tensor | None = None,
    multimodal: dict[str, torch.Tensor] | None = None,
) -> TokenLogprobs:
    """Per-token log-probs (and optionally entropies) of ``input_ids_B_T`` under ``model``.

    Args:
        model: a Hugging Face causal LM (``*ForCausalLM`` or a peft model wrapping one) exposing
            ``get_decoder()`` and ``get_output_embeddings()``.
        input_ids_B_T: ``[B, T]`` long token ids (prompt + response, padded).
        attention_mask_B_T: ``[B, T]`` 1 for real tokens, 0 for padding (left or right).
            ``None`` means all ones. Position ids are derived from it (``cumsum - 1``).
        response_mask_B_T: ``[B, T]`` bool/0-1 marking the tokens whose log-prob is wanted
            (normally the response tokens; position 0 must be 0). ``None`` selects every
            token whose predecessor is a real token. Only selected positions go through the LM head.
        chunk_size: positions per LM-head chunk (> 0); peak extra memory ``chunk_size * V``.
        temperature: sampling temperature the logits are divided by (> 0), to match the engine:
            one float, or a ``[B]`` tensor with each sample's own temperature.
        top_p: nucleus mass in (0, 1], one float or a ``[B]`` tensor: where below 1 the
            log-probs are those of the renormalised nucleus (:func:`nucleus_drop_mask`), the
            distribution the serving engine samples from and reports log-probs under.
        return_entropy: also return per-token entropies (of that same distribution).
        extra_ids_B_T_K: ``[B, T, K]`` long ids whose log-probs are also wanted at each selected
            position (e.g. a teacher's top-K tokens for distillation); same chunking and grad.
        multimodal: a vision-language batch's images (:func:`slime.record.batch.collate_multimodal`:
            ``pixel_values`` and ``image_grid_thw`` of every row's images, in row order) or None.
            Given, the body runs with them (:func:`multimodal_hidden_states`: image features in
            place of the ``<|image_pad|>`` embeddings, M-RoPE 3-D position ids), as the serving
            engine ran the prompt.

    Returns:
        :class:`TokenLogprobs` with float32 ``logprobs_B_T`` (and ``entropy_B_T``), zero at
        unselected positions; differentiable w.r.t. model parameters when grad is enabled.

    Raises:
        ValueError: on shape mismatch, ``chunk_size <= 0``, ``temperature <= 0``, or a selected
            token with no prefix (position 0, or the first real token after left padding).
    """
    if chunk_size <= 0:
        raise ValueError(f"chunk_size must be > 0, got {chunk_size}")
    if input_ids_B_T.dim() != 2:
        raise ValueError(f"input_ids must be [B, T], got {tuple(input_ids_B_T.shape)}")
    B, T = input_ids_B_T.shape
    device = input_ids_B_T.device
    temperature_B = _per_row(temperature, B, device, "temperature")
    top_p_B = _per_row(top_p, B, device, "top_p")
    if not bool((temperature_B > 0).all()):
        raise ValueError(f"temperature must be > 0, got {temperature_B.min().item()}")
    if not bool(((top_p_B > 0) & (top_p_B <= 1)).all()):
        raise ValueError("top_p must lie in (0, 1]")
    if attention_mask_B_T is None:
        attention_mask_B_T = torch.ones_like(input_ids_B_T)
    if attention_mask_B_T.shape != (B, T):
        raise ValueError(f"attention_mask {tuple(attention_mask_B_T.shape)} != input_ids {(B, T)}")
    real_B_T = attention_mask_B_T.bool()
    # a token is predictable only if the position before it is a real (non-padding) token
    has_prefix_B_T = torch.nn.functional.pad(real_B_T[:, :-1], (1, 0), value=False) & real_B_T
    if response_mask_B_T is None:
        select_B_T = has_prefix_B_T
    else:
        if response_mask_B_T.shape != (B, T):
            raise ValueError(f"response_mask {tuple(response_mask_B_T.shape)} != input_ids {(B, T)}")
        select_B_T = response_mask_B_T.bool()
        if select_B_T[:, 0].any():
            raise ValueError("response_mask selects position 0, which has no prefix")
        if (select_B_T & real_B_T & ~has_prefix_B_T).any():
            raise ValueError("response_mask selects a token whose predecessor is padding (no prefix)")
        select_B_T = select_B_T & real_B_T

    decoder, lm_head = _decoder_and_head(model)
    if multimodal:
        hidden_B_L_H = multimodal_hidden_states(model, input_ids_B_T, attention_mask_B_T, multimodal)
    else:
        position_ids_B_T = (attention_mask_B_T.long().cumsum(-1) - 1).clamp(min=0)
        hidden_B_L_H = decoder(
            input_ids=input_ids_B_T, attention_mask=attention_mask_B_T, position_ids=position_ids_B_T,
            use_cache=False,
        ).last_hidden_state

    # hidden state at t-1 predicts token t: gather the predecessors of the selected positions.
    b_idx_N, t_idx_N = select_B_T.nonzero(as_tuple=True)
    hidden_N_H = hidden_B_L_H[b_idx_N, t_idx_N - 1]
    targets_N = input_ids_B_T[b_idx_N, t_idx_N]
    softcap = getattr(getattr(model, "config", None), "final_logit_softcapping", None)

    extra_N_K = None if extra_ids_B_T_K is None else extra_ids_B_T_K[b_idx_N, t_idx_N].long()
    temperature_N, top_p_N = temperature_B[b_idx_N], top_p_B[b_idx_N]
    logp_parts, ent_parts, extra_parts = [], [], []
    use_ckpt = torch.is_grad_enabled() and hidden_N_H.requires_grad
    for start in range(0, hidden_N_H.shape[0], chunk_size):
        h = hidden_N_H[start : start + chunk_size]
        y = targets_N[start : start + chunk_size]
        x = None if extra_N_K is None else extra_N_K[start : start + chunk_size]
        tc, pc = temperature_N[start : start + chunk_size], top_p_N[start : start + chunk_size]
        if use_ckpt:
            res = checkpoint(_chunk_logprob_entropy, h, y, lm_head, tc, pc, softcap, return_entropy, x,
                             use_reentrant=False)
        else:
            res = _chunk_logprob_entropy(h, y, lm_head, tc, pc, softcap, return_entropy, x)
        logp_parts.append(res[0])
        ent_parts.append(res[1])
        if x is not None:
            extra_parts.append(res[2])

    out_dtype = torch.float64 if hidden_B_L_H.dtype == torch.float64 else torch.float32
    logprobs_B_T = torch.zeros(B, T, dtype=out_dtype, device=device)
    entropy_B_T = torch.zeros(B, T, dtype=out_dtype, device=device) if return_entropy else None
    extra_B_T_K = None
    if extra_ids_B_T_K is not None:
        extra_B_T_K = torch.zeros(B, T, extra_ids_B_T_K.shape[-1], dtype=out_dtype, device=device)
    if logp_parts:
        logprobs_B_T = logprobs_B_T.index_put((b_idx_N, t_idx_N), torch.cat(logp_parts))
        if entropy_B_T is not None:
            entropy_B_T = entropy_B_T.index_put((b_idx_N, t_idx_N), torch.cat(ent_parts))
        if extra_B_T_K is not None:
            extra_B_T_K = extra_B_T_K.index_put((b_idx_N, t_idx_N), torch.cat(extra_parts).to(out_dtype))
    return TokenLogprobs(logprobs_B_T, entropy_B_T, extra_B_T_K)
