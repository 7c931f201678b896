"""Sampled token ids -> the reply the client sees: text, reasoning, tool calls, logprobs, finish.

:class:`ReplyAssembler` is fed the engine's tokens one at a time and returns the events that are
certain so far; the server streams them or aggregates them, and capture stores what the
assembler decided, so client and store always agree.

Finish reasons follow OpenAI: ``length`` whenever the token budget (``max_tokens`` or the context
window) ended the reply, even after complete tool calls; ``tool_calls`` when the model ended a
reply that holds calls; ``stop`` otherwise. A ``<tool_call>`` block that the model did not close
itself (cut by ``max_tokens`` or a stop sequence) is never returned as a call: its text stays
content (unless the reply was sampled under a grammar, where it can only have been a call: then
it is dropped, see :class:`~openclaw_rl.server.tool_parser.OutputParser`). Logprob entries carry each token's own bytes (:mod:`openclaw_rl.server.token_bytes`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from openclaw_rl.engine import GenerationOutput, TokenEvent
from openclaw_rl.server.detokenize import IncrementalDecoder
from openclaw_rl.server.token_bytes import TokenBytes
from openclaw_rl.server.tool_parser import OutputParser, ParsedToolCall


#: what a streamed chat event carries (the closed vocabulary of :class:`ChatEvent`)
ChatEventKind = Literal["content", "reasoning", "tool_call", "finish"]


@dataclass
class ChatEvent:
    """``kind``: ``content`` / ``reasoning`` (``text``), ``tool_call`` (``tool_call``),
    ``finish`` (``finish_reason``, ``usage``, and ``stop_sequence``: the stop sequence that ended
    the reply, if one did). ``logprobs`` holds OpenAI logprob entries of the tokens decoded since
    the previous event (only when requested)."""

    kind: ChatEventKind
    text: str = ""
    tool_call: ParsedToolCall | None = None
    finish_reason: str | None = None
    usage: dict | None = None
    logprobs: list[dict] = field(default_factory=list)
    stop_sequence: str | None = None


def client_finish_reason(engine_finish: str, has_calls: bool) -> str:
    """The finish reason told to the client (see the module docstring)."""
    if engine_finish == "length":
        return "length"
    return "tool_calls" if has_calls else engine_finish


class ReplyAssembler:
    """Turns one completion's tokens into :class:`ChatEvent` objects.

    Args:
        tokenizer: the served tokenizer.
        token_bytes: the tokenizer's :class:`TokenBytes`.
        stop_ids: ids that end a completion (never shown as text).
        out: the engine's :class:`GenerationOutput` being filled (ids, logprobs, finish).
        parse_tools: recognise ``<tool_call>`` blocks.
        stops: stop sequences (the reply ends before the first one).
        logprobs: attach logprob entries; ``top_logprobs`` alternatives per entry.
        constrained: the reply is sampled under a grammar (an unfinished call is dropped, not content).
    """

    def __init__(self, tokenizer, token_bytes: TokenBytes, stop_ids, out: GenerationOutput,
                 parse_tools: bool, stops: list[str], logprobs: bool = False, top_logprobs: int = 0,
                 constrained: bool = False):
        self.token_bytes, self.stop_ids, self.out = token_bytes, frozenset(stop_ids), out
        self.parser = OutputParser(parse_tools=parse_tools, parse_reasoning=True, constrained=constrained)
        self.decoder = IncrementalDecoder(tokenizer)
        self.stops, self.want_lp, self.top = stops, logprobs, top_logprobs
        self.hold = max((len(s) for s in stops), default=1) - 1
        self.raw = ""  # the reply's text as decoded (cut at a stop sequence)
        self.stopped = False  # a stop sequence ended the reply
        self.stop_sequence: str | None = None  # which one (the earliest in the text)
        self._fed = self._lp_from = 0

    def logprob_entries(self, start: int, end: int) -> list[dict]:
        """OpenAI logprob entries of sampled positions ``start..end``."""
        entries = []
        for i in range(start, end):
            entry = self.token_bytes.entry(self.out.token_ids[i], self.out.logprobs[i])
            entry["top_logprobs"] = ([self.token_bytes.entry(a, lp) for a, lp in self.out.top_logprobs[i]]
                                     if self.top else [])
            entries.append(entry)
        return entries

    def _events(self, deltas, attach_logprobs: bool) -> list[ChatEvent]:
        events = [ChatEvent("tool_call", tool_call=d.tool_call) if d.kind == "tool_call"
                  else ChatEvent(d.kind, text=d.text) for d in deltas]
        if events and attach_logprobs and self.want_lp:
            events[0].logprobs = self.logprob_entries(self._lp_from, len(self.out.token_ids))
            self._lp_from = len(self.out.token_ids)
        return events

    def push(self, ev: TokenEvent) -> list[ChatEvent]:
        """Take one sampled token (already appended to ``out``); return the events now certain.
        After a stop sequence :attr:`stopped` is True and the caller stops generation."""
        if ev.token_id in self.stop_ids:
            return []
        text = self.decoder.push(ev.token_id)
        if text is None:
            return []  # an incomplete multi-byte character: wait for the next token
        self.raw = text
        cut = len(text) - self.hold
        for s in self.stops:
            i = self.raw.find(s, max(0, self._fed - len(s)))
            if i >= 0:
                self.raw, cut, self.stopped, self.stop_sequence = self.raw[:i], i, True, s
        if cut <= self._fed and not self.stopped:
            return []
        deltas = self.parser.feed(self.raw[self._fed:max(cut, self._fed)])
        self._fed = max(cut, self._fed)
        return self._events(deltas, attach_logprobs=True)

    def finish(self) -> list[ChatEvent]:
        """Flush at the end of generation: the last text, then the ``finish`` event (usage and
        the remaining logprob entries). Sets ``out.finish_reason`` to ``stop`` after a stop
        sequence."""
        out = self.out
        if self.stopped:
            out.finish_reason = "stop"
        else:
            self.raw = self.decoder.flush()
        events = []
        if not self.stopped and self._fed < len(self.raw):
            events += self._events(self.parser.feed(self.raw[self._fed:]), attach_logprobs=False)
            self._fed = len(self.raw)
        ended_by_model = bool(out.token_ids) and out.token_ids[-1] in self.stop_ids and not self.stopped
        events += self._events(self.parser.finish(ended_by_model=ended_by_model), attach_logprobs=False)
        usage = {"prompt_tokens": len(out.prompt_ids), "completion_tokens": len(out.token_ids),
                 "total_tokens": len(out.prompt_ids) + len(out.token_ids)}
        final = ChatEvent("finish", finish_reason=client_finish_reason(out.finish_reason,
                                                                       bool(self.parser.tool_calls)),
                          usage=usage, stop_sequence=self.stop_sequence)
        if self.want_lp and self._lp_from < len(out.token_ids):
            final.logprobs = self.logprob_entries(self._lp_from, len(out.token_ids))
        return events + [final]
