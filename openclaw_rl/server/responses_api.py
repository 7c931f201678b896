"""``POST /v1/responses``: the OpenAI Responses API (https://platform.openai.com/docs/api-reference/responses),
served through the chat completions path.

A request is translated into a :class:`~openclaw_rl.server.protocol.ChatCompletionRequest`
(:func:`chat_request`) and served by :meth:`ChatService.run`, so it is rendered by the same chat
template and captured exactly like a chat completion: same sessions (continuation matching works
on the translated messages), main/side turns, next states, token ids. The reply's events become
output items (:class:`ResponseRenderer`, built from the SDK's own pydantic models in
``openai.types.responses``), streamed as the API's typed events or returned as one ``response``.

Served: ``input`` (a string, or items: messages with ``input_text`` / ``output_text`` /
``input_image`` parts, ``function_call``, ``function_call_output``, ``reasoning``),
``instructions``, function ``tools`` and ``tool_choice`` (enforced as in chat,
:mod:`openclaw_rl.server.tool_choice`), ``parallel_tool_calls``, ``max_output_tokens``,
``temperature``, ``top_p``, ``stream``, ``user``, ``prompt_cache_key``, ``text.format`` (passed on as
``response_format``), ``previous_response_id`` and ``store``, and the capture fields ``session_id``,
``turn_type`` and ``seed`` as extensions. Other tool and item types (web search, file search,
computer use, MCP, item references) are a 400 naming the type.

``previous_response_id``: the server keeps the conversation of each stored response
(``store`` not false) in memory, the newest :data:`KEPT_RESPONSES` of them; a request naming one
continues it (its ``instructions`` are not carried over, as the API says). An id the server does
not keep (never seen, evicted, or lost with a restart) is a 400 ``previous_response_not_found``.

``GET /v1/responses/{id}`` returns a kept response as it ended (the SDK's
``client.responses.retrieve``); an id the server does not keep is a 404 ``response_not_found``
in OpenAI's error shape.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
import uuid
from collections import OrderedDict
from typing import Any, Literal, Union

from fastapi import Depends, FastAPI, Request
from fastapi.responses import JSONResponse, StreamingResponse
from openai.types.responses import (Response, ResponseCompletedEvent, ResponseContentPartAddedEvent,
                                    ResponseContentPartDoneEvent, ResponseCreatedEvent, ResponseErrorEvent,
                                    ResponseFunctionCallArgumentsDeltaEvent,
                                    ResponseFunctionCallArgumentsDoneEvent, ResponseFunctionToolCall,
                                    ResponseIncompleteEvent, ResponseInProgressEvent, ResponseOutputItemAddedEvent,
                                    ResponseOutputItemDoneEvent, ResponseOutputMessage, ResponseOutputText,
                                    ResponseReasoningItem, ResponseReasoningTextDeltaEvent,
                                    ResponseReasoningTextDoneEvent, ResponseTextDeltaEvent, ResponseTextDoneEvent)
from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, ValidationError, model_validator

from openclaw_rl.server.errors import APIError, parse_items_body, until_disconnect, validation_message
from openclaw_rl.server.protocol import ChatCompletionRequest
from openclaw_rl.server.reply import ChatEvent
from openclaw_rl.server.reply_blocks import BlockEvent, BlockSequencer

#: how many stored responses the server keeps for ``previous_response_id`` (the oldest go first)
KEPT_RESPONSES = 4096


class _Lenient(BaseModel):
    model_config = ConfigDict(extra="allow")


class ContentPart(_Lenient):
    """A content part of an input message, a function call output or a reasoning item."""

    type: Literal["input_text", "output_text", "text", "refusal", "input_image", "summary_text",
                  "reasoning_text"]
    text: str | None = None
    refusal: str | None = None
    image_url: str | None = None
    detail: Literal["auto", "low", "high"] | None = None

    @model_validator(mode="after")
    def _fields(self) -> "ContentPart":
        if self.type == "input_image" and not self.image_url:
            raise ValueError("an input_image part needs 'image_url' (a data: URL); file_id is not served")
        if self.type == "refusal" and self.refusal is None:
            raise ValueError("a refusal part needs 'refusal'")
        if self.type not in ("input_image", "refusal") and self.text is None:
            raise ValueError(f"a {self.type} part needs 'text'")
        return self

    def to_chat(self) -> dict:
        """The chat completions part (``text`` or ``image_url``)."""
        if self.type == "input_image":
            return {"type": "image_url", "image_url": {"url": self.image_url, "detail": self.detail or "auto"}}
        return {"type": "text", "text": self.refusal if self.type == "refusal" else self.text}


def _parts_text(content: Union[str, list[ContentPart], None]) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "".join(p.to_chat().get("text", "") for p in content if p.type != "input_image")


class InputItem(_Lenient):
    """One item of ``input``: a message (``type`` may be left out), a ``function_call`` the model
    made, a ``function_call_output`` the client sends back, or a ``reasoning`` item."""

    type: Literal["message", "function_call", "function_call_output", "reasoning"] = "message"
    role: Literal["user", "system", "developer", "assistant"] | None = None
    content: Union[str, list[ContentPart], None] = None
    call_id: str | None = None
    name: str | None = None
    arguments: str | None = None
    output: Union[str, list[ContentPart], None] = None
    summary: list[ContentPart] | None = None

    @model_validator(mode="after")
    def _fields(self) -> "InputItem":
        need = {"message": ("role", "content"), "function_call": ("call_id", "name", "arguments"),
                "function_call_output": ("call_id", "output")}.get(self.type, ())
        missing = [f for f in need if getattr(self, f) is None]
        if missing:
            raise ValueError(f"a {self.type} item needs {', '.join(repr(f) for f in missing)}")
        return self


class FunctionToolDef(_Lenient):
    """A function tool (``{"type": "function", "name", "description", "parameters", "strict"}``)."""

    type: Literal["function"]
    name: str = Field(min_length=1)
    description: str | None = None
    parameters: dict[str, Any] | None = None
    strict: bool | None = None


class FunctionChoice(_Lenient):
    """``tool_choice`` naming a function (``{"type": "function", "name": ...}``)."""

    type: Literal["function"]
    name: str


class TextFormat(_Lenient):
    """``text.format``: ``text``, ``json_object`` or ``json_schema`` (``name``, ``schema``, ``strict``),
    passed on as chat's ``response_format`` (:mod:`openclaw_rl.server.response_format`)."""

    type: Literal["text", "json_object", "json_schema"] = "text"
    name: str | None = None
    schema_: dict[str, Any] | None = Field(default=None, alias="schema")
    strict: bool | None = None
    description: str | None = None


class TextConfig(_Lenient):
    """``text``: the reply's format."""

    format: TextFormat | None = None


class ResponsesRequest(_Lenient):
    """The request body of ``POST /v1/responses`` (the subset served, see the module docstring)."""

    model: str | None = None
    input: Union[str, list[InputItem]]
    instructions: str | None = None
    tools: list[FunctionToolDef] | None = None
    tool_choice: Union[Literal["none", "auto", "required"], FunctionChoice, None] = None
    parallel_tool_calls: StrictBool | None = None
    max_output_tokens: StrictInt | None = Field(default=None, ge=1)
    temperature: float | None = Field(default=None, ge=0.0, le=2.0)
    top_p: float | None = Field(default=None, gt=0.0, le=1.0)
    stream: StrictBool = False
    previous_response_id: str | None = None
    store: StrictBool | None = None
    user: str | None = None
    prompt_cache_key: str | None = None
    text: TextConfig | None = None
    metadata: dict[str, Any] | None = None
    seed: StrictInt | None = None
    session_id: str | None = None
    turn_type: Literal["main", "side"] | None = None


def _assistant(messages: list[dict]) -> dict:
    """The assistant message that output items of one turn go into (consecutive message,
    function call and reasoning items of the model form one assistant chat message)."""
    if messages and messages[-1]["role"] == "assistant":
        return messages[-1]
    messages.append({"role": "assistant", "content": None})
    return messages[-1]


def input_messages(req: ResponsesRequest) -> list[dict]:
    """``input`` as chat completions messages (without ``instructions``).

    A string is one user message; a function call joins the assistant message before it (or opens
    one); a function call output becomes a ``tool`` message; a reasoning item becomes the next
    assistant message's ``reasoning_content``.
    """
    if isinstance(req.input, str):
        return [{"role": "user", "content": req.input}]
    out: list[dict] = []
    for item in req.input:
        if item.type == "message" and item.role != "assistant":
            content = item.content if isinstance(item.content, str) else [p.to_chat() for p in item.content]
            out.append({"role": item.role, "content": content})
        elif item.type == "message":
            msg = _assistant(out)
            msg["content"] = (msg["content"] or "") + _parts_text(item.content)
        elif item.type == "function_call":
            _assistant(out).setdefault("tool_calls", []).append(
                {"id": item.call_id, "type": "function", "function": {"name": item.name, "arguments": item.arguments}})
        elif item.type == "function_call_output":
            out.append({"role": "tool", "tool_call_id": item.call_id, "content": _parts_text(item.output)})
        elif item.type == "reasoning":
            msg = _assistant(out)
            msg["reasoning_content"] = (msg.get("reasoning_content") or "") + _parts_text(item.content or item.summary)
    for msg in out:
        if msg["role"] == "assistant" and msg["content"] is None and not msg.get("tool_calls"):
            msg["content"] = ""
    return out


def _response_format(text: TextConfig | None) -> dict | None:
    fmt = text.format if text else None
    if fmt is None or fmt.type == "text":
        return None
    if fmt.type == "json_object":
        return {"type": "json_object"}
    return {"type": "json_schema", "json_schema": {"name": fmt.name or "response", "schema": fmt.schema_ or {},
                                                   "strict": fmt.strict, "description": fmt.description}}


def chat_request(req: ResponsesRequest, history: list[dict]) -> tuple[ChatCompletionRequest, list[dict]]:
    """The chat completion request that serves ``req``.

    Args:
        req: the validated Responses request.
        history: the kept conversation of ``previous_response_id`` (chat messages), or ``[]``.

    Returns:
        ``(chat request, this request's own input messages)``.

    Raises:
        APIError: 400 when the translated request is not valid (e.g. ``tool_choice`` names a
            function that is not in ``tools``, or nothing to answer).
    """
    own = input_messages(req)
    system = [{"role": "system", "content": req.instructions}] if req.instructions else []
    body = {"model": req.model, "messages": system + history + own,
            "tools": [{"type": "function", "function": t.model_dump(include={"name", "description", "parameters"},
                                                                    exclude_none=True)} for t in req.tools or []]
            or None,
            "tool_choice": ({"type": "function", "function": {"name": req.tool_choice.name}}
                            if isinstance(req.tool_choice, FunctionChoice) else req.tool_choice),
            "parallel_tool_calls": req.parallel_tool_calls, "max_completion_tokens": req.max_output_tokens,
            "temperature": req.temperature, "top_p": req.top_p, "seed": req.seed, "user": req.user,
            "prompt_cache_key": req.prompt_cache_key, "session_id": req.session_id, "turn_type": req.turn_type,
            "response_format": _response_format(req.text)}
    try:
        return ChatCompletionRequest.model_validate({k: v for k, v in body.items() if v is not None}), own
    except ValidationError as exc:
        message, param = validation_message(exc.errors())
        raise APIError(400, message.replace("messages", "input", 1), param="input" if param and
                       param.startswith("messages") else param, code="invalid_value") from exc


class KeptResponses:
    """The conversations of stored responses, for ``previous_response_id`` (thread-safe).

    Each response keeps only what it added (its own input messages and its reply), the id of
    the response it continued and its final ``response`` object; :meth:`history` walks the chain
    back, :meth:`response` gives the object.

    Args:
        capacity: how many responses are kept (least recently used go first).
    """

    def __init__(self, capacity: int = KEPT_RESPONSES):
        self.capacity = capacity
        self._kept: OrderedDict[str, tuple[str | None, list[dict], dict]] = OrderedDict()
        self._lock = threading.Lock()

    def put(self, response_id: str, previous_id: str | None, messages: list[dict], response: dict) -> None:
        """Keep ``messages`` (this response's input messages and its reply) and ``response`` (the
        final ``response`` object, JSON) under ``response_id``."""
        with self._lock:
            self._kept[response_id] = (previous_id, messages, response)
            while len(self._kept) > self.capacity:
                self._kept.popitem(last=False)

    def response(self, response_id: str) -> dict:
        """The final ``response`` object kept under ``response_id``.

        Raises:
            APIError: 404 ``response_not_found`` when it is not kept (never stored here, stored
                with ``store: false``, evicted, or lost with a restart).
        """
        with self._lock:
            kept = self._kept.get(response_id)
        if kept is None:
            raise APIError(404, f"response {response_id!r} is not kept by this server (never stored here, "
                                "sent with store false, evicted, or lost with a restart)",
                           param="response_id", code="response_not_found")
        return kept[2]

    def history(self, response_id: str) -> list[dict]:
        """The whole conversation up to and including ``response_id``'s reply.

        Raises:
            APIError: 400 ``previous_response_not_found`` when it (or one it continued) is not kept.
        """
        parts, rid = [], response_id
        with self._lock:
            while rid is not None:
                if rid not in self._kept:
                    raise APIError(400, f"previous response {rid!r} is not kept by this server (never stored "
                                        "here, evicted, or lost with a restart): send the whole conversation "
                                        "as input instead", param="previous_response_id",
                                   code="previous_response_not_found")
                self._kept.move_to_end(rid)
                rid, messages, _ = self._kept[rid]
                parts.append(messages)
        return [m for messages in reversed(parts) for m in messages]


def _dump(model: BaseModel) -> dict:
    return model.model_dump(mode="json", exclude_unset=True, by_alias=True)


class ResponseRenderer:
    """One reply as a Responses API ``response``: its stream events and its final object.

    Args:
        response_id: the ``resp_...`` id (also the turn's ``completion_id`` in the store).
        req: the request (echoed fields: instructions, tools, tool_choice, sampling, ...).
        model: the served model name.
    """

    def __init__(self, response_id: str, req: ResponsesRequest, model: str):
        self.id, self.req, self.model = response_id, req, model
        self.created_at = time.time()
        self.blocks = BlockSequencer()
        self.items: list[BaseModel] = []  # output items, by block index
        self._seq = 0
        self.finish: ChatEvent | None = None

    def response(self, status: str) -> Response:
        """The ``response`` object with the items so far and ``status``."""
        req, finish = self.req, self.finish
        body: dict[str, Any] = {
            "id": self.id, "object": "response", "created_at": self.created_at, "model": self.model,
            "status": status, "output": [_dump(i) for i in self.items], "instructions": req.instructions,
            "tools": [t.model_dump(exclude_none=True) for t in req.tools or []],
            "tool_choice": req.tool_choice.model_dump() if isinstance(req.tool_choice, FunctionChoice)
            else (req.tool_choice or "auto"),
            "parallel_tool_calls": req.parallel_tool_calls is not False, "temperature": req.temperature,
            "top_p": req.top_p, "max_output_tokens": req.max_output_tokens,
            "previous_response_id": req.previous_response_id, "metadata": req.metadata or {},
            "error": None, "incomplete_details": None, "store": req.store is not False, "user": req.user}
        if req.text is not None:
            body["text"] = req.text.model_dump(by_alias=True, exclude_none=True)
        if finish is not None:
            usage = finish.usage or {}
            body["usage"] = {"input_tokens": usage.get("prompt_tokens", 0),
                             "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
                             "output_tokens": usage.get("completion_tokens", 0),
                             "output_tokens_details": {"reasoning_tokens": 0},
                             "total_tokens": usage.get("total_tokens", 0)}
            if finish.finish_reason == "length":
                body["incomplete_details"] = {"reason": "max_output_tokens"}
        return Response.model_validate(body)

    def event(self, cls, **fields) -> BaseModel:
        """A stream event of type ``cls`` with the next ``sequence_number``."""
        self._seq += 1
        return cls(sequence_number=self._seq - 1, **fields)

    def start(self) -> list[BaseModel]:
        """``response.created`` and ``response.in_progress``."""
        return [self.event(ResponseCreatedEvent, type="response.created", response=self.response("in_progress")),
                self.event(ResponseInProgressEvent, type="response.in_progress",
                            response=self.response("in_progress"))]

    def push(self, event: ChatEvent) -> list[BaseModel]:
        """The stream events of one chat event (the ``finish`` event ends the response)."""
        if event.kind == "finish":
            self.finish = event
        out = [e for b in self.blocks.feed(event) for e in self._block(b)]
        if event.kind == "finish":
            done = event.finish_reason != "length"
            response = self.response("completed" if done else "incomplete")
            out.append(self.event(ResponseCompletedEvent, type="response.completed", response=response) if done
                       else self.event(ResponseIncompleteEvent, type="response.incomplete", response=response))
        return out

    def _item_status(self) -> str:
        return "incomplete" if self.finish is not None and self.finish.finish_reason == "length" else "completed"

    def _block(self, b: BlockEvent) -> list[BaseModel]:
        where = {"output_index": b.index}
        if b.kind == "tool_call":
            call = b.tool_call
            item = ResponseFunctionToolCall(type="function_call", id=f"fc_{uuid.uuid4().hex}", call_id=call.id,
                                            name=call.name, arguments="", status="in_progress")
            if b.action == "start":
                self.items.append(item)
                return [self.event(ResponseOutputItemAddedEvent, type="response.output_item.added", item=item,
                                    **where)]
            item = self.items[b.index] = ResponseFunctionToolCall(
                type="function_call", id=self.items[b.index].id, call_id=call.id, name=call.name,
                arguments=call.arguments, status="completed")
            return [self.event(ResponseFunctionCallArgumentsDeltaEvent, type="response.function_call_arguments.delta",
                                item_id=item.id, delta=call.arguments, **where),
                    self.event(ResponseFunctionCallArgumentsDoneEvent, type="response.function_call_arguments.done",
                                item_id=item.id, arguments=call.arguments, name=call.name, **where),
                    self.event(ResponseOutputItemDoneEvent, type="response.output_item.done", item=item, **where)]
        reasoning = b.kind == "reasoning"
        if b.action == "start":
            item = (ResponseReasoningItem(type="reasoning", id=f"rs_{uuid.uuid4().hex}", summary=[], content=[],
                                          status="in_progress") if reasoning else
                    ResponseOutputMessage(type="message", id=f"msg_{uuid.uuid4().hex}", role="assistant",
                                          status="in_progress", content=[]))
            self.items.append(item)
            part = {"type": "reasoning_text", "text": ""} if reasoning else {"type": "output_text", "text": "",
                                                                             "annotations": []}
            return [self.event(ResponseOutputItemAddedEvent, type="response.output_item.added", item=item, **where),
                    self.event(ResponseContentPartAddedEvent, type="response.content_part.added",
                                item_id=item.id, content_index=0, part=part, **where)]
        item_id = self.items[b.index].id
        at = {"item_id": item_id, "content_index": 0, **where}
        if b.action == "delta":
            if reasoning:
                return [self.event(ResponseReasoningTextDeltaEvent, type="response.reasoning_text.delta",
                                    delta=b.text, **at)]
            return [self.event(ResponseTextDeltaEvent, type="response.output_text.delta", delta=b.text,
                                logprobs=[], **at)]
        if reasoning:
            part = {"type": "reasoning_text", "text": b.text}
            item = ResponseReasoningItem(type="reasoning", id=item_id, summary=[], content=[part],
                                         status=self._item_status())
            done = self.event(ResponseReasoningTextDoneEvent, type="response.reasoning_text.done", text=b.text, **at)
        else:
            part = {"type": "output_text", "text": b.text, "annotations": [], "logprobs": []}
            item = ResponseOutputMessage(type="message", id=item_id, role="assistant", status=self._item_status(),
                                         content=[ResponseOutputText.model_validate(part)])
            done = self.event(ResponseTextDoneEvent, type="response.output_text.done", text=b.text, logprobs=[],
                               **at)
        self.items[b.index] = item
        return [done, self.event(ResponseContentPartDoneEvent, type="response.content_part.done", part=part, **at),
                self.event(ResponseOutputItemDoneEvent, type="response.output_item.done", item=item, **where)]

    def reply_message(self) -> dict:
        """The reply as a chat assistant message (kept for ``previous_response_id``)."""
        text = "".join(t for kind, t, _ in self.blocks.blocks if kind == "text")
        msg: dict = {"role": "assistant", "content": text}
        calls = [c.to_openai() for kind, _, c in self.blocks.blocks if kind == "tool_call"]
        if calls:
            msg["tool_calls"] = calls
        reasoning = "".join(t for kind, t, _ in self.blocks.blocks if kind == "reasoning")
        if reasoning:
            msg["reasoning_content"] = reasoning
        return msg


def _sse(event: BaseModel) -> str:
    return f"event: {event.type}\ndata: {json.dumps(_dump(event), ensure_ascii=False)}\n\n"


def install_responses_route(app: FastAPI, service, check_key, kept: KeptResponses | None = None) -> KeptResponses:
    """Add ``POST /v1/responses`` and ``GET /v1/responses/{response_id}`` to ``app``.

    Args:
        app: the server's FastAPI app.
        service: the :class:`~openclaw_rl.server.chat.ChatService` that serves (and captures).
        check_key: the API-key dependency.
        kept: where stored responses are kept (default: a new :class:`KeptResponses`).

    Returns:
        The :class:`KeptResponses` in use.
    """
    kept = kept if kept is not None else KeptResponses()

    @app.post("/v1/responses", dependencies=[Depends(check_key)])
    async def responses(request: Request):
        """Serve one Responses API request (see the module docstring); errors are OpenAI's."""
        req = await asyncio.to_thread(parse_items_body, await request.body(), ResponsesRequest)
        history = kept.history(req.previous_response_id) if req.previous_response_id else []
        chat, own = chat_request(req, history)
        headers = {k.lower(): v for k, v in request.headers.items()}
        renderer = ResponseRenderer(f"resp_{uuid.uuid4().hex}", req, service.model_name)
        events = service.run(chat, headers, completion_id=renderer.id)

        def keep() -> dict:
            """The final ``response`` object (JSON), kept unless the request says ``store: false``."""
            final = _dump(renderer.response("incomplete" if renderer.finish.finish_reason == "length"
                                            else "completed"))
            if req.store is not False:
                kept.put(renderer.id, req.previous_response_id, own + [renderer.reply_message()], final)
            return final

        if not req.stream:
            async for event in until_disconnect(events, request):
                renderer.push(event)
            return JSONResponse(keep())
        first = await events.__anext__()  # request errors are a JSON 4xx before the stream starts

        async def stream():
            try:
                for event in renderer.start() + renderer.push(first):
                    yield _sse(event)
                async for chat_event in events:
                    for event in renderer.push(chat_event):
                        yield _sse(event)
                keep()
            except APIError as exc:  # the engine failed mid-stream: an in-band error event
                yield _sse(renderer.event(ResponseErrorEvent, type="error", message=exc.message, code=exc.code,
                                           param=exc.param))
            finally:
                await events.aclose()

        return StreamingResponse(stream(), media_type="text/event-stream",
                                 headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})

    @app.get("/v1/responses/{response_id}", dependencies=[Depends(check_key)])
    async def retrieve_response(response_id: str):
        """A kept response as it ended; 404 ``response_not_found`` otherwise."""
        return JSONResponse(kept.response(response_id))

    return kept
