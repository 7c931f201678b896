"""Request-size limits: what keeps one oversized request from taking the server down.

* :class:`BodyLimitMiddleware` (ASGI): a request body over ``--max-request-bytes`` gets 413 with
  an OpenAI-style error, decided from ``Content-Length`` before a byte is read, or while a chunked
  body streams in (counting, never buffering past the limit). A 200 MB body used to grow the
  process to 23.7 GB and get it OOM-killed.
* :func:`prompt_lower_bound` / :func:`check_prompt_bound`: a prompt whose characters cannot fit in
  the context window is refused before the chat template renders it and the tokenizer runs over
  it. Every token of the vocabulary covers at most ``max_token_chars`` characters of text, so a
  prompt of ``C`` message characters has at least ``ceil(C / max_token_chars)`` tokens; when that
  already exceeds the window the request is a 400 ``context_length_exceeded`` (exact: a prompt
  that fits is never refused by the bound). A 20 MB message used to be tokenized in full (34 s)
  before the context check refused it.
"""

from __future__ import annotations

import json
import math
from typing import Any

from openclaw_rl.server.errors import APIError, error_body

__all__ = ["BodyLimitMiddleware", "DEFAULT_MAX_REQUEST_BYTES", "check_prompt_bound", "max_token_chars",
           "prompt_lower_bound"]

#: default ``--max-request-bytes``: 32 MiB (a 128k-token context of long tokens fits)
DEFAULT_MAX_REQUEST_BYTES = 32 * 1024 * 1024
#: a refused body is read and discarded up to this many times the limit before the 413 goes out
DRAIN_FACTOR = 4


class _TooLarge(Exception):
    pass


class BodyLimitMiddleware:
    """ASGI middleware: 413 for request bodies over ``max_bytes``.

    Before answering, the rest of a refused body is received and discarded (never kept), up to
    ``DRAIN_FACTOR x max_bytes`` in all: a client still uploading when the server answers and
    closes would otherwise get a connection reset instead of the 413 (the unread bytes make the
    kernel reset the connection, dropping the response; asynchronous ``httpx`` clients saw
    ``ReadError`` for every 33 MiB body). Larger bodies are answered at once, reset or not.

    Args:
        app: the ASGI app.
        max_bytes: the largest body accepted (bytes, >= 1).
    """

    def __init__(self, app: Any, max_bytes: int):
        if max_bytes < 1:
            raise ValueError(f"max_bytes must be >= 1, got {max_bytes}")
        self.app, self.max_bytes = app, int(max_bytes)

    async def _reject(self, send) -> None:
        body = json.dumps(error_body(f"request body is larger than the server's limit of {self.max_bytes} bytes "
                                     "(--max-request-bytes)", "invalid_request_error",
                                     code="request_too_large")).encode()
        await send({"type": "http.response.start", "status": 413,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                                (b"connection", b"close")]})
        await send({"type": "http.response.body", "body": body})

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        length = dict(scope.get("headers") or []).get(b"content-length")
        if length is not None and length.isdigit() and int(length) > self.max_bytes:
            if int(length) <= DRAIN_FACTOR * self.max_bytes:
                await self._drain(receive, 0)
            return await self._reject(send)
        seen = 0
        started = more = False

        async def counted_receive():
            nonlocal seen, more
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                more = message.get("more_body", False)
                if seen > self.max_bytes:
                    raise _TooLarge()
            return message

        async def tracked_send(message):
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, counted_receive, tracked_send)
        except _TooLarge:
            if not started:
                if more:
                    await self._drain(receive, seen)
                await self._reject(send)

    async def _drain(self, receive, seen: int) -> None:
        """Receive and drop the body until it ends, a disconnect, or ``DRAIN_FACTOR x max_bytes``."""
        while seen <= DRAIN_FACTOR * self.max_bytes:
            message = await receive()
            if message["type"] != "http.request" or not message.get("more_body", False):
                return
            seen += len(message.get("body", b""))


def max_token_chars(tokenizer: Any) -> int:
    """The most characters of text one token of ``tokenizer`` can stand for (>= 1): the longest
    vocabulary entry (byte-level entries have one character per byte) or added token."""
    longest = max((len(t) for t in tokenizer.get_vocab()), default=1)
    added = getattr(tokenizer, "added_tokens_decoder", {}) or {}
    longest = max([longest, *(len(t.content) for t in added.values())])
    return max(1, longest)


def _text_chars(value: Any) -> int:
    if isinstance(value, str):
        return len(value)
    if isinstance(value, list):
        return sum(_text_chars(v) for v in value)
    if isinstance(value, dict):
        return sum(_text_chars(v) for k, v in value.items() if k in ("text", "content", "arguments"))
    return 0


def prompt_lower_bound(messages: list[dict], max_chars_per_token: int) -> int:
    """A lower bound on the prompt's token count from the characters of its message texts
    (contents, text parts, tool-call arguments); the template only adds to them."""
    chars = 0
    for m in messages:
        chars += _text_chars(m.get("content"))
        for call in m.get("tool_calls") or []:
            chars += _text_chars((call or {}).get("function") or {})
    return math.ceil(chars / max(1, max_chars_per_token))


def check_prompt_bound(messages: list[dict], max_chars_per_token: int, max_context: int) -> None:
    """Refuse a prompt that certainly does not fit, before rendering and tokenizing it.

    Raises:
        APIError: 400 ``context_length_exceeded`` when :func:`prompt_lower_bound` plus one new
            token exceeds ``max_context``.
    """
    bound = prompt_lower_bound(messages, max_chars_per_token)
    if bound + 1 > max_context:
        raise APIError(400, f"the prompt has at least {bound} tokens, more than the model's context window of "
                       f"{max_context} tokens (at least one new token must fit)", param="messages",
                       code="context_length_exceeded")
