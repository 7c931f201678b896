"""What a constrained-decoding grammar lets the engine write, for the structured-output tests."""

from __future__ import annotations

from typing import Any

from openclaw_rl.engine.grammar import GrammarConstraint, grammar_tokenizer
from openclaw_rl.server.prompt import tokenize


def grammar_accepts(tok: Any, grammar: str, text: str) -> bool:
    """Whether ``grammar`` (llguidance, as the server compiles it) lets the engine write ``text``
    (its tokens under ``tok``, a ChatML tokenizer) and then stop at ``<|im_end|>``.

    Returns False when a token of ``text`` is not allowed, when the stop token is not allowed after
    it, or when the matcher rejects the text outright (``ValueError``)."""
    stop = [tok.convert_tokens_to_ids("<|im_end|>")]
    constraint = GrammarConstraint(grammar_tokenizer(tok, len(tok), stop), grammar, len(tok))
    try:
        for token_id in tokenize(tok, text):
            if not bool(constraint.allowed_V()[token_id]):
                return False
            constraint.consume(token_id)
        return bool(constraint.allowed_V()[stop[0]])
    except ValueError:
        return False
