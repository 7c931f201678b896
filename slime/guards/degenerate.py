"""Is a sample's reply degenerate? The sample filter of the collapse guard (:mod:`slime.guards.admission`).

A reply is degenerate when its text shows one of :func:`slime.guards.behaviour.behaviour_problems`
(a repetition loop, a rare-character run, over-application, a tool-call loop, a word mixing
alphabets) or when its token
ids are garbage as ids: a control token inside the reply (anything but its last token; the
tokenizer's special tokens and its ``<|...|>`` added tokens, such as ``<|im_start|>`` or padding)
or an id the tokenizer does not know (past its vocabulary; a model's embedding rows often are).

An agent episode's response holds several turns of the policy with the environment's tokens
between them (a tool result, the chat template's turn markers; ``loss_mask`` 0): only the policy's
own tokens are read, each of its turns may end on a control token (``<|im_end|>``), and the text
checks read what the policy wrote, not what a tool returned.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from slime.guards.behaviour import behaviour_problems

__all__ = ["GARBAGE_TOKENS", "control_token_ids", "reply_problems"]

#: the problem name of garbage token ids (beside :class:`slime.guards.behaviour.Problem`'s)
GARBAGE_TOKENS = "garbage_tokens"
_CONTROL = re.compile(r"^<\|.*\|>$")


def control_token_ids(tokenizer: Any) -> frozenset[int]:
    """The ids no reply should hold but as its last token: ``tokenizer.all_special_ids`` and
    every added token written ``<|...|>``."""
    ids = set(getattr(tokenizer, "all_special_ids", ()) or ())
    for token_id, added in (getattr(tokenizer, "added_tokens_decoder", None) or {}).items():
        if _CONTROL.match(str(getattr(added, "content", added))):
            ids.add(int(token_id))
    return frozenset(ids)


def policy_spans(loss_mask: Sequence[int] | None, n: int) -> list[tuple[int, int]]:
    """The ``[start, end)`` runs of the response the policy wrote (``loss_mask`` 1): one run for a
    plain reply (``loss_mask`` None: all of it), one per turn for an agent episode."""
    if loss_mask is None:
        return [(0, n)] if n else []
    spans, start = [], None
    for pos, bit in enumerate(loss_mask):
        if bit and start is None:
            start = pos
        elif not bit and start is not None:
            spans.append((start, pos))
            start = None
    if start is not None:
        spans.append((start, len(loss_mask)))
    return spans


def reply_problems(response_ids: Sequence[int], tokenizer: Any,
                   control_ids: frozenset[int] | None = None,
                   loss_mask: Sequence[int] | None = None) -> dict[str, str]:
    """What is degenerate about one reply: ``{problem name: what was found}`` (empty when nothing).

    Args:
        response_ids: the reply's token ids, as sampled.
        tokenizer: the policy's tokenizer (a transformers tokenizer: ``decode``, ``len``).
        control_ids: :func:`control_token_ids` of ``tokenizer`` (computed when None).
        loss_mask: the sample's ``loss_mask`` (same length as ``response_ids``): only its 1-runs,
            the policy's turns, are read (:func:`policy_spans`); None reads the whole reply.

    Returns:
        The names of :class:`slime.guards.behaviour.Problem` found in the decoded text (special tokens
        skipped; up to 3 replacement characters at its very end are the bytes of a last character
        cut by the token limit, not garbage), and :data:`GARBAGE_TOKENS` with the first offending token when the ids are
        garbage.
    """
    ids = [int(i) for i in response_ids]
    control = control_token_ids(tokenizer) if control_ids is None else control_ids
    vocab = len(tokenizer)
    found: dict[str, str] = {}
    spans = policy_spans(loss_mask, len(ids))
    for start, end in spans:
        for pos in range(start, end):
            token_id = ids[pos]
            if token_id >= vocab or token_id < 0:
                found[GARBAGE_TOKENS] = f"id {token_id} outside the vocabulary ({vocab}) at position {pos}"
                break
            if token_id in control and pos != end - 1:
                found[GARBAGE_TOKENS] = f"{tokenizer.convert_ids_to_tokens(token_id)} at position {pos} of {len(ids)}"
                break
        if GARBAGE_TOKENS in found:
            break
    turns = [tokenizer.decode([i for i in ids[a:b] if 0 <= i < vocab], skip_special_tokens=True) for a, b in spans]
    text = "\n".join(turns)
    if text.endswith("\ufffd"):  # a last character cut by the token limit (up to 3 bytes of it): not garbage
        text = text[:-min(3, len(text) - len(text.rstrip("\ufffd")))]
    found.update({problem.value: hit for problem, hit in behaviour_problems(text).items()})
    return found
