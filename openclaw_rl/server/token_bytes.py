"""The raw bytes of each token, for the ``bytes`` field of OpenAI logprob entries.

A token may hold part of a UTF-8 character ("é" is ``[195, 169]``; byte-level BPE can sample
the two bytes as two tokens). OpenAI's ``bytes`` is the token's own bytes, so that joining the
entries' bytes gives the reply's text; decoding one token alone would give ``U+FFFD`` instead.

Byte-level BPE tokenizers (GPT-2 / Qwen / SmolLM2 style) spell each byte as one printable
character (the GPT-2 ``bytes_to_unicode`` table); SentencePiece-style vocabularies spell raw bytes
as ``<0xNN>`` and spaces as ``▁``. Added tokens (``<|im_end|>``, ``<tool_call>``) are their text.
"""

from __future__ import annotations

import json
import re

_BYTE_FALLBACK = re.compile(r"^<0x([0-9A-Fa-f]{2})>$")


def gpt2_byte_decoder() -> dict[str, int]:
    """Inverse of GPT-2's ``bytes_to_unicode``: printable character -> byte value."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) \
        + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {chr(c): b for b, c in zip(bs, cs)}


class TokenBytes:
    """Maps token ids to their bytes (cached per id).

    Args:
        tokenizer: a transformers tokenizer (fast tokenizers: the decoder kind is read from
            the backend; otherwise each token is decoded alone).
    """

    def __init__(self, tokenizer):
        self.tokenizer = tokenizer
        self._added = {i: t.content for i, t in getattr(tokenizer, "added_tokens_decoder", {}).items()}
        kind = None
        backend = getattr(tokenizer, "backend_tokenizer", None)
        if backend is not None:
            # the decoder's own JSON (its pickled state): serialising the whole tokenizer to read
            # it took ~0.7 CPU-s at every server start on a 150k vocabulary
            decoder = json.loads(backend.decoder.__getstate__()) if backend.decoder is not None else {}
            kinds = [decoder.get("type")] + [d.get("type") for d in decoder.get("decoders", [])]
            kind = "bytelevel" if "ByteLevel" in kinds else ("sentencepiece" if "ByteFallback" in kinds
                                                             or "Metaspace" in kinds else None)
        self._kind = kind
        self._byte_decoder = gpt2_byte_decoder() if kind == "bytelevel" else None
        self._cache: dict[int, bytes] = {}

    def __call__(self, token_id: int) -> bytes:
        """The bytes of one token."""
        got = self._cache.get(token_id)
        if got is None:
            got = self._cache[token_id] = self._compute(int(token_id))
        return got

    def _compute(self, token_id: int) -> bytes:
        if token_id in self._added:
            return self._added[token_id].encode("utf-8")
        piece = self.tokenizer.convert_ids_to_tokens(token_id)
        if self._kind == "bytelevel" and piece is not None and all(c in self._byte_decoder for c in piece):
            return bytes(self._byte_decoder[c] for c in piece)
        if self._kind == "sentencepiece" and piece is not None:
            m = _BYTE_FALLBACK.match(piece)
            return bytes([int(m.group(1), 16)]) if m else piece.replace("\u2581", " ").encode("utf-8")
        return self.tokenizer.decode([token_id], skip_special_tokens=False).encode("utf-8")

    def entry(self, token_id: int, logprob: float) -> dict:
        """``{"token", "logprob", "bytes"}``: ``token`` is the bytes as text (an incomplete
        character shows as ``U+FFFD``), ``bytes`` the exact bytes."""
        raw = self(token_id)
        return {"token": raw.decode("utf-8", errors="replace"), "logprob": logprob, "bytes": list(raw)}
