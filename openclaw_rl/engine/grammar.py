"""Grammar-constrained decoding with llguidance (https://github.com/guidance-ai/llguidance).

A request may carry a grammar (:attr:`SamplingParams.grammar`, llguidance's Lark dialect, which
can embed JSON schemas with ``%json {...}`` and name special tokens as ``<[id]>``). Before each
token is sampled the matcher gives the set of tokens that keep the output inside the grammar;
the others get probability 0 and the rest is renormalised (temperature and top-p apply to what
is left). So the reported logprob of each token is its logprob under the distribution it was
actually sampled from, the constrained one (a token that is the only one allowed has logprob 0).
Once the grammar is complete only the stop tokens are allowed.

Given the tokens a request may still sample (its budget), the mask also keeps the reply closable
in time (:mod:`openclaw_rl.engine.closing`): once the budget is down to what the closing needs,
only tokens that follow the closing are allowed, so a constrained reply ends complete (its last
string or list cut short) instead of being cut by ``max_tokens``.
"""

from __future__ import annotations

import threading

import torch

from openclaw_rl.engine.closing import closing_prefix_ids, closing_tokens, token_bytes

#: the longest closing searched for (tokens); a state that needs more decodes as if unlimited
MAX_CLOSING = 256

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
        self._ll_tokenizer = ll_tokenizer
        token_bytes(ll_tokenizer)  # built once per tokenizer, here off the event loop
        self._closing: tuple[int, list[int] | None] | None = None  # (cap, closing) until the next consume()

    def allowed_V(self, budget: int | None = None) -> torch.Tensor:
        """Boolean mask of allowed next tokens, shape [V].

        Args:
            budget: the tokens the request may still sample, this one included (None: no
                limit). When the budget is down to what the closing needs (its tokens and the
                stop token), only the tokens that start the closing are allowed, or the stop
                tokens once the grammar is complete (:mod:`openclaw_rl.engine.closing`).

        Raises:
            ValueError: the matcher is in an error state (nothing is allowed).
        """
        allowed = self._grammar_V()
        if budget is None:
            return allowed
        closing = self.closing(budget)
        if closing is None or len(closing) + 1 < budget:
            return allowed
        return self.closing_V(budget)

    def closing(self, budget: int) -> list[int] | None:
        """The tokens that complete the grammar from here, if it can be completed within
        ``budget - 1`` tokens (the last one is the stop token) and :data:`MAX_CLOSING`; None
        otherwise."""
        cap = min(budget - 1, MAX_CLOSING)
        if self._closing is None or (self._closing[1] is None and self._closing[0] < cap):
            self._closing = (cap, closing_tokens(self._matcher, token_bytes(self._ll_tokenizer), max(cap, 0)))
        found = self._closing[1]
        return found if found is not None and len(found) <= cap else None

    def closing_V(self, budget: int) -> torch.Tensor:
        """The grammar's mask narrowed to the tokens that start the closing (the stop tokens when
        the grammar is complete); the grammar's own mask when there is no closing within
        ``budget``."""
        allowed = self._grammar_V()
        closing = self.closing(budget)
        if closing is None:
            return allowed
        vocab = token_bytes(self._ll_tokenizer)
        ids = closing_prefix_ids(closing, vocab, self._ll_tokenizer) if closing else vocab.stop_ids
        keep = torch.zeros_like(allowed)
        keep[[i for i in ids if i < self.vocab_size]] = True
        narrowed = allowed & keep
        return narrowed if bool(narrowed.any()) else allowed

    def advance(self, token_id: int, budget: int) -> bool:
        """Consume ``token_id`` unless, from the state after it, the grammar could no longer be
        completed within the ``budget - 1`` tokens left (the check applies only where the current
        state has a closing within ``budget``); False (nothing consumed) in that case.

        Raises:
            ValueError: the token was not allowed.
        """
        closable = self.closing(budget) is not None
        self.consume(token_id)
        if not closable or self.closing(budget - 1) is not None:
            return True
        self._matcher.rollback(1)
        self._allowed_V = self._closing = None
        return False

    def _grammar_V(self) -> torch.Tensor:
        """The grammar's own mask [V] (cached until the next consume)."""
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
        self._allowed_V = self._closing = None
        if not self._matcher.consume_token(int(token_id)):
            raise ValueError(f"token {token_id} violates the grammar: {self._matcher.get_error()}")

