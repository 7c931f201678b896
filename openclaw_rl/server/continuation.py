"""Token-exact continuation: a follow-up request re-uses the recorded ids of the turn it extends.

A stock client sends back the *text* of our reply; the sampled ids rarely survive
decode -> re-encode (BPE has many tokenizations of one text), so re-tokenizing the rendered
history would train on a prompt the model never produced. When a request continues a recorded
reply of its session, the engine is fed instead::

    prev.prompt_ids + prev.response_ids [+ end_of_turn] + tokenize(suffix)

The rule, in full:

* **When.** Capture attributed the request to a session and found the recorded turn whose reply
  it extends (continuation matching on the latest assistant message that we produced). The
  messages before that assistant message must equal that turn's messages exactly (as rendered,
  after the checks of :mod:`openclaw_rl.server.prompt`), the tool list must be the same, and the
  assistant message must be the reply as we returned it: the same ``content`` (``null`` and ``""``
  are the same), the same tool calls (name, and arguments equal as JSON; call ids are not
  compared), and a ``reasoning_content`` that is either absent (clients usually drop it) or equal
  to the one we returned. Anything else (an edited, trimmed or invented reply, a changed system
  prompt or tool list) falls back to rendering the whole conversation, and capture records the
  break (``prefix_ok = false`` and its position) as before.
* **The reply's ids.** The recorded response ids go in unchanged, whatever the template would
  render for that message: a ``<think>`` block the client dropped and the template would strip
  (Qwen3 style) stays, because the model did generate it, and text past a stop sequence stays,
  because it was sampled.
* **End of turn.** The template closes an assistant message with an end-of-turn token (the last
  of the engine's stop tokens that the template writes after the message, ``<|im_end|>`` for both
  built-in templates). A reply that ended with it is used as is; one cut by ``max_tokens`` or a
  stop sequence, or ended by another stop token (``<|endoftext|>``), gets it appended.
* **Suffix.** The conversation is rendered as the template renders it
  (``add_generation_prompt=True``), and everything after the end-of-turn token that closes that
  assistant message is tokenized on its own: the template's separator (``\\n``), the tool
  results or the user's reply, the generation prompt. Because the split falls right after a
  special token, tokenizing the suffix alone gives the ids the full rendering would have, and the
  split is found by counting end-of-turn tokens, so templates that re-render older assistant turns
  differently (dropping ``<think>``) still split at the right place. Templates whose assistant
  turns do not end with a stop token that is a single special token fall back to rendering.

Then the new prompt extends the previous prompt + response token for token (``prefix_ok``) for
any sampled text.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import Iterable

from openclaw_rl.capture.store import TurnRecord
from openclaw_rl.server.prompt import render_text, tokenize
from openclaw_rl.server.tool_parser import parse_reply

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SplicedPrompt:
    """Prompt ids built from a recorded turn: ``ids`` and their decoded ``text``."""

    ids: list[int]
    text: str
    turn_id: int
    #: how many leading ids are the recorded turn's (prompt + reply + end of turn); the rest is the
    #: tokenized suffix
    prefix_len: int = 0


def _json_equal(a: str, b: str) -> bool:
    try:
        return json.loads(a) == json.loads(b)
    except (json.JSONDecodeError, ValueError, TypeError):
        return a == b


def reply_as_returned(turn: TurnRecord, stop_ids: Iterable[int]) -> tuple[str, str, list[tuple[str, str]]]:
    """``(content, reasoning, [(name, arguments)])`` the client was given for a recorded turn.

    Re-parses the recorded raw text with the rules the server used when it answered.
    """
    stop_ids = set(stop_ids)
    ended = bool(turn.response_ids) and turn.response_ids[-1] in stop_ids
    parser = parse_reply(turn.response_text, parse_tools=turn.tools is not None, ended_by_model=ended,
                         constrained=bool(turn.constrained))
    return parser.content, parser.reasoning, [(c.name, c.arguments) for c in parser.tool_calls]


def matches_reply(message: dict, turn: TurnRecord, stop_ids: Iterable[int]) -> bool:
    """Is the history's assistant ``message`` the reply we returned for ``turn``?"""
    if message.get("role") != "assistant":
        return False
    content, reasoning, calls = reply_as_returned(turn, stop_ids)
    if (message.get("content") or "") != content:
        return False
    sent = message.get("reasoning_content")
    if sent and sent.strip() != reasoning.strip():
        return False
    got = [(c["function"]["name"], c["function"]["arguments"]) for c in message.get("tool_calls") or []]
    return len(got) == len(calls) and all(
        n1 == n2 and _json_equal(a1, a2) for (n1, a1), (n2, a2) in zip(got, calls))


class ContinuationBuilder:
    """Builds token-exact prompts for requests that continue a recorded turn.

    Args:
        tokenizer: the served model's tokenizer (chat template).
        stop_ids: the engine's stop ids (end-of-turn candidates).
    """

    def __init__(self, tokenizer, stop_ids: Iterable[int]):
        self.tokenizer = tokenizer
        self.stop_ids = frozenset(stop_ids)
        self._stop_text = {}
        for i in self.stop_ids:
            text = tokenizer.decode([i], skip_special_tokens=False)
            if text and tokenize(tokenizer, text) == [i]:  # a single special token in text form
                self._stop_text[i] = text

    def end_of_turn(self, rendered: str) -> tuple[int, str] | None:
        """``(id, text)`` of the stop token the template writes last in ``rendered``."""
        best = None
        for i, text in self._stop_text.items():
            at = rendered.rfind(text)
            if at >= 0 and (best is None or at > best[0]):
                best = (at, i, text)
        return None if best is None else (best[1], best[2])

    def build(self, messages: list[dict], tools: list[dict] | None, full_text: str,
              turn: TurnRecord | None, reply_at: int | None) -> SplicedPrompt | None:
        """Prompt ids for ``messages`` that re-use ``turn``'s ids, or None (render instead).

        Args:
            messages: the request's template messages.
            tools: the tool list shown to the model (None for none).
            full_text: the template's rendering of ``messages`` with the generation prompt.
            turn: the recorded turn the request continues (from capture's attribution).
            reply_at: index in ``messages`` of the assistant message that is ``turn``'s reply.

        Returns:
            The spliced prompt, or None when the rule of the module docstring does not apply.
        """
        if turn is None or reply_at is None or not 0 <= reply_at < len(messages):
            return None
        why = self._mismatch(messages, tools, turn, reply_at)
        if why:
            log.debug("turn %s not continued token-exactly: %s", turn.turn_uid, why)
            return None
        closed = render_text(self.tokenizer, messages[:reply_at + 1], tools, add_generation_prompt=False)
        eot = self.end_of_turn(closed)
        if eot is None:
            return None
        eot_id, eot_text = eot
        n = closed.count(eot_text)
        at = -len(eot_text)
        for _ in range(n):
            at = full_text.find(eot_text, at + len(eot_text))
            if at < 0:
                return None
        suffix = full_text[at + len(eot_text):]
        reply = list(turn.response_ids)
        if not reply or reply[-1] != eot_id:
            reply.append(eot_id)
        prefix = list(turn.prompt_ids) + reply
        ids = prefix + tokenize(self.tokenizer, suffix)
        return SplicedPrompt(ids=ids, text=self.tokenizer.decode(ids, skip_special_tokens=False),
                             turn_id=turn.id, prefix_len=len(prefix))

    def _mismatch(self, messages, tools, turn: TurnRecord, reply_at: int) -> str | None:
        if messages[:reply_at] != turn.messages:
            return "the history before the reply differs from the recorded request"
        if (tools or None) != (turn.tools or None):
            return "the tool list differs from the recorded request"
        if not matches_reply(messages[reply_at], turn, self.stop_ids):
            return "the assistant message is not the reply we returned"
        return None
