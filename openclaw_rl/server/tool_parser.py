"""Incremental parser for generated text: reasoning, content and tool calls.

Understands the Hermes / Qwen convention the chat templates use (see
:mod:`openclaw_rl.chat_templates`): an optional leading ``<think>...</think>`` block (returned as
``reasoning_content``) and ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>`` blocks
(returned as OpenAI ``tool_calls``). Text is fed as it is decoded; each :meth:`OutputParser.feed`
returns the deltas that are certain so far, holding back only a tail that could still become a
marker. Feeding the same text in any chunking yields the same concatenated result, which is what
makes a streamed reply equal to the non-streamed one.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass

THINK_OPEN, THINK_CLOSE = "<think>", "</think>"
TOOL_OPEN, TOOL_CLOSE = "<tool_call>", "</tool_call>"


@dataclass(frozen=True)
class ParsedToolCall:
    """One complete tool call: OpenAI shape via :meth:`to_openai`."""

    index: int
    id: str
    name: str
    arguments: str  # JSON text

    def to_openai(self) -> dict:
        """Return ``{"id", "type": "function", "function": {"name", "arguments"}}``."""
        return {"id": self.id, "type": "function",
                "function": {"name": self.name, "arguments": self.arguments}}


@dataclass(frozen=True)
class Delta:
    """A piece of parsed output: ``kind`` is ``content``, ``reasoning`` or ``tool_call``."""

    kind: str
    text: str = ""
    tool_call: ParsedToolCall | None = None


def _held_suffix(buf: str, markers: tuple[str, ...]) -> int:
    """Length of the longest suffix of ``buf`` that is a proper prefix of a marker."""
    best = 0
    for marker in markers:
        for n in range(min(len(marker) - 1, len(buf)), 0, -1):
            if buf.endswith(marker[:n]):
                best = max(best, n)
                break
    return best


def parse_tool_call_json(text: str) -> tuple[str, str] | None:
    """Parse the JSON body of a ``<tool_call>`` block.

    Returns:
        ``(name, arguments_json)`` or None when the body is not a JSON object with a string
        ``name`` (arguments may be an object or a JSON string; missing means ``{}``).
    """
    try:
        obj = json.loads(text)
    except (json.JSONDecodeError, ValueError):
        return None
    if not isinstance(obj, dict) or not isinstance(obj.get("name"), str) or not obj["name"]:
        return None
    args = obj.get("arguments", obj.get("parameters", {}))
    if isinstance(args, str):
        try:
            json.loads(args)
        except (json.JSONDecodeError, ValueError):
            return None
        return obj["name"], args
    return obj["name"], json.dumps(args, ensure_ascii=False)


class OutputParser:
    """Split streamed model text into reasoning / content / tool-call deltas.

    Args:
        parse_tools: recognise ``<tool_call>`` blocks (False when the request has no tools or
            ``tool_choice`` is ``"none"``: the text is then plain content).
        parse_reasoning: recognise a leading ``<think>`` block.
        constrained: the reply was sampled under a grammar (forced ``tool_choice`` or
            ``response_format``), where ``<tool_call>`` can only open a call: a block cut before
            it is complete is dropped, never returned as content (its markup would otherwise
            reach the user as the answer).
    """

    def __init__(self, parse_tools: bool = True, parse_reasoning: bool = True, constrained: bool = False):
        self.parse_tools = parse_tools
        self.constrained = constrained
        self.parse_reasoning = parse_reasoning
        self._buf = ""
        self._state = "start" if parse_reasoning else "content"
        self._pending_ws = ""  # whitespace held until real content follows
        self._lstrip = False  # drop newlines that open the next block
        self._n_tools = 0
        self.tool_calls: list[ParsedToolCall] = []
        #: everything emitted so far, by kind
        self.content = ""
        self.reasoning = ""

    def feed(self, text: str) -> list[Delta]:
        """Consume decoded text; return the deltas now certain."""
        self._buf += text
        out: list[Delta] = []
        while True:
            if self._state == "start":
                stripped = self._buf.lstrip()
                if stripped.startswith(THINK_OPEN):
                    self._buf = stripped[len(THINK_OPEN):]
                    self._state, self._lstrip = "reasoning", True
                    continue
                if THINK_OPEN.startswith(stripped):
                    return out  # empty, whitespace or a prefix: could still become <think>
                self._state = "content"
                continue
            if self._lstrip:
                self._buf = self._buf.lstrip("\n")
                if not self._buf:
                    return out
                self._lstrip = False
            if self._state == "reasoning":
                i = self._buf.find(THINK_CLOSE)
                if i >= 0:
                    self._emit(out, "reasoning", self._buf[:i].rstrip("\n"))
                    self._buf = self._buf[i + len(THINK_CLOSE):]
                    self._state, self._lstrip = "content", True
                    continue
                cut = len(self._buf) - _held_suffix(self._buf, (THINK_CLOSE,))
                while cut > 0 and self._buf[cut - 1] == "\n":
                    cut -= 1  # trailing newlines before </think> are not reasoning
                self._emit(out, "reasoning", self._buf[:cut])
                self._buf = self._buf[cut:]
                return out
            if self._state == "content":
                i = self._buf.find(TOOL_OPEN) if self.parse_tools else -1
                if i >= 0:
                    self._content(out, self._buf[:i], final=False)
                    self._buf = self._buf[i + len(TOOL_OPEN):]
                    self._state = "tool"
                    continue
                keep = _held_suffix(self._buf, (TOOL_OPEN,)) if self.parse_tools else 0
                self._content(out, self._buf[:len(self._buf) - keep], final=False)
                self._buf = self._buf[len(self._buf) - keep:]
                return out
            if self._state == "tool":
                i = self._buf.find(TOOL_CLOSE)
                if i < 0:
                    return out
                self._close_tool(out, self._buf[:i], raw_close=TOOL_CLOSE)
                self._buf = self._buf[i + len(TOOL_CLOSE):]
                self._state = "content"

    def finish(self, ended_by_model: bool = True) -> list[Delta]:
        """Flush at the end of generation; an unterminated block is resolved here.

        Args:
            ended_by_model: the model ended its reply itself (it sampled an end-of-turn token).
                Only then does a ``<tool_call>`` block without ``</tool_call>`` whose body is a
                complete call count as a call; a reply cut off by ``max_tokens`` or a stop
                sequence never returns an unfinished call as a call (its text stays content,
                unless the reply is ``constrained``: then it is dropped).
        """
        out: list[Delta] = []
        if self._state in ("start", "content"):
            self._content(out, self._buf, final=True)
        elif self._state == "reasoning":
            self._emit(out, "reasoning", self._buf.rstrip("\n"))
        elif self._state == "tool" and ended_by_model:
            self._close_tool(out, self._buf, raw_close="")
            self._content(out, "", final=True)
        elif self._state == "tool":
            self._content(out, "" if self.constrained else TOOL_OPEN + self._buf, final=True)
        self._buf = ""
        return out


    # ------------------------------------------------------------------ helpers
    def _emit(self, out: list[Delta], kind: str, text: str) -> None:
        if text:
            out.append(Delta(kind, text))
            if kind == "content":
                self.content += text
            else:
                self.reasoning += text

    def _content(self, out: list[Delta], text: str, final: bool) -> None:
        text = self._pending_ws + text
        self._pending_ws = ""
        if final:
            if not self.tool_calls:
                self._emit(out, "content", text)
            elif text.strip():
                self._emit(out, "content", text.rstrip())
            return
        stripped = text.rstrip()
        self._emit(out, "content", stripped)
        self._pending_ws = text[len(stripped):]

    def _close_tool(self, out: list[Delta], body: str, raw_close: str) -> None:
        parsed = parse_tool_call_json(body.strip())
        if parsed is None:  # not a valid call: keep the text as content, lose nothing
            self._content(out, TOOL_OPEN + body + raw_close, final=False)
            return
        call = ParsedToolCall(index=self._n_tools, id=f"call_{uuid.uuid4().hex[:24]}",
                              name=parsed[0], arguments=parsed[1])
        self._n_tools += 1
        self._pending_ws = ""  # whitespace between content and a tool call is layout
        self.tool_calls.append(call)
        out.append(Delta("tool_call", tool_call=call))


def parse_reply(text: str, parse_tools: bool, ended_by_model: bool, constrained: bool = False) -> OutputParser:
    """Parse a whole reply at once (same result as feeding it in any chunking, then finishing);
    ``constrained`` as in :class:`OutputParser`.

    Returns:
        The finished parser: ``content``, ``reasoning`` and ``tool_calls`` (call ids are new).
    """
    parser = OutputParser(parse_tools=parse_tools, parse_reasoning=True, constrained=constrained)
    parser.feed(text)
    parser.finish(ended_by_model=ended_by_model)
    return parser


def render_reply(content: str, tool_calls: list[tuple[str, object]], reasoning: str | None = None) -> str:
    """The model output that :func:`parse_reply` parses back into ``content`` and ``tool_calls``:
    the inverse used for a reply known only as its parts (an imported history turn).

    Args:
        content: the reply's text.
        tool_calls: ``(name, arguments)`` pairs, ``arguments`` a JSON value (an object).
        reasoning: a reasoning text, written as a leading ``<think>`` block (None or empty: none).

    Returns:
        ``<think>\\n{reasoning}\\n</think>\\n\\n`` (if any), the content, then each call as
        ``<tool_call>\\n{"name": ..., "arguments": ...}\\n</tool_call>``, separated by a newline:
        the layout the Hermes / Qwen chat templates write for an assistant message (``tojson``:
        ``json.dumps`` with ``ensure_ascii=False``).
    """
    blocks = [f'{TOOL_OPEN}\n{json.dumps({"name": name, "arguments": args}, ensure_ascii=False)}\n{TOOL_CLOSE}'
              for name, args in tool_calls]
    text = "\n".join([content, *blocks] if content else blocks)
    return f"{THINK_OPEN}\n{reasoning.strip()}\n{THINK_CLOSE}\n\n{text}" if reasoning else text
