"""The reply of one ``POST /v1/responses`` request as the OpenAI Responses API's objects: its typed
stream events and its final ``response``, built from the SDK's own pydantic models in
``openai.types.responses``.

A module of its own so that only a server that is asked for the Responses API imports those types
(:func:`openclaw_rl.server.responses_api.renderer_module`); the request models are
:mod:`openclaw_rl.server.responses_request`, the translation and the route
:mod:`openclaw_rl.server.responses_api`.
"""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

from openai.types.responses import (Response, ResponseCompletedEvent, ResponseContentPartAddedEvent,
                                    ResponseContentPartDoneEvent, ResponseCreatedEvent, ResponseErrorEvent,
                                    ResponseFunctionCallArgumentsDeltaEvent,
                                    ResponseFunctionCallArgumentsDoneEvent, ResponseFunctionToolCall,
                                    ResponseIncompleteEvent, ResponseInProgressEvent, ResponseOutputItemAddedEvent,
                                    ResponseOutputItemDoneEvent, ResponseOutputMessage, ResponseOutputText,
                                    ResponseReasoningItem, ResponseReasoningTextDeltaEvent,
                                    ResponseReasoningTextDoneEvent, ResponseTextDeltaEvent, ResponseTextDoneEvent)
from pydantic import BaseModel

from openclaw_rl.server.errors import APIError
from openclaw_rl.server.reply import ChatEvent
from openclaw_rl.server.reply_blocks import BlockEvent, BlockSequencer
from openclaw_rl.server.responses_request import FunctionChoice, ResponsesRequest


def dump(model: BaseModel) -> dict:
    """``model`` as JSON-ready data (set fields only, by alias)."""
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
            "status": status, "output": [dump(i) for i in self.items], "instructions": req.instructions,
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

    def error(self, exc: APIError) -> BaseModel:
        """The in-band ``error`` event of a failure after the stream started."""
        return self.event(ResponseErrorEvent, type="error", message=exc.message, code=exc.code, param=exc.param)

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


def sse(event: BaseModel) -> str:
    """One server-sent event: ``event: <type>`` and its JSON ``data``."""
    return f"event: {event.type}\ndata: {json.dumps(dump(event), ensure_ascii=False)}\n\n"
