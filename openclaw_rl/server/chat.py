"""One chat completion: build the prompt ids, sample, assemble the reply, capture.

:meth:`ChatService.run` yields :class:`ChatEvent` objects as tokens are sampled; the streaming
endpoint turns them into SSE chunks and the non-streaming endpoint aggregates the same events,
so both give the same answer for the same seed. Prompt ids come from the chat template, except
that a request continuing a recorded reply re-uses that turn's ids
(:mod:`openclaw_rl.server.continuation`); the reply is assembled by
:class:`openclaw_rl.server.reply.ReplyAssembler`, and ``tool_choice`` and ``response_format`` are
enforced by constrained decoding (:mod:`openclaw_rl.server.tool_choice`,
:mod:`openclaw_rl.server.response_format`).
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from dataclasses import dataclass, field
from typing import AsyncIterator, Mapping

from openclaw_rl.capture.recorder import Recorder
from openclaw_rl.capture.store import TurnRecord
from openclaw_rl.engine import Engine, EngineError, GenerationOutput, PromptTooLongError, SamplingParams
from openclaw_rl.server.admission import AdmissionControl
from openclaw_rl.server.continuation import ContinuationBuilder
from openclaw_rl.server.errors import APIError
from openclaw_rl.server.images import (RequestImage, expand_suffix_images, image_messages, render_with_images,
                                       request_images)
from openclaw_rl.server.limits import check_prompt_bound, max_token_chars
from openclaw_rl.server.prompt import render_text, request_tools, template_messages, tokenize
from openclaw_rl.server.protocol import ChatCompletionRequest
from openclaw_rl.server.reply import ChatEvent, ReplyAssembler, client_finish_reason
from openclaw_rl.server.shutdown import Drain
from openclaw_rl.server.token_bytes import TokenBytes
from openclaw_rl.server.response_format import request_grammar

log = logging.getLogger(__name__)

__all__ = ["ChatEvent", "ChatService"]


@dataclass
class _Prompt:
    messages: list[dict]
    tools: list[dict] | None
    text: str
    ids: list[int]
    images: list[RequestImage] = field(default_factory=list)
    multimodal: dict | None = None  # the images' processor outputs, for the engine


def _session_hint(req: ChatCompletionRequest, headers: Mapping[str, str]) -> str | None:
    """Without capture, the request's own session hint (``X-Session-Id``, ``session_id``,
    ``prompt_cache_key``, ``user``) keeps a conversation on one engine replica."""
    return headers.get("x-session-id") or req.session_id or req.prompt_cache_key or req.user


class ChatService:
    """Serves chat completions on an :class:`Engine`.

    Args:
        engine: the serving engine.
        tokenizer: the model's tokenizer (chat template, decoding).
        model_name: the served model name reported to clients.
        recorder: capture (None when ``--enable-rl-intercept`` is off).
        default_max_tokens: completion budget when the request sets none.
        default_temperature: temperature when the request sets none.
        admission: running / queued limits (default :class:`AdmissionControl`'s).
        drain: graceful-shutdown state (:mod:`openclaw_rl.server.shutdown`); default one that
            never cuts.
        processor: a vision-language model's processor (:func:`openclaw_rl.vl_models.load_processor`),
            or None: with it (and an engine that :attr:`~openclaw_rl.engine.Engine.supports_images`)
            ``image_url`` parts are served (:mod:`openclaw_rl.server.images`), else they are a 400.
        lessons: ``--inject-lessons``: a :class:`openclaw_rl.capture.lessons.LessonPrompt` whose
            lessons are added to each request's system prompt, or None.
    """

    def __init__(self, engine: Engine, tokenizer, model_name: str, recorder: Recorder | None,
                 default_max_tokens: int = 512, default_temperature: float = 1.0,
                 admission: AdmissionControl | None = None, drain: Drain | None = None, processor=None,
                 lessons=None):
        self.engine, self.tokenizer, self.model_name = engine, tokenizer, model_name
        self.lessons = lessons
        self.processor = processor
        self.accepts_images = processor is not None and bool(getattr(engine, "supports_images", False))
        self.admission = admission or AdmissionControl()
        self.drain = drain or Drain()
        self.recorder, self.default_max_tokens = recorder, default_max_tokens
        self.default_temperature = default_temperature
        self._stop_ids = set(engine.eos_token_ids)
        self.token_bytes = TokenBytes(tokenizer)
        self.continuation = ContinuationBuilder(tokenizer, self._stop_ids)
        self._max_token_chars = max_token_chars(tokenizer)
        self._render_lock = threading.Lock()

    def render(self, req: ChatCompletionRequest) -> tuple[list[dict], list[dict] | None, str, list[int]]:
        """Return ``(messages, tools, prompt_text, prompt_ids)`` of the whole conversation.

        Raises:
            APIError: 400 when the chat template rejects the conversation or a history tool
                call's arguments are not JSON.
        """
        messages = self._messages(req)
        tools = request_tools(req)
        text = render_text(self.tokenizer, messages, tools)
        return messages, tools, text, tokenize(self.tokenizer, text)

    def _messages(self, req: ChatCompletionRequest) -> list[dict]:
        """The chat-template messages of a request, with the lessons when ``--inject-lessons``."""
        messages = template_messages(req)
        return self.lessons.apply(messages) if self.lessons is not None else messages

    def _render_checked(self, req: ChatCompletionRequest):
        """:meth:`render` after the cheap length bound (:mod:`openclaw_rl.server.limits`); runs in
        a worker thread, one at a time (the tokenizer is shared)."""
        check_prompt_bound(template_messages(req), self._max_token_chars, self.engine.max_context)
        with self._render_lock:
            return self.render(req)

    def _render_images(self, req: ChatCompletionRequest) -> _Prompt | None:
        """The prompt of a request with image parts (None without any): images decoded, the
        template messages with image parts, ids and pixel values from the processor. Runs in a
        worker thread, one at a time.

        Raises:
            APIError: 400 for images a text-only model is sent, or images that do not decode.
        """
        images = request_images(req, self.accepts_images, self.model_name)
        if not images:
            return None
        check_prompt_bound(template_messages(req), self._max_token_chars, self.engine.max_context)
        with self._render_lock:
            messages = image_messages(req, template_messages(req), images)
            messages = self.lessons.apply(messages) if self.lessons is not None else messages
            tools = request_tools(req)
            text = render_text(self.tokenizer, messages, tools)
            ids, multimodal = render_with_images(self.processor, text, images)
        return _Prompt(messages, tools, text, ids, images, multimodal)

    async def _prepare(self, req: ChatCompletionRequest, headers: Mapping[str, str]):
        # rendering and tokenizing a long conversation takes a while: never on the event loop
        prompt = await asyncio.to_thread(self._render_images, req) if any(
            m.image_parts() for m in req.messages) else None
        if prompt is None:
            messages, tools, text, ids = await asyncio.to_thread(self._render_checked, req)
            prompt = _Prompt(messages, tools, text, ids)
        messages, tools, text = prompt.messages, prompt.tools, prompt.text
        attr = cont = None
        if self.recorder is not None:
            body = req.model_dump(include={"session_id", "prompt_cache_key", "user", "turn_type"})
            attr, continued = await self.recorder.attribute(messages, body, headers)
            reply_at = None if attr.next_state_from is None else attr.next_state_from - 1
            spliced = self.continuation.build(messages, tools, text, continued, reply_at)
            if spliced is not None and prompt.images:  # the recorded ids, the new images expanded
                spliced = expand_suffix_images(self.processor, spliced, prompt.ids,
                                               prompt.multimodal["image_grid_thw"])
            if spliced is not None:
                prompt.text, prompt.ids = spliced.text, spliced.ids
        if len(prompt.ids) + 1 > self.engine.max_context:
            raise APIError(400, str(PromptTooLongError(len(prompt.ids), self.engine.max_context)),
                           param="messages", code="context_length_exceeded")
        if self.recorder is not None:
            cont = await self.recorder.link(attr, messages, prompt.ids)
        return prompt, attr, cont

    async def run(self, req: ChatCompletionRequest, headers: Mapping[str, str],
                  completion_id: str | None = None) -> AsyncIterator[ChatEvent]:
        """Serve one request, yielding events as tokens are sampled; it holds one of the
        admission's running slots for its whole life (:mod:`openclaw_rl.server.admission`).
        ``completion_id``: the ``id`` the client gets, recorded with the turn (explicit feedback
        names the turn by it, :mod:`openclaw_rl.capture.feedback`).

        During a graceful shutdown, a generation still running when the grace runs out ends at
        its next decode step with finish reason ``length`` and is recorded like any finished
        turn (:mod:`openclaw_rl.server.shutdown`).

        Raises:
            APIError: 429 when the server is full (running and queued); 503 once the shutdown
                grace is over and the request has not started generating; 400 for a prompt
                longer than the context window or an unrenderable conversation (all raised before
                the first event, so nothing was sent yet); 500 ``generation_failed`` when the
                engine fails mid-generation (nothing is recorded; the slot is released).
        """
        self.drain.check()
        async with self.admission.slot():
            self.drain.check()
            async for event in self._run(req, headers, completion_id):
                yield event

    async def _run(self, req: ChatCompletionRequest, headers: Mapping[str, str],
                   completion_id: str | None = None) -> AsyncIterator[ChatEvent]:
        turn_type = headers.get("x-turn-type")
        if turn_type is not None and turn_type.strip().lower() not in ("main", "side"):
            raise APIError(400, f"X-Turn-Type must be 'main' or 'side', got {turn_type!r}", param="X-Turn-Type")
        started_at = time.time()
        grammar = await asyncio.to_thread(request_grammar, req, self.tokenizer, self.engine)
        prompt, attr, cont = await self._prepare(req, headers)
        want_lp = bool(req.logprobs)
        params = SamplingParams(
            max_new_tokens=req.completion_budget(self.default_max_tokens),
            temperature=self.default_temperature if req.temperature is None else req.temperature,
            top_p=1.0 if req.top_p is None else req.top_p, seed=req.seed,
            top_logprobs=(req.top_logprobs or 0) if want_lp else 0, grammar=grammar,
            affinity_key=attr.session_id if attr is not None else _session_hint(req, headers))
        # ``out`` holds exactly the tokens consumed here (the engine may have sampled ahead into
        # its own ``sampled`` when generation stops early): the reply and the record agree
        out = GenerationOutput(prompt_ids=prompt.ids)
        sampled = GenerationOutput(prompt_ids=prompt.ids)
        reply = ReplyAssembler(self.tokenizer, self.token_bytes, self._stop_ids, out,
                               parse_tools=prompt.tools is not None, stops=req.stop_sequences(),
                               logprobs=want_lp, top_logprobs=req.top_logprobs or 0,
                               constrained=grammar is not None)
        if prompt.multimodal is not None:
            stream = self.engine.generate_stream(prompt.ids, params, sampled, multimodal=prompt.multimodal)
        else:
            stream = self.engine.generate_stream(prompt.ids, params, sampled)
        cut = False
        try:
            async for ev in stream:
                out.token_ids.append(ev.token_id)
                out.logprobs.append(ev.logprob)
                out.top_logprobs.append(list(ev.top_logprobs))
                for event in reply.push(ev):
                    yield event
                if reply.stopped:
                    break
                if self.drain.cut and ev.token_id not in self._stop_ids:
                    cut = True  # shutdown: end here, like a reply cut by max_tokens
                    break
        except PromptTooLongError as exc:  # checked in _prepare already; kept a 400 all the same
            raise APIError(400, str(exc), param="messages", code="context_length_exceeded") from exc
        except EngineError as exc:
            raise APIError(500, f"generation failed after {len(out.token_ids)} tokens: {exc}",
                           type_="server_error", code="generation_failed") from exc
        finally:
            await stream.aclose()
        out.prompt_ids, out.weight_version = sampled.prompt_ids, sampled.weight_version
        out.finish_reason = "length" if cut else sampled.finish_reason
        events = reply.finish()
        for event in events[:-1]:
            yield event
        if self.recorder is not None:
            await self._capture(attr, cont, prompt, out, reply, params, completion_id, started_at)
        yield events[-1]

    async def _capture(self, attr, cont, prompt: _Prompt, out: GenerationOutput, assembled: ReplyAssembler,
                       params: SamplingParams, completion_id: str | None = None,
                       started_at: float | None = None) -> None:
        parser, raw_text = assembled.parser, assembled.raw
        calls = [c.to_openai() for c in parser.tool_calls]
        reply = {"role": "assistant", "content": parser.content, "tool_calls": calls}
        rec = TurnRecord(session_id=attr.session_id, turn_type=attr.turn_type, messages=prompt.messages,
                         tools=prompt.tools, prompt_text=prompt.text, prompt_ids=list(out.prompt_ids),
                         response_ids=list(out.token_ids), response_logprobs=list(out.logprobs),
                         response_text=raw_text,
                         finish_reason=client_finish_reason(out.finish_reason, bool(calls)),  # what the client saw
                         weight_version=out.weight_version, tool_calls=calls or None,
                         reasoning_content=parser.reasoning or None, model=self.model_name,
                         temperature=params.temperature, top_p=params.top_p,
                         constrained=params.grammar is not None, completion_id=completion_id,
                         images=[img.to_record() for img in prompt.images] or None)
        t0 = time.perf_counter()
        await self.recorder.record(attr, cont, rec, reply, started_at)
        log.debug("turn %s committed in %.1f ms", rec.turn_uid, 1000 * (time.perf_counter() - t0))
