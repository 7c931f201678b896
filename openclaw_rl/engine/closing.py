"""Closing a constrained reply within its token budget (budget-aware constrained decoding).

A grammar (a ``response_format`` schema, a forced tool call) only says which tokens may come
next; on its own it lets a model fill an unbounded string or list until ``max_tokens`` cuts the
reply, which then is not JSON (smollm2-135m wrote random-letter strings into a ``list[str]`` until
``max_tokens`` 128 on 1 of 20 seeds, ``benchmarks/structured_outputs.py``). OpenAI answers such a
reply with finish reason ``length`` and the truncated text. This server instead keeps, at every
step, a *closing*: a short sequence of tokens that completes the grammar from the current state.
While the remaining budget exceeds what the closing needs, decoding is free (the grammar's mask
only); once it does not, the mask allows only tokens that follow the closing, and the stop token
once the grammar is complete. So a constrained reply that can be closed in time always ends
complete and parses: its last string or list is cut short instead of the JSON.

The closing is found by :func:`closing_tokens`: a search over llguidance's matcher (a deep copy;
the request's own matcher is untouched) that takes the tokens the grammar forces
(``compute_ff_tokens``: a key's remaining characters, ``": "``, a tool call's end marker), and
at a choice point writes single-byte tokens in the order ``" } ] , : 0 { [`` then every other
byte, where ``"``, ``}`` and ``]`` are compared by one step of look-ahead (inside a string ``"``
ends it; right after ``[`` ``]`` is shorter than opening an item). It is short, not always the
shortest: a required key gets the first value the order reaches (``""``, ``0``, ``false``,
``[]``, ``{...}``, an enum's first letters). A state the search cannot complete within the budget
(a ``pattern`` that keeps one byte order from ending, say), or where it would write the same byte
more than :data:`MAX_REPEAT` times in a row (a string that must reach a long ``minLength``), has
no closing, and decoding there is free as before.

Spec followed: llguidance's ``LLMatcher`` (https://github.com/guidance-ai/llguidance,
``python/llguidance/_lib.pyi``): ``deep_copy``, ``compute_ff_tokens``, ``try_consume_tokens``,
``rollback``, ``is_accepting``.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

#: the bytes tried first at a choice point: end a string, an object, a list; the next item's
#: separator; the shortest number; an empty object or list
_FIRST = b'"}],:0{['
_ORDER = tuple(_FIRST) + tuple(b for b in range(256) if b not in _FIRST)
#: the bytes compared by one step of look-ahead (each ends something in one context and opens
#: or extends something in another)
_LOOK = b'"}]'

#: the most times in a row a closing writes the same byte (``}}}`` closes nested objects; more is
#: a string being filled to its ``minLength``, which is no closing worth searching for)
MAX_REPEAT = 16

_LOCK = threading.Lock()
_VOCABS: dict[int, "TokenBytes"] = {}


@dataclass(frozen=True)
class TokenBytes:
    """The byte view of a vocabulary that the closing search needs.

    Attributes:
        single: byte value -> the id of the token that is exactly that byte.
        by_bytes: token bytes -> id (the first such id), special tokens left out.
        stop_ids: the ids that end a completion (the grammar tokenizer's EOS ids).
    """

    single: dict[int, int]
    by_bytes: dict[bytes, int]
    stop_ids: frozenset[int]


def token_bytes(ll_tokenizer) -> TokenBytes:
    """The :class:`TokenBytes` of an llguidance tokenizer (built once per tokenizer: one
    ``decode_bytes`` per id, about 0.1 s on a 150k vocabulary)."""
    with _LOCK:
        got = _VOCABS.get(id(ll_tokenizer))
        if got is None:
            single: dict[int, int] = {}
            by_bytes: dict[bytes, int] = {}
            for tid in range(ll_tokenizer.vocab_size):
                if ll_tokenizer.is_special_token(tid):
                    continue
                raw = ll_tokenizer.decode_bytes([tid])
                by_bytes.setdefault(raw, tid)
                if len(raw) == 1:
                    single.setdefault(raw[0], tid)
            got = _VOCABS[id(ll_tokenizer)] = TokenBytes(single, by_bytes, frozenset(ll_tokenizer.eos_tokens))
    return got


def closing_tokens(matcher, vocab: TokenBytes, cap: int, look: bool = True) -> list[int] | None:
    """Token ids that complete ``matcher``'s grammar from its current state (see the module
    docstring), at most ``cap`` of them; ``[]`` when it is complete already; None when the search
    finds no completion within ``cap``. ``matcher`` itself is not advanced.

    Args:
        matcher: an ``llguidance.LLMatcher`` not in an error state.
        vocab: the vocabulary's :class:`TokenBytes`.
        cap: the most tokens the closing may have.
        look: compare ``"``, ``}`` and ``]`` by one step of look-ahead (the look-ahead itself
            runs without it).
    """
    m = matcher.deep_copy()
    out: list[int] = []
    same = 0  # how many times in a row the search wrote the same byte
    while len(out) <= cap:
        if m.is_accepting():
            return out
        forced = m.compute_ff_tokens()
        if forced:
            if not m.consume_tokens(forced):
                return None
            out += forced
            same = 0
            continue
        step = _look_ahead(m, vocab, cap - len(out) - 1) if look else None
        if step is None:
            step = next((t for b in _ORDER if (t := vocab.single.get(b)) is not None
                         and m.try_consume_tokens([t]) == 1), None)
            if step is None:
                return None
        else:
            m.consume_token(step)
        same = same + 1 if out and out[-1] == step else 1
        if same > MAX_REPEAT:  # filling a string that must be longer (minLength): no closing in sight
            return None
        out.append(step)
    return None


def _look_ahead(m, vocab: TokenBytes, cap: int) -> int | None:
    """Of the allowed look-ahead bytes, the token whose closing is shortest; None when ``"`` is
    not allowed (no choice between ending a string or opening an item and ending a structure)."""
    quote = vocab.single.get(_LOOK[0])
    if quote is None or m.validate_tokens([quote]) != 1:
        return None
    best: tuple[int, int] | None = None
    for b in _LOOK:
        tid = vocab.single.get(b)
        if tid is None or m.try_consume_tokens([tid]) != 1:
            continue
        rest = closing_tokens(m, vocab, cap, look=False)
        m.rollback(1)
        if rest is not None and (best is None or len(rest) < best[1]):
            best = (tid, len(rest))
    return None if best is None else best[0]


def closing_prefix_ids(closing: list[int], vocab: TokenBytes, ll_tokenizer) -> set[int]:
    """The tokens that start ``closing``: its first id, and every token whose bytes are a prefix
    of the closing's leading run of ordinary (non-special) tokens (``"]}`` admits ``"``,
    ``"]`` and ``"]}`` where the vocabulary has them). Empty for an empty closing."""
    if not closing:
        return set()
    ids = {closing[0]}
    run = []
    for tid in closing:
        if ll_tokenizer.is_special_token(tid):
            break
        run.append(tid)
    text = ll_tokenizer.decode_bytes(run) if run else b""
    for end in range(1, len(text) + 1):
        tid = vocab.by_bytes.get(text[:end])
        if tid is not None:
            ids.add(tid)
    return ids
