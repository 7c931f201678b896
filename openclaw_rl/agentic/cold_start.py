"""SFT cold start on demonstration episodes, laid out token for token as the server lays out RL
trajectories.

ReTool (Feng et al. 2025, arXiv:2504.11536) and upstream's toolcall-rl start RL from a model that
was first fine-tuned on tool-using demonstrations: a model that never writes a well-formed call
gives GRPO groups with one reward and no advantage. This module does that cold start for any
family: a demonstration is a finished episode as chat messages (``system``/``user`` task, then
assistant replies, each followed by its ``tool`` results) with the tool schemas the environment
offers, and it becomes exactly the ids the agent loop would record for it
(:mod:`openclaw_rl.server.continuation`, :mod:`openclaw_rl.agentic.trajectory`):

* the first prompt: the chat template's rendering of the messages before the first reply, with
  the tools and the generation prompt, tokenized as the server tokenizes it;
* each reply: the tokenizer's ids of its text plus the end-of-turn token ``<|im_end|>``, under
  the loss (loss mask 1);
* between replies: what the server's continuation appends after the end-of-turn token (the
  template's separator, the rendered tool results, the next generation prompt), no loss.

:func:`sft` fine-tunes a causal LM on these (token cross-entropy over the loss tokens, AdamW,
grad-norm clipping), :func:`token_margins` measures how certain the model is of every loss
token (what a cold start must make near-deterministic so that RL only moves the decisions the
demonstrations leave open).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

from openclaw_rl.server.prompt import render_text, tokenize

__all__ = ["Demo", "DemoIds", "demo_ids", "sft", "token_margins"]

END_OF_TURN = "<|im_end|>"


@dataclass(frozen=True)
class Demo:
    """One demonstration episode.

    Attributes:
        messages: the conversation as the agent loop builds it: the task messages, then per step
            an ``assistant`` message (``content``, and ``tool_calls`` in the OpenAI shape when it
            calls tools) followed by its ``tool`` / ``user`` observation messages.
        tools: the tool schemas the environment offers (OpenAI function tools), or None.
        replies: the exact text the model writes at each assistant message, in order (e.g.
            ``<tool_call>\\n{...}\\n</tool_call>`` for a tool call; the assistant messages hold
            the server's parse of it).
    """

    messages: list[dict]
    tools: list[dict] | None
    replies: list[str]


@dataclass(frozen=True)
class DemoIds:
    """A demonstration as one training sequence: ``ids`` (``[L]`` token ids) and ``loss_mask``
    (``[L]``, 1 on reply tokens and their end-of-turn token, 0 elsewhere); ``prompt_len`` is the
    length of the first prompt."""

    ids: list[int]
    loss_mask: list[int]
    prompt_len: int


def demo_ids(tokenizer, demo: Demo) -> DemoIds:
    """Lay ``demo`` out as the server's token-exact continuation would (module docstring).

    Args:
        tokenizer: the policy's tokenizer (its chat template renders the messages).
        demo: the demonstration.

    Returns:
        The :class:`DemoIds`.

    Raises:
        ValueError: the number of replies differs from the assistant messages, or the template's
            rendering has fewer end-of-turn tokens than the conversation needs.
    """
    eot_id = tokenizer.convert_tokens_to_ids(END_OF_TURN)
    msgs = demo.messages
    at = [i for i, m in enumerate(msgs) if m["role"] == "assistant"]
    if len(at) != len(demo.replies) or not at:
        raise ValueError(f"{len(demo.replies)} replies for {len(at)} assistant messages")
    ids = tokenize(tokenizer, render_text(tokenizer, msgs[:at[0]], demo.tools, add_generation_prompt=True))
    mask = [0] * len(ids)
    prompt_len = len(ids)
    for k, (a, reply) in enumerate(zip(at, demo.replies)):
        reply_ids = tokenize(tokenizer, reply) + [eot_id]
        ids += reply_ids
        mask += [1] * len(reply_ids)
        end = at[k + 1] if k + 1 < len(at) else None
        if end is None:
            break
        closed = render_text(tokenizer, msgs[:a + 1], demo.tools, add_generation_prompt=False)
        full = render_text(tokenizer, msgs[:end], demo.tools, add_generation_prompt=True)
        pos = -len(END_OF_TURN)
        for _ in range(closed.count(END_OF_TURN)):
            pos = full.find(END_OF_TURN, pos + len(END_OF_TURN))
            if pos < 0:
                raise ValueError("the template's rendering lost an end-of-turn token")
        suffix = tokenize(tokenizer, full[pos + len(END_OF_TURN):])
        ids += suffix
        mask += [0] * len(suffix)
    return DemoIds(ids=ids, loss_mask=mask, prompt_len=prompt_len)


def _loss_logits(model, item: DemoIds):
    """``(logits [n_loss, V], targets [n_loss])`` at ``item``'s loss tokens: the LM head runs on
    those positions only (the vocabulary is large, the loss tokens few)."""
    import torch

    ids_1_L = torch.tensor([item.ids])
    mask_L = torch.tensor(item.loss_mask[1:], dtype=torch.bool)
    hidden_L_H = model.get_decoder()(input_ids=ids_1_L).last_hidden_state[0, :-1]
    logits_N_V = model.get_output_embeddings()(hidden_L_H[mask_L]).float()
    return logits_N_V, ids_1_L[0, 1:][mask_L]


def sft(model, items: Sequence[DemoIds], *, steps: int, lr: float = 3e-3, batch_size: int = 4,
        seed: int = 0, clip_grad: float = 1.0) -> list[float]:
    """Fine-tune ``model`` in place on ``items``: ``steps`` AdamW steps over the parameters that
    require grad, each on ``batch_size`` sequences drawn in a seeded shuffled order; the loss is
    the cross-entropy summed over the batch's loss tokens divided by their number (token-level,
    so two demonstrated replies to one context weigh their first tokens equally whatever their
    lengths); grad norm clipped to ``clip_grad``.

    Args:
        model: a transformers causal LM (train mode is set, eval mode restored at the end).
        items: the training sequences (:func:`demo_ids`).
        steps / lr / batch_size / seed / clip_grad: as above.

    Returns:
        The loss of every step.

    Raises:
        ValueError: no items, or ``steps`` / ``batch_size`` < 1.
    """
    import torch

    if not items or steps < 1 or batch_size < 1:
        raise ValueError("sft needs items, steps >= 1 and batch_size >= 1")
    rng = random.Random(seed)
    order: list[int] = []
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=lr, weight_decay=0.0)
    model.train()
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        batch = []
        for _ in range(batch_size):
            if not order:
                order = list(range(len(items)))
                rng.shuffle(order)
            batch.append(items[order.pop()])
        n_tokens = sum(sum(item.loss_mask) for item in batch)
        total = 0.0
        for item in batch:
            logits_N_V, target_N = _loss_logits(model, item)
            loss = torch.nn.functional.cross_entropy(logits_N_V, target_N, reduction="sum") / n_tokens
            loss.backward()
            total += float(loss.detach())
        torch.nn.utils.clip_grad_norm_(params, clip_grad)
        opt.step()
        losses.append(total)
    model.eval()
    return losses


def token_margins(model, item: DemoIds) -> list[float]:
    """The probability the model gives each loss token of ``item`` (``[n_loss_tokens]``, in
    sequence order), computed in one no-grad pass."""
    import torch

    with torch.no_grad():
        logits_N_V, target_N = _loss_logits(model, item)
        p_N = torch.softmax(logits_N_V, dim=-1).gather(1, target_N[:, None])[:, 0]
    return [float(p) for p in p_N]
