"""One OpenClaw history session as the project's turn records: main/side turns and next states.

The live server records one turn per model request; in OpenClaw's transcript each model request
left one assistant message. So each assistant message of the active branch becomes one turn:

* **prompt**: the conversation before it as OpenAI messages (``user``; ``assistant`` with
  ``tool_calls``; ``tool`` with ``tool_call_id``). OpenClaw keeps neither the system prompt nor the
  tool list in the transcript (its trajectory cuts the system prompt at 32768 characters), so the
  prompt has none; the ids are made from these messages with the policy's chat template when the
  turn is trained (:mod:`openclaw_rl.capture.text_turns`, ``ids_from_text``). Transcript-only
  entries are left out as OpenClaw leaves them out of its requests: custom messages (the runtime
  context carrier, the turn-aborted notice), model and thinking-level changes, and an assistant
  message that ended in an error or abort with nothing said (no reply the user saw).
* **response**: the assistant's text and tool calls written the way the model wrote them
  (:func:`openclaw_rl.server.tool_parser.render_reply`); ``tool_calls`` as the live server records them;
  ``completion_id`` the ``responseId`` OpenClaw kept (our server's ``chatcmpl-...`` id when the
  conversation went through it).
* **main or side**: side when the run's trigger (OpenClaw's own turn type, from the run's
  ``session.started`` event) is ``heartbeat``, ``cron``, ``memory`` or ``overflow``
  (:data:`SIDE_TRIGGERS`), else by the live server's rules (:class:`TurnRules`) on the prompt, which
  also catch a transcript without runtime events (``[OpenClaw heartbeat poll]`` ...).
* **next state** of a main turn: the user and tool messages after it up to the next main turn's
  reply, context blocks removed, exactly as the live server takes them from the next main request
  (:func:`openclaw_rl.capture.sessions.extract_next_state`). After the session's last main turn a
  side turn's trigger (a heartbeat poll) is not a next state: a side request never links one. A
  user message after the last reply that got no answer is one (the live server never saw it).

A session with a tool call that has no result is refused (:class:`SessionTurnError`): its turns
would train on a reply whose consequence was never seen.
"""

from __future__ import annotations

import json
from typing import Any

from openclaw_rl.capture.openclaw_history.sources import HistorySession
from openclaw_rl.capture.records import READY, SIDE, TurnRecord, TurnType
from openclaw_rl.capture.sessions import extract_next_state
from openclaw_rl.capture.turn_rules import TurnRules
from openclaw_rl.server.tool_parser import render_reply

__all__ = ["SIDE_TRIGGERS", "SOURCE", "SessionTurnError", "session_turns"]

#: OpenClaw run triggers (``EmbeddedRunTrigger``) whose turns are housekeeping: side turns
SIDE_TRIGGERS = frozenset({"heartbeat", "cron", "memory", "overflow"})
#: the ``sessions.source`` of an imported session
SOURCE = "openclaw-history"
_FINISH = {"toolUse": "tool_calls", "stop": "stop", "length": "length"}


class SessionTurnError(ValueError):
    """A session whose transcript cannot become turns (the message names the entry)."""


def _parts_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text")
    return ""


def _assistant(message: dict) -> tuple[dict, str, list[tuple[str, Any]], str | None]:
    """``(OpenAI message, text, [(name, arguments)], reasoning)`` of an OpenClaw assistant message."""
    content = message.get("content")
    blocks = content if isinstance(content, list) else [{"type": "text", "text": content or ""}]
    text = "".join(b.get("text", "") for b in blocks if isinstance(b, dict) and b.get("type") == "text")
    reasoning = "".join(b.get("thinking", "") for b in blocks if isinstance(b, dict) and b.get("type") == "thinking")
    calls = [b for b in blocks if isinstance(b, dict) and b.get("type") == "toolCall"]
    tool_calls = [{"id": c.get("id"), "type": "function",
                   "function": {"name": c.get("name"), "arguments": json.dumps(c.get("arguments") or {},
                                                                               ensure_ascii=False)}}
                  for c in calls]
    msg = {"role": "assistant", "content": text or None}
    if tool_calls:
        msg["tool_calls"] = tool_calls
    return msg, text, [(c.get("name"), c.get("arguments") or {}) for c in calls], reasoning or None


def _said_nothing(message: dict) -> bool:
    """An assistant message that ended in an error or abort before anything was said."""
    _, text, calls, _ = _assistant(message)
    return message.get("stopReason") in ("error", "aborted") and not text.strip() and not calls


def _conversation(session: HistorySession) -> tuple[list[dict], list[tuple[int, dict, dict]]]:
    """``(messages, [(message index, entry, OpenClaw message)])``: the OpenAI messages of the
    active branch and where each assistant reply sits among them."""
    messages: list[dict] = []
    replies: list[tuple[int, dict, dict]] = []
    for entry in session.entries:
        m = entry.get("message") if entry.get("type") == "message" else None
        if not isinstance(m, dict):
            continue
        role = m.get("role")
        if role == "user":
            messages.append({"role": "user", "content": _parts_text(m.get("content"))})
        elif role == "assistant" and not _said_nothing(m):
            replies.append((len(messages), entry, m))
            messages.append(_assistant(m)[0])
        elif role == "toolResult":
            messages.append({"role": "tool", "tool_call_id": m.get("toolCallId"),
                             "content": _parts_text(m.get("content"))})
    return messages, replies


def _check_tool_results(messages: list[dict], replies: list[tuple[int, dict, dict]], where: str) -> None:
    for i, entry, _ in replies:
        answered = {m.get("tool_call_id") for m in messages[i + 1:] if m["role"] == "tool"}
        for call in messages[i].get("tool_calls", []):
            if call["id"] not in answered:
                raise SessionTurnError(f"{where}: tool call {call['id']} ({call['function']['name']}) of entry "
                                       f"{entry.get('id')} has no result")


def _next_state_end(messages: list[dict], replies: list[tuple[int, dict, dict]], turns: list[TurnRecord],
                    k: int) -> int:
    """Where the next state of main turn ``k`` ends: at the next main reply (the live server reads
    it from that request); after the session's last main turn, where the next side turn's trigger
    (its last user message) starts, since a side request never links a next state; else the end."""
    later = range(k + 1, len(turns))
    main = next((n for n in later if turns[n].turn_type == TurnType.MAIN), None)
    if main is not None:
        return replies[main][0]
    side = next((n for n in later if turns[n].turn_type == TurnType.SIDE), None)
    if side is None:
        return len(messages)
    at = replies[side][0]
    return max((i for i in range(replies[k][0] + 1, at) if messages[i]["role"] == "user"), default=at)


def session_turns(session: HistorySession, rules: TurnRules) -> list[TurnRecord]:
    """The turns of one session, oldest first, ready to store (module docstring).

    Args:
        session: the session read from OpenClaw's history.
        rules: the live server's side-turn rules and context patterns.

    Returns:
        One :class:`TurnRecord` per assistant reply, without token ids (``ids_from_text`` is set
        when the policy's template makes them); main turns ``ready`` (with their next state when
        one followed), side turns ``side``. ``turn_uid`` is ``openclaw:<session id>:<entry id>``
        (stable, so a re-import finds it); ``created_at`` the reply's time (UNIX seconds).

    Raises:
        SessionTurnError: a tool call without a result.
    """
    messages, replies = _conversation(session)
    _check_tool_results(messages, replies, f"session {session.session_id} ({session.origin})")
    turns: list[TurnRecord] = []
    for i, entry, m in replies:
        _, text, calls, reasoning = _assistant(m)
        trigger = session.triggers.get((m.get("__openclaw") or {}).get("runId"))
        reason = trigger if trigger in SIDE_TRIGGERS else rules.side_reason(messages[:i])
        model = "/".join(x for x in (m.get("provider"), m.get("model")) if x) or None
        stamp = m.get("timestamp")
        turns.append(TurnRecord(
            session_id=session.session_id, turn_type=TurnType.SIDE if reason else TurnType.MAIN,
            messages=[dict(x) for x in messages[:i]], prompt_text="", prompt_ids=[], response_ids=[],
            response_logprobs=[], response_text=render_reply(text, calls, reasoning),
            finish_reason=_FINISH.get(m.get("stopReason"), "stop"), weight_version=0,
            turn_uid=f"openclaw:{session.session_id}:{entry.get('id')}", tool_calls=messages[i].get("tool_calls"),
            reasoning_content=reasoning, model=model, side_reason=reason, completion_id=m.get("responseId"),
            created_at=stamp / 1000 if isinstance(stamp, (int, float)) else None))
    for k, turn in enumerate(turns):
        if turn.turn_type == TurnType.MAIN:
            end = _next_state_end(messages, replies, turns, k)
            turn.next_state, turn.next_state_role = extract_next_state(messages[:end], replies[k][0] + 1, rules)
    for t in turns:
        t.status = READY if t.turn_type == TurnType.MAIN else SIDE
    return turns
