"""The reply of one ``POST /v1/messages`` request as the Anthropic Messages API's objects
(https://docs.anthropic.com/en/api/messages): its stream events and its final ``message``, built
from the SDK's own pydantic models in ``anthropic.types``.

A module of its own so that only a server that is asked for the Messages API imports the SDK
(:func:`openclaw_rl.server.messages_api.renderer_class`); the request side (parsing, translation
into a chat completion, the route) is :mod:`openclaw_rl.server.messages_api`.
"""

from __future__ import annotations

import json

from anthropic.types import (InputJSONDelta, Message, MessageDeltaUsage, RawContentBlockDeltaEvent,
                             RawContentBlockStartEvent, RawContentBlockStopEvent, RawMessageDeltaEvent,
                             RawMessageStartEvent, RawMessageStopEvent, TextBlock, TextDelta, ThinkingBlock,
                             ThinkingDelta, ToolUseBlock, Usage)
from pydantic import BaseModel

from openclaw_rl.server.reply import ChatEvent
from openclaw_rl.server.reply_blocks import BlockEvent, BlockSequencer


def stop_reason(finish: ChatEvent) -> str:
    """Anthropic's ``stop_reason`` for the reply's ``finish`` event."""
    if finish.finish_reason == "length":
        return "max_tokens"
    if finish.stop_sequence is not None:
        return "stop_sequence"
    return "tool_use" if finish.finish_reason == "tool_calls" else "end_turn"


def _tool_input(arguments: str) -> dict:
    """A call's JSON arguments as Anthropic's ``input`` object (arguments that are not a JSON
    object, which only an unconstrained model writes, are kept under ``"arguments"``)."""
    try:
        value = json.loads(arguments)
    except (json.JSONDecodeError, ValueError):
        value = arguments
    return value if isinstance(value, dict) else {"arguments": value}


class MessageRenderer:
    """One reply as an Anthropic ``message``: its stream events and its final object.

    Args:
        message_id: the ``msg_...`` id (also the turn's ``completion_id`` in the store).
        model: the served model name.
    """

    def __init__(self, message_id: str, model: str):
        self.id, self.model = message_id, model
        self.blocks = BlockSequencer()
        self.content: list[BaseModel] = []
        self.finish: ChatEvent | None = None
        self.input_tokens = 0

    def message(self) -> Message:
        """The ``message`` with the blocks so far (stop reason and usage once finished)."""
        usage = (self.finish.usage or {}) if self.finish else {}
        return Message(id=self.id, type="message", role="assistant", model=self.model, content=self.content,
                       stop_reason=stop_reason(self.finish) if self.finish else None,
                       stop_sequence=self.finish.stop_sequence if self.finish else None,
                       usage=Usage(input_tokens=usage.get("prompt_tokens", self.input_tokens),
                                   output_tokens=usage.get("completion_tokens", 0)))

    def start(self, input_tokens: int) -> list[BaseModel]:
        """``message_start`` (an empty message with the prompt's token count)."""
        self.input_tokens = input_tokens
        return [RawMessageStartEvent(type="message_start", message=self.message())]

    def push(self, event: ChatEvent) -> list[BaseModel]:
        """The stream events of one chat event (the ``finish`` event ends the message)."""
        if event.kind == "finish":
            self.finish = event
        out = [e for b in self.blocks.feed(event) for e in self._block(b)]
        if event.kind == "finish":
            usage = event.usage or {}
            out += [RawMessageDeltaEvent(type="message_delta",
                                         delta={"stop_reason": stop_reason(event),
                                                "stop_sequence": event.stop_sequence},
                                         usage=MessageDeltaUsage(input_tokens=usage.get("prompt_tokens", 0),
                                                                 output_tokens=usage.get("completion_tokens", 0))),
                    RawMessageStopEvent(type="message_stop")]
        return out

    def _block(self, b: BlockEvent) -> list[BaseModel]:
        if b.kind == "tool_call":
            call = b.tool_call
            if b.action == "start":
                self.content.append(ToolUseBlock(type="tool_use", id=call.id, name=call.name,
                                                 input=_tool_input(call.arguments)))
                return [RawContentBlockStartEvent(type="content_block_start", index=b.index, content_block=ToolUseBlock(
                    type="tool_use", id=call.id, name=call.name, input={}))]
            return [RawContentBlockDeltaEvent(type="content_block_delta", index=b.index, delta=InputJSONDelta(
                        type="input_json_delta", partial_json=json.dumps(_tool_input(call.arguments)))),
                    RawContentBlockStopEvent(type="content_block_stop", index=b.index)]
        thinking = b.kind == "reasoning"
        if b.action == "start":
            block = (ThinkingBlock(type="thinking", thinking="", signature="") if thinking
                     else TextBlock(type="text", text=""))
            self.content.append(block)
            return [RawContentBlockStartEvent(type="content_block_start", index=b.index, content_block=block)]
        if b.action == "delta":
            delta = (ThinkingDelta(type="thinking_delta", thinking=b.text) if thinking
                     else TextDelta(type="text_delta", text=b.text))
            return [RawContentBlockDeltaEvent(type="content_block_delta", index=b.index, delta=delta)]
        self.content[b.index] = (ThinkingBlock(type="thinking", thinking=b.text, signature="") if thinking
                                 else TextBlock(type="text", text=b.text))
        return [RawContentBlockStopEvent(type="content_block_stop", index=b.index)]
