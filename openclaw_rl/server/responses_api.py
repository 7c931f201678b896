"""``POST /v1/responses``: the OpenAI Responses API (https://platform.openai.com/docs/api-reference/responses),
served through the chat completions path.

A request is translated into a :class:`~openclaw_rl.server.protocol.ChatCompletionRequest`
(:func:`chat_request`) and served by :meth:`ChatService.run`, so it is rendered by the same chat
template and captured exactly like a chat completion: same sessions (continuation matching works
on the translated messages), main/side turns, next states, token ids. The reply's events become
output items (:class:`~openclaw_rl.server.responses_render.ResponseRenderer`, built from the SDK's own
pydantic models in ``openai.types.responses`` and imported on the first request), streamed as the API's typed events or returned as one ``response``.

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
import functools
import threading
import uuid
from collections import OrderedDict

from fastapi import Depends, FastAPI, Request
from fastapi.responses import JSONResponse, StreamingResponse
from pydantic import ValidationError

from openclaw_rl.server.errors import APIError, parse_items_body, until_disconnect, validation_message
from openclaw_rl.server.protocol import ChatCompletionRequest
from openclaw_rl.server.responses_request import FunctionChoice, ResponsesRequest, TextConfig, parts_text

#: how many stored responses the server keeps for ``previous_response_id`` (the oldest go first)
KEPT_RESPONSES = 4096


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
            msg["content"] = (msg["content"] or "") + parts_text(item.content)
        elif item.type == "function_call":
            _assistant(out).setdefault("tool_calls", []).append(
                {"id": item.call_id, "type": "function", "function": {"name": item.name, "arguments": item.arguments}})
        elif item.type == "function_call_output":
            out.append({"role": "tool", "tool_call_id": item.call_id, "content": parts_text(item.output)})
        elif item.type == "reasoning":
            msg = _assistant(out)
            msg["reasoning_content"] = (msg.get("reasoning_content") or "") + parts_text(item.content or item.summary)
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


@functools.cache
def renderer_module():
    """:mod:`openclaw_rl.server.responses_render`, imported on the first ``/v1/responses`` request
    rather than at server start: ``openai.types.responses`` takes about 0.4 s of CPU to import
    (benchmarks/server_start.py), which a server whose clients speak only chat completions never needs."""
    from openclaw_rl.server import responses_render

    return responses_render


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
        render = renderer_module()
        renderer = render.ResponseRenderer(f"resp_{uuid.uuid4().hex}", req, service.model_name)
        events = service.run(chat, headers, completion_id=renderer.id)

        def keep() -> dict:
            """The final ``response`` object (JSON), kept unless the request says ``store: false``."""
            final = render.dump(renderer.response("incomplete" if renderer.finish.finish_reason == "length"
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
                    yield render.sse(event)
                async for chat_event in events:
                    for event in renderer.push(chat_event):
                        yield render.sse(event)
                keep()
            except APIError as exc:  # the engine failed mid-stream: an in-band error event
                yield render.sse(renderer.error(exc))
            finally:
                await events.aclose()

        return StreamingResponse(stream(), media_type="text/event-stream",
                                 headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})

    @app.get("/v1/responses/{response_id}", dependencies=[Depends(check_key)])
    async def retrieve_response(response_id: str):
        """A kept response as it ended; 404 ``response_not_found`` otherwise."""
        return JSONResponse(kept.response(response_id))

    return kept
