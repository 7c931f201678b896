"""Grammar-constrained decoding with llguidance (https://github.com/guidance-ai/llguidance).

A request may carry a grammar (:attr:`SamplingParams.grammar`, llguidance's Lark dialect, which
can embed JSON schemas with ``%json {...}`` and name special tokens as ``<[id]>``). Before each
token is sampled the matcher gives the set of tokens that keep the output inside the grammar;
the others get probability 0 and the rest is renormalised (temperature and top-p apply to what
is left). So the reported logprob of each token is its logprob under the distribution it was
actually sampled from, the constrained one (a token that is the only one allowed has logprob 0).
Once the grammar is complete only the stop tokens are allowed.
"""

from __future__ import annotations

import threading

import torch

_LOCK = threading.Lock()
_TOKENIZERS: dict[tuple, object] = {}


def grammar_tokenizer(tokenizer, vocab_size: int, stop_ids) -> "object":
    """llguidance's view of a transformers fast tokenizer (built once per tokenizer; ~2 s).

    Args:
        tokenizer: a ``PreTrainedTokenizerFast``.
        vocab_size: the model's logit width [V] (may exceed the tokenizer's size).
        stop_ids: ids that end a completion (allowed once the grammar is complete).

    Raises:
        ValueError: a slow (Python) tokenizer, which llguidance cannot read.
    """
    import llguidance.hf

    key = (id(tokenizer), vocab_size, tuple(sorted(stop_ids)))
    with _LOCK:
        got = _TOKENIZERS.get(key)
        if got is None:
            got = _TOKENIZERS[key] = llguidance.hf.from_tokenizer(
                tokenizer, n_vocab=vocab_size, eos_token=sorted(stop_ids))
    return got


def grammar_error(grammar: str, ll_tokenizer=None) -> str | None:
    """None when ``grammar`` (Lark) compiles, else llguidance's error message."""
    import llguidance

    try:
        message = llguidance.LLMatcher.validate_grammar(llguidance.LLMatcher.grammar_from_lark(grammar),
                                                        ll_tokenizer)
    except Exception as exc:  # the Lark front end raises on syntax errors
        return str(exc)
    return message if message and not message.startswith("WARNING") else None


class GrammarConstraint:
    """The per-request matcher: allowed-token masks and token consumption.

    Args:
        ll_tokenizer: from :func:`grammar_tokenizer`.
        grammar: llguidance Lark grammar text.
        vocab_size: logit width [V].

    Raises:
        ValueError: the grammar does not compile.
    """

    def __init__(self, ll_tokenizer, grammar: str, vocab_size: int):
        import llguidance

        self._matcher = llguidance.LLMatcher(ll_tokenizer, llguidance.LLMatcher.grammar_from_lark(grammar),
                                             log_level=0)
        if self._matcher.is_error():
            raise ValueError(f"grammar does not compile: {self._matcher.get_error()}")
        self.vocab_size = vocab_size
        self._words = (vocab_size + 31) // 32
        self._bits = torch.arange(32, dtype=torch.int32)
        self._allowed_V: torch.Tensor | None = None  # the mask until the next consume()

    def allowed_V(self) -> torch.Tensor:
        """Boolean mask of allowed next tokens, shape [V].

        Raises:
            ValueError: the matcher is in an error state (nothing is allowed).
        """
        from llguidance.torch import fill_next_token_bitmask

        if self._allowed_V is not None:
            return self._allowed_V
        if self._matcher.is_error():
            raise ValueError(f"grammar matcher failed: {self._matcher.get_error()}")
        mask = torch.zeros((1, self._words), dtype=torch.int32)
        fill_next_token_bitmask(self._matcher, mask)
        allowed = ((mask[0].unsqueeze(1) >> self._bits) & 1).flatten()[:self.vocab_size].bool()
        if not bool(allowed.any()):
            raise ValueError(f"grammar allows no token here: {self._matcher.get_error() or 'dead end'}")
        self._allowed_V = allowed
        return allowed

    def consume(self, token_id: int) -> None:
        """Advance past a sampled token.

        Raises:
            ValueError: the token was not allowed.
        """
        self._allowed_V = None
        if not self._matcher.consume_token(int(token_id)):
            raise ValueError(f"token {token_id} violates the grammar: {self._matcher.get_error()}")

