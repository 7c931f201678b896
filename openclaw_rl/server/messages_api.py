"""``POST /v1/messages``: the Anthropic Messages API (https://docs.anthropic.com/en/api/messages),
served through the chat completions path.

A request is translated into a :class:`~openclaw_rl.server.protocol.ChatCompletionRequest`
(:func:`chat_request`) and served by :meth:`ChatService.run`, so it is rendered by the same chat
template and captured exactly like a chat completion (sessions, main/side turns, next states,
token ids). The reply's events become content blocks
(:class:`~openclaw_rl.server.messages_render.MessageRenderer`, built from the SDK's own pydantic
models in ``anthropic.types`` and imported on the first request, :func:`renderer_class`), streamed as the API's server-sent events
(``message_start``, ``content_block_start`` / ``_delta`` / ``_stop``, ``message_delta``,
``message_stop``) or returned as one ``message``. Errors take Anthropic's shape
(:mod:`openclaw_rl.server.errors`); the key may come as ``x-api-key``.

Served: ``system`` (a string or text blocks), ``messages`` with string content or ``text``,
``image`` (base64 or URL source), ``tool_use``, ``tool_result`` and ``thinking`` blocks, ``tools``
(custom tools: ``name``, ``description``, ``input_schema``), ``tool_choice`` (``auto``, ``any``,
``tool``, ``none``, ``disable_parallel_tool_use``; ``any`` and ``tool`` are enforced by
constrained decoding, :mod:`openclaw_rl.server.tool_choice`), ``max_tokens``, ``stop_sequences``,
``temperature``, ``top_p``, ``stream``, ``metadata.user_id`` (the session key ``user``), and the
capture fields ``session_id``, ``turn_type`` and ``seed`` as extensions. ``top_k`` and ``thinking``
are accepted and not applied. Server tools (web search, code execution, ...) and other block
types (documents, search results) are a 400 naming the type.

Stop reasons: ``tool_use`` when the reply holds calls and the model ended it, ``max_tokens`` when
the budget ended it, ``stop_sequence`` (with the sequence) when one of ``stop_sequences`` did,
``end_turn`` otherwise.
"""

from __future__ import annotations

import asyncio
import functools
import json
import uuid
from typing import Any, Literal, Union

from fastapi import Depends, FastAPI, Request
from fastapi.responses import JSONResponse, StreamingResponse
from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, ValidationError, model_validator

from openclaw_rl.server.errors import (APIError, anthropic_error_body, parse_items_body, until_disconnect,
                                       validation_message)
from openclaw_rl.server.protocol import ChatCompletionRequest


class _Lenient(BaseModel):
    model_config = ConfigDict(extra="allow")


class ImageSource(_Lenient):
    """An image block's source: ``base64`` (``media_type``, ``data``) or ``url``."""

    type: Literal["base64", "url"]
    media_type: str | None = None
    data: str | None = None
    url: str | None = None

    def data_url(self) -> str:
        """The image as a URL (``data:`` for base64 sources)."""
        return f"data:{self.media_type};base64,{self.data}" if self.type == "base64" else (self.url or "")


class ContentBlock(_Lenient):
    """One content block of a message (or of a tool result's content)."""

    type: Literal["text", "image", "tool_use", "tool_result", "thinking", "redacted_thinking"]
    text: str | None = None
    source: ImageSource | None = None
    id: str | None = None
    name: str | None = None
    input: dict[str, Any] | None = None
    tool_use_id: str | None = None
    content: Union[str, list["ContentBlock"], None] = None
    is_error: bool | None = None
    thinking: str | None = None

    @model_validator(mode="after")
    def _fields(self) -> "ContentBlock":
        need = {"text": ("text",), "image": ("source",), "tool_use": ("id", "name", "input"),
                "tool_result": ("tool_use_id",), "thinking": ("thinking",)}.get(self.type, ())
        missing = [f for f in need if getattr(self, f) is None]
        if missing:
            raise ValueError(f"a {self.type} block needs {', '.join(repr(f) for f in missing)}")
        return self

    def result_text(self) -> str:
        """A ``tool_result`` block's content as text (its text blocks joined)."""
        if isinstance(self.content, str):
            return self.content
        return "".join(b.text or "" for b in self.content or [] if b.type == "text")


class InputMessage(_Lenient):
    """One message: ``user`` or ``assistant``, content a string or blocks."""

    role: Literal["user", "assistant"]
    content: Union[str, list[ContentBlock]]


class ToolDef(_Lenient):
    """A custom tool (``{"name", "description", "input_schema"}``)."""

    type: Literal["custom"] | None = None
    name: str = Field(min_length=1)
    description: str | None = None
    input_schema: dict[str, Any]


class ToolChoice(_Lenient):
    """``tool_choice``: ``auto``, ``any`` (some tool), ``tool`` (``name``) or ``none``."""

    type: Literal["auto", "any", "tool", "none"]
    name: str | None = None
    disable_parallel_tool_use: bool | None = None

    @model_validator(mode="after")
    def _name(self) -> "ToolChoice":
        if self.type == "tool" and not self.name:
            raise ValueError("tool_choice of type 'tool' needs 'name'")
        return self


class SystemBlock(_Lenient):
    """A text block of ``system``."""

    type: Literal["text"]
    text: str


class Metadata(_Lenient):
    """``metadata``: ``user_id`` becomes the session key ``user``."""

    user_id: str | None = None


class MessagesRequest(_Lenient):
    """The request body of ``POST /v1/messages`` (the subset served, see the module docstring)."""

    model: str | None = None
    max_tokens: StrictInt = Field(ge=1)
    messages: list[InputMessage] = Field(min_length=1)
    system: Union[str, list[SystemBlock], None] = None
    tools: list[ToolDef] | None = None
    tool_choice: ToolChoice | None = None
    stop_sequences: list[str] | None = Field(default=None, max_length=4)
    temperature: float | None = Field(default=None, ge=0.0, le=1.0)
    top_p: float | None = Field(default=None, gt=0.0, le=1.0)
    top_k: StrictInt | None = Field(default=None, ge=0)
    stream: StrictBool = False
    metadata: Metadata | None = None
    seed: StrictInt | None = None
    session_id: str | None = None
    turn_type: Literal["main", "side"] | None = None


def _user_message(blocks: list[ContentBlock]) -> list[dict]:
    """A user message's blocks as chat messages: each ``tool_result`` a ``tool`` message (in
    order), the text and image blocks one ``user`` message after them."""
    out, parts = [], []
    for block in blocks:
        if block.type == "tool_result":
            out.append({"role": "tool", "tool_call_id": block.tool_use_id, "content": block.result_text()})
        elif block.type == "text":
            parts.append({"type": "text", "text": block.text})
        elif block.type == "image":
            parts.append({"type": "image_url", "image_url": {"url": block.source.data_url()}})
        else:
            raise APIError(400, f"a user message cannot hold a {block.type} block", param="messages")
    if parts:
        out.append({"role": "user", "content": parts})
    return out


def _assistant_message(blocks: list[ContentBlock]) -> dict:
    """An assistant message's blocks as one chat message (text, ``tool_calls``, reasoning)."""
    msg: dict = {"role": "assistant", "content": "".join(b.text for b in blocks if b.type == "text")}
    calls = [{"id": b.id, "type": "function",
              "function": {"name": b.name, "arguments": json.dumps(b.input, ensure_ascii=False)}}
             for b in blocks if b.type == "tool_use"]
    if calls:
        msg["tool_calls"] = calls
    thinking = "".join(b.thinking for b in blocks if b.type == "thinking")
    if thinking:
        msg["reasoning_content"] = thinking
    if any(b.type in ("image", "tool_result") for b in blocks):
        raise APIError(400, "an assistant message holds only text, tool_use and thinking blocks", param="messages")
    return msg


def chat_messages(req: MessagesRequest) -> list[dict]:
    """``system`` and ``messages`` as chat completions messages."""
    out = []
    if req.system:
        text = req.system if isinstance(req.system, str) else "\n\n".join(b.text for b in req.system)
        out.append({"role": "system", "content": text})
    for m in req.messages:
        blocks = [ContentBlock(type="text", text=m.content)] if isinstance(m.content, str) else m.content
        out += _user_message(blocks) if m.role == "user" else [_assistant_message(blocks)]
    return out


def _tool_choice(choice: ToolChoice | None):
    if choice is None:
        return None
    return {"auto": "auto", "none": "none", "any": "required"}.get(
        choice.type, {"type": "function", "function": {"name": choice.name}})


def chat_request(req: MessagesRequest) -> ChatCompletionRequest:
    """The chat completion request that serves ``req``.

    Raises:
        APIError: 400 when a message holds a block its role cannot, or the translated request
            is not valid (e.g. ``tool_choice`` names a tool that is not in ``tools``).
    """
    choice = req.tool_choice
    body = {"model": req.model, "messages": chat_messages(req),
            "tools": [{"type": "function", "function": {"name": t.name, "description": t.description,
                                                        "parameters": t.input_schema}} for t in req.tools or []]
            or None,
            "tool_choice": _tool_choice(choice),
            "parallel_tool_calls": False if choice is not None and choice.disable_parallel_tool_use else None,
            "max_tokens": req.max_tokens, "stop": req.stop_sequences or None, "temperature": req.temperature,
            "top_p": req.top_p, "seed": req.seed, "session_id": req.session_id, "turn_type": req.turn_type,
            "user": req.metadata.user_id if req.metadata else None}
    try:
        return ChatCompletionRequest.model_validate({k: v for k, v in body.items() if v is not None})
    except ValidationError as exc:
        message, param = validation_message(exc.errors())
        raise APIError(400, message, param=param, code="invalid_value") from exc


@functools.cache
def renderer_class() -> type:
    """:class:`~openclaw_rl.server.messages_render.MessageRenderer`, imported on the first
    ``/v1/messages`` request rather than at server start: the Anthropic SDK's types take about 2
    CPU-seconds to import (benchmarks/server_start.py), which a server whose clients speak only chat
    completions never needs."""
    from openclaw_rl.server.messages_render import MessageRenderer

    return MessageRenderer


def _dump(model: BaseModel) -> dict:
    return model.model_dump(mode="json", exclude_unset=True)


def _sse(event: BaseModel | dict) -> str:
    body = event if isinstance(event, dict) else _dump(event)
    return f"event: {body['type']}\ndata: {json.dumps(body, ensure_ascii=False)}\n\n"


def install_messages_route(app: FastAPI, service, check_key) -> None:
    """Add ``POST /v1/messages`` to ``app``.

    Args:
        app: the server's FastAPI app.
        service: the :class:`~openclaw_rl.server.chat.ChatService` that serves (and captures).
        check_key: the API-key dependency (``x-api-key`` or a bearer token).
    """

    @app.post("/v1/messages", dependencies=[Depends(check_key)])
    async def messages(request: Request):
        """Serve one Messages API request (see the module docstring); errors are Anthropic's."""
        req = await asyncio.to_thread(parse_items_body, await request.body(), MessagesRequest)
        chat = chat_request(req)
        headers = {k.lower(): v for k, v in request.headers.items()}
        renderer = renderer_class()(f"msg_{uuid.uuid4().hex}", service.model_name)
        events = service.run(chat, headers, completion_id=renderer.id)
        if not req.stream:
            async for event in until_disconnect(events, request):
                renderer.push(event)
            return JSONResponse(_dump(renderer.message()))
        first = await events.__anext__()  # request errors are a JSON 4xx before the stream starts

        async def stream():
            try:
                for event in renderer.start(0) + renderer.push(first):
                    yield _sse(event)
                async for chat_event in events:
                    for event in renderer.push(chat_event):
                        yield _sse(event)
            except APIError as exc:  # the engine failed mid-stream: an in-band error event
                yield _sse(anthropic_error_body(exc.status, exc.message))
            finally:
                await events.aclose()

        return StreamingResponse(stream(), media_type="text/event-stream",
                                 headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})
