"""Incremental detokenization: text grows token by token without re-decoding the whole reply.

Each new token is decoded together with a few tokens before it (a window), and the text that
window adds is appended; a window that ends in an incomplete UTF-8 character (``U+FFFD``) waits
for the next token. Cost per token is O(window), not O(reply length). When the window's decoding
is not a clean extension (tokenizers that merge across tokens), the whole reply is decoded once.
"""

from __future__ import annotations


class IncrementalDecoder:
    """Append token ids, read the decoded text.

    Args:
        tokenizer: a transformers tokenizer (special tokens are kept as text).
        window: tokens of left context decoded with each new token.
    """

    def __init__(self, tokenizer, window: int = 4):
        self.tokenizer, self.window = tokenizer, window
        self.ids: list[int] = []
        self.text = ""
        self._confirmed = 0  # ids already reflected in self.text

    def _decode(self, ids: list[int]) -> str:
        return self.tokenizer.decode(ids, skip_special_tokens=False)

    def push(self, token_id: int) -> str | None:
        """Add one id; return the full text so far, or None while a character is incomplete."""
        self.ids.append(int(token_id))
        start = max(0, self._confirmed - self.window)
        prefix = self._decode(self.ids[start:self._confirmed])
        full = self._decode(self.ids[start:])
        if full.endswith("\ufffd"):
            return None
        if full.startswith(prefix):
            self.text += full[len(prefix):]
        else:
            self.text = self._decode(self.ids)
        self._confirmed = len(self.ids)
        return self.text

    def flush(self) -> str:
        """The text of every id pushed, incomplete characters included."""
        if self._confirmed < len(self.ids):
            self.text = self._decode(self.ids)
            self._confirmed = len(self.ids)
        return self.text
