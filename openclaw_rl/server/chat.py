"""One chat completion: render the prompt, sample, parse, capture.

:meth:`ChatService.run` yields :class:`ChatEvent` objects as tokens are sampled; the streaming
endpoint turns them into SSE chunks and the non-streaming endpoint aggregates the same events,
so both give the same answer for the same seed.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass, field
from typing import AsyncIterator, Literal, Mapping

from openclaw_rl.capture.recorder import Recorder
from openclaw_rl.capture.store import TurnRecord
from openclaw_rl.engine import Engine, GenerationOutput, PromptTooLongError, SamplingParams
from openclaw_rl.server.detokenize import IncrementalDecoder
from openclaw_rl.server.errors import APIError
from openclaw_rl.server.protocol import ChatCompletionRequest
from openclaw_rl.tool_parser import OutputParser, ParsedToolCall

log = logging.getLogger(__name__)


#: what a streamed chat event carries (the closed vocabulary of :class:`ChatEvent`)
ChatEventKind = Literal["content", "reasoning", "tool_call", "finish"]


@dataclass
class ChatEvent:
    """``kind``: ``content`` / ``reasoning`` (``text``), ``tool_call`` (``tool_call``),
    ``finish`` (``finish_reason``, ``usage``). ``logprobs`` holds OpenAI logprob entries of the
    tokens decoded since the previous event (only when requested)."""

    kind: ChatEventKind
    text: str = ""
    tool_call: ParsedToolCall | None = None
    finish_reason: str | None = None
    usage: dict | None = None
    logprobs: list[dict] = field(default_factory=list)


def template_messages(req: ChatCompletionRequest) -> list[dict]:
    """Messages as plain dicts for the chat template (developer -> system, parts joined)."""
    out = []
    for m in req.messages:
        d: dict = {"role": "system" if m.role == "developer" else m.role, "content": m.text()}
        if m.role == "assistant":
            if m.tool_calls:
                d["tool_calls"] = [{"id": c.id, "type": "function",
                                    "function": {"name": c.function.name,
                                                 "arguments": c.function.arguments if isinstance(c.function.arguments, str)
                                                 else json.dumps(c.function.arguments, ensure_ascii=False)}}
                                   for c in m.tool_calls]
            if m.reasoning_content:
                d["reasoning_content"] = m.reasoning_content
        if m.role == "tool" and m.tool_call_id:
            d["tool_call_id"] = m.tool_call_id
        out.append(d)
    return out


class ChatService:
    """Serves chat completions on an :class:`Engine`.

    Args:
        engine: the serving engine.
        tokenizer: the model's tokenizer (chat template, decoding).
        model_name: the served model name reported to clients.
        recorder: capture (None when ``--enable-rl-intercept`` is off).
        default_max_tokens: completion budget when the request sets none.
        default_temperature: temperature when the request sets none.
    """

    def __init__(self, engine: Engine, tokenizer, model_name: str, recorder: Recorder | None,
                 default_max_tokens: int = 512, default_temperature: float = 1.0):
        self.engine, self.tokenizer, self.model_name = engine, tokenizer, model_name
        self.recorder, self.default_max_tokens = recorder, default_max_tokens
        self.default_temperature = default_temperature
        self._stop_ids = set(engine.eos_token_ids)

    def render(self, req: ChatCompletionRequest) -> tuple[list[dict], list[dict] | None, str, list[int]]:
        """Return ``(messages, tools, prompt_text, prompt_ids)``; tokenization happens once, here.

        Raises:
            APIError: 400 when the chat template rejects the conversation.
        """
        messages = template_messages(req)
        tools = None
        if req.tools and req.tool_choice != "none":
            tools = [t.model_dump(exclude_none=True) for t in req.tools]
        try:
            text = self.tokenizer.apply_chat_template(messages, tools=tools, add_generation_prompt=True,
                                                      tokenize=False)
            text.encode("utf-8")  # lone surrogates ("\ud800") cannot be tokenized
            ids = self.tokenizer(text, add_special_tokens=False)["input_ids"]
        except UnicodeEncodeError as exc:
            raise APIError(400, f"messages contain text that is not valid Unicode: {exc.reason}",
                           param="messages") from exc
        except Exception as exc:  # jinja errors from unusual histories
            raise APIError(400, f"messages could not be rendered by the chat template: {exc}",
                           param="messages") from exc
        return messages, tools, text, ids

    def _logprob_entries(self, out: GenerationOutput, start: int, end: int, top: bool) -> list[dict]:
        entries = []
        for i in range(start, end):
            text = self.tokenizer.decode([out.token_ids[i]], skip_special_tokens=False)
            entry = {"token": text, "logprob": out.logprobs[i], "bytes": list(text.encode()),
                     "top_logprobs": []}
            if top:
                alts = [(self.tokenizer.decode([a], skip_special_tokens=False), lp) for a, lp in out.top_logprobs[i]]
                entry["top_logprobs"] = [{"token": t, "logprob": lp, "bytes": list(t.encode())} for t, lp in alts]
            entries.append(entry)
        return entries

    async def run(self, req: ChatCompletionRequest, headers: Mapping[str, str]) -> AsyncIterator[ChatEvent]:
        """Serve one request, yielding events as tokens are sampled.

        Raises:
            APIError: 400 for a prompt longer than the context window or an unrenderable
                conversation (raised before the first event, so nothing was sent yet).
        """
        turn_type = headers.get("x-turn-type")
        if turn_type is not None and turn_type.strip().lower() not in ("main", "side"):
            raise APIError(400, f"X-Turn-Type must be 'main' or 'side', got {turn_type!r}", param="X-Turn-Type")
        messages, tools, prompt_text, prompt_ids = self.render(req)
        if len(prompt_ids) + 1 > self.engine.max_context:
            raise APIError(400, str(PromptTooLongError(len(prompt_ids), self.engine.max_context)),
                           param="messages", code="context_length_exceeded")
        attr = cont = None
        if self.recorder is not None:
            body = req.model_dump(include={"session_id", "prompt_cache_key", "user", "turn_type"})
            attr, cont = await self.recorder.begin(messages, body, headers, prompt_ids)
        want_lp = bool(req.logprobs)
        params = SamplingParams(
            max_new_tokens=req.completion_budget(self.default_max_tokens),
            temperature=self.default_temperature if req.temperature is None else req.temperature,
            top_p=1.0 if req.top_p is None else req.top_p, seed=req.seed,
            top_logprobs=(req.top_logprobs or 0) if want_lp else 0)
        parser = OutputParser(parse_tools=tools is not None, parse_reasoning=True)
        stops = req.stop_sequences()
        hold = max((len(s) for s in stops), default=1) - 1
        out = GenerationOutput(prompt_ids=prompt_ids)
        raw, fed, lp_from, stopped = "", 0, 0, False
        decoder = IncrementalDecoder(self.tokenizer)
        stream = self.engine.generate_stream(prompt_ids, params, out)
        try:
            async for ev in stream:
                if ev.token_id in self._stop_ids:
                    continue
                text = decoder.push(ev.token_id)
                if text is None:
                    continue  # an incomplete multi-byte character: wait for the next token
                raw = text
                cut = len(raw) - hold
                for s in stops:
                    i = raw.find(s, max(0, fed - len(s)))
                    if i >= 0:
                        raw, cut, stopped = raw[:i], i, True
                if cut > fed or stopped:
                    deltas = parser.feed(raw[fed:max(cut, fed)])
                    fed = max(cut, fed)
                    for i, ev_out in enumerate(self._to_events(deltas)):
                        if want_lp and i == 0:
                            ev_out.logprobs = self._logprob_entries(out, lp_from, len(out.token_ids),
                                                                    bool(req.top_logprobs))
                            lp_from = len(out.token_ids)
                        yield ev_out
                if stopped:
                    break
        finally:
            await stream.aclose()
        if stopped:
            out.finish_reason = "stop"
        else:
            raw = decoder.flush()
        if not stopped and fed < len(raw):
            for ev_out in self._to_events(parser.feed(raw[fed:])):
                yield ev_out
        tail = list(self._to_events(parser.finish()))
        for ev_out in tail:
            yield ev_out
        finish = "tool_calls" if parser.tool_calls else out.finish_reason
        usage = {"prompt_tokens": len(prompt_ids), "completion_tokens": len(out.token_ids),
                 "total_tokens": len(prompt_ids) + len(out.token_ids)}
        if self.recorder is not None:
            await self._capture(attr, cont, messages, tools, prompt_text, out, raw, parser, params)
        final = ChatEvent("finish", finish_reason=finish, usage=usage)
        if want_lp and lp_from < len(out.token_ids):
            final.logprobs = self._logprob_entries(out, lp_from, len(out.token_ids), bool(req.top_logprobs))
        yield final

    @staticmethod
    def _to_events(deltas):
        for d in deltas:
            if d.kind == "tool_call":
                yield ChatEvent("tool_call", tool_call=d.tool_call)
            else:
                yield ChatEvent(d.kind, text=d.text)

    async def _capture(self, attr, cont, messages, tools, prompt_text, out: GenerationOutput,
                       raw_text: str, parser: OutputParser, params: SamplingParams) -> None:
        calls = [c.to_openai() for c in parser.tool_calls]
        reply = {"role": "assistant", "content": parser.content, "tool_calls": calls}
        rec = TurnRecord(session_id=attr.session_id, turn_type=attr.turn_type, messages=messages,
                         tools=tools, prompt_text=prompt_text, prompt_ids=list(out.prompt_ids),
                         response_ids=list(out.token_ids), response_logprobs=list(out.logprobs),
                         response_text=raw_text, finish_reason=out.finish_reason,
                         weight_version=out.weight_version, tool_calls=calls or None,
                         reasoning_content=parser.reasoning or None, model=self.model_name,
                         temperature=params.temperature, top_p=params.top_p)
        t0 = time.perf_counter()
        await self.recorder.record(attr, cont, rec, reply)
        log.debug("turn %s committed in %.1f ms", rec.turn_uid, 1000 * (time.perf_counter() - t0))

