"""A reply as an ordered list of blocks, for the APIs whose replies are lists: the Responses API
(output items) and the Anthropic Messages API (content blocks).

:class:`BlockSequencer` takes the :class:`~openclaw_rl.server.reply.ChatEvent` objects of one
reply, in order, and returns :class:`BlockEvent` objects: a block opens, grows by text deltas
and closes; a tool call is one block, opened and closed at once (the parser only ever returns
complete calls). Both the streamed and the non-streamed answer of an API are rendered from the
same block events, so they always agree, and they agree with what capture records (the
:class:`~openclaw_rl.server.reply.ReplyAssembler` decided both).

Rules:

* block kinds: ``reasoning`` (the ``<think>`` text), ``text`` (content), ``tool_call``;
* consecutive deltas of one kind grow one block; a different kind closes it;
* content that is only whitespace opens no text block until real text follows (then it is
  sent first, so nothing is lost); whitespace around tool calls is layout, not an answer;
* a reply with no block at all (empty, or whitespace only) still gets one text block with that
  text, so a client always finds an answer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from openclaw_rl.server.reply import ChatEvent
from openclaw_rl.server.tool_parser import ParsedToolCall

#: the closed vocabulary of block kinds
BlockKind = Literal["reasoning", "text", "tool_call"]
#: what happens to a block
BlockAction = Literal["start", "delta", "stop"]


@dataclass
class BlockEvent:
    """One step of the reply's block list.

    Attributes:
        action: ``start`` (a block opens; for ``tool_call`` it carries the call), ``delta``
            (``text`` grows the block), ``stop`` (the block is complete; ``text`` is its whole text).
        index: the block's position in the reply, from 0.
        kind: the block's kind.
        text: the delta (``delta``) or the block's whole text (``stop``).
        tool_call: the call (``tool_call`` blocks).
    """

    action: BlockAction
    index: int
    kind: BlockKind
    text: str = ""
    tool_call: ParsedToolCall | None = None


class BlockSequencer:
    """Turns one reply's chat events into block events (see the module docstring).

    Use :meth:`push` for every event before ``finish`` and :meth:`finish` with the ``finish``
    event; after it, :attr:`blocks` lists every block as ``(kind, text, tool_call)``.
    """

    def __init__(self):
        self.blocks: list[tuple[BlockKind, str, ParsedToolCall | None]] = []
        self._open: BlockKind | None = None
        self._text: list[str] = []
        self._pending_ws = ""

    def _close(self) -> list[BlockEvent]:
        if self._open is None:
            return []
        text = "".join(self._text)
        self.blocks.append((self._open, text, None))
        event = BlockEvent("stop", len(self.blocks) - 1, self._open, text)
        self._open, self._text = None, []
        return [event]

    def _grow(self, kind: BlockKind, text: str) -> list[BlockEvent]:
        events = []
        if self._open != kind:
            events += self._close()
            self._open = kind
            events.append(BlockEvent("start", len(self.blocks), kind))
        if text:
            self._text.append(text)
            events.append(BlockEvent("delta", len(self.blocks), kind, text))
        return events

    def push(self, event: ChatEvent) -> list[BlockEvent]:
        """Take one ``content`` / ``reasoning`` / ``tool_call`` event; return the block events."""
        if event.kind == "reasoning":
            return self._grow("reasoning", event.text) if event.text else []
        if event.kind == "content":
            if self._open != "text" and not event.text.strip():
                self._pending_ws += event.text
                return []
            text, self._pending_ws = self._pending_ws + event.text, ""
            return self._grow("text", text)
        if event.kind == "tool_call":
            events = self._close()
            self._pending_ws = ""
            index = len(self.blocks)
            self.blocks.append(("tool_call", event.tool_call.arguments, event.tool_call))
            return events + [BlockEvent("start", index, "tool_call", tool_call=event.tool_call),
                             BlockEvent("stop", index, "tool_call", event.tool_call.arguments, event.tool_call)]
        return []

    def feed(self, event: ChatEvent) -> list[BlockEvent]:
        """Take any chat event: :meth:`finish` for the ``finish`` event, :meth:`push` otherwise."""
        return self.finish() if event.kind == "finish" else self.push(event)

    def finish(self) -> list[BlockEvent]:
        """Close the open block; give an empty reply its one text block."""
        events = self._close()
        if not self.blocks:
            events += self._grow("text", self._pending_ws) + self._close()
        return events
