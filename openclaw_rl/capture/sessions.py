"""Session attribution and next-state extraction for stock clients.

A client that sends no special header still gets its turns grouped into sessions. The first
rule that applies decides (docs/architecture.md, invariant 2):

1. ``X-Session-Id`` header or ``session_id`` body field (``header``);
2. ``prompt_cache_key`` (``prompt_cache_key``);
3. ``user`` (``user``). These two keys name a user, not a conversation, so within them a request
   that continues an earlier turn stays in that turn's session and a request with no assistant
   message (a new conversation) opens a new session ``<key>:<random>``;
4. an OpenClaw runtime line ``sessionId=...`` in the messages (``openclaw_runtime``);
5. continuation matching: the request's messages extend an earlier request's messages plus
   the reply we gave (``continuation``);
6. otherwise a new session (``new``).

Matching works on *canonical* messages: client-injected context blocks (OpenClaw's
``<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>>`` ... ``<<<END_OPENCLAW_INTERNAL_CONTEXT>>>``) are removed,
content parts are joined, an assistant message keeps only its text and its tool calls' names and
(JSON-normalised) arguments. Each prefix of the canonical conversation has a chained SHA-256
fingerprint, so finding the longest earlier turn a request extends is one lookup per assistant
message.
"""

from __future__ import annotations

import hashlib
import json
import re
import uuid
from dataclasses import dataclass
from typing import Mapping, Sequence

from openclaw_rl.capture.turn_rules import TurnRules

INTERNAL_CONTEXT_RE = re.compile(
    r"<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>>.*?<<<END_OPENCLAW_INTERNAL_CONTEXT>>>\s*", re.S)
RUNTIME_SESSION_RE = re.compile(r"\bsessionId=([A-Za-z0-9][A-Za-z0-9._:-]*)")


def message_text(message: Mapping) -> str:
    """Text of a message dict whose ``content`` is a string, a list of text parts or null."""
    content = message.get("content")
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "".join(p.get("text", "") for p in content if isinstance(p, Mapping))


def _canon_args(arguments) -> object:
    if isinstance(arguments, str):
        try:
            return json.loads(arguments)
        except (json.JSONDecodeError, ValueError):
            return arguments
    return arguments


def canonical_message(message: Mapping) -> dict | None:
    """Canonical form used for matching; None for a message that is only injected context."""
    role = message.get("role")
    text = INTERNAL_CONTEXT_RE.sub("", message_text(message))
    if role == "assistant":
        calls = [(c.get("function", c).get("name"), _canon_args(c.get("function", c).get("arguments", {})))
                 for c in (message.get("tool_calls") or [])]
        return {"role": role, "content": text.strip(), "tool_calls": calls}
    if role in ("user", "system", "developer") and not text.strip() and message_text(message).strip():
        return None  # the whole message was an injected context block
    return {"role": role, "content": text}


def canonical_messages(messages: Sequence[Mapping]) -> list[tuple[int, dict]]:
    """``(original index, canonical message)`` for every message that is not pure context."""
    out = []
    for i, m in enumerate(messages):
        c = canonical_message(m)
        if c is not None:
            out.append((i, c))
    return out


def chain_fingerprints(canon: Sequence[dict]) -> list[str]:
    """Chained SHA-256 of each prefix: ``fp[k]`` identifies ``canon[:k+1]``."""
    out, h = [], b""
    for m in canon:
        h = hashlib.sha256(h + json.dumps(m, sort_keys=True, ensure_ascii=False).encode()).digest()
        out.append(h.hex())
    return out


def reply_fingerprint(messages: Sequence[Mapping], reply: Mapping) -> str:
    """Fingerprint of a request's messages followed by our assistant reply."""
    canon = [c for _, c in canonical_messages(messages)]
    canon.append(canonical_message(reply))
    return chain_fingerprints(canon)[-1]


@dataclass
class Attribution:
    """Where a request belongs.

    Attributes:
        session_id: the session.
        source: which rule decided (see module doc).
        turn_type: ``main`` or ``side``.
        side_reason: the rule that made it side (None for main).
        done: the client said the session ends with this turn (``X-Session-Done``).
        continued_turn_id: the earlier turn whose reply this request extends, if matched.
        next_state_from: index into the request's messages where the messages that follow the
            previous turn's reply start (None: unknown, use the last assistant message).
    """

    session_id: str
    source: str
    turn_type: str
    side_reason: str | None = None
    done: bool = False
    continued_turn_id: int | None = None
    next_state_from: int | None = None


def _truthy(value: str | None) -> bool:
    return value is not None and value.strip().lower() in ("1", "true", "yes", "on")


def attribute(messages: Sequence[Mapping], body: Mapping, headers: Mapping[str, str],
              rules: TurnRules, lookup) -> Attribution:
    """Decide session and turn type for one request.

    Args:
        messages: the request's messages as dicts.
        body: the request body (``session_id``, ``prompt_cache_key``, ``user``, ``turn_type``).
        headers: request headers, lower-cased keys.
        rules: side-turn rules.
        lookup: ``callable(fingerprints) -> (session_id, turn_id, fp) | None`` (the store's
            :meth:`lookup_continuation`), tried longest prefix first.
    """
    canon = canonical_messages(messages)
    fps = chain_fingerprints([c for _, c in canon])
    assistant_at = [k for k, (_, c) in enumerate(canon) if c["role"] == "assistant"]
    match = lookup([fps[k] for k in reversed(assistant_at)]) if assistant_at else None
    continued_turn_id = next_from = None
    if match:
        k = fps.index(match[2])
        continued_turn_id = match[1]
        next_from = canon[k][0] + 1

    session_id, source = None, None
    header = headers.get("x-session-id") or body.get("session_id")
    if header:
        session_id, source = str(header), "header"
    else:
        for value, src in ((body.get("prompt_cache_key"), "prompt_cache_key"), (body.get("user"), "user")):
            if value:
                # a weak key groups *all* of a user's conversations: a request that continues an
                # earlier turn stays in that turn's session, a fresh conversation gets its own
                if match and (match[0] == value or match[0].startswith(f"{value}:")):
                    session_id, source = match[0], src
                elif not assistant_at:
                    session_id, source = f"{value}:{uuid.uuid4().hex[:12]}", src
                else:
                    session_id, source = str(value), src
                break
    if session_id is None:
        for m in reversed(messages):
            if m.get("role") in ("user", "system", "developer"):
                found = RUNTIME_SESSION_RE.search(message_text(m))
                if found:
                    session_id, source = found.group(1), "openclaw_runtime"
                    break
    if session_id is None and match:
        session_id, source = match[0], "continuation"
    if session_id is None:
        session_id, source = uuid.uuid4().hex, "new"
    if match and match[0] != session_id:
        continued_turn_id = next_from = None  # the matched turn belongs to another session

    explicit = headers.get("x-turn-type") or body.get("turn_type")
    if explicit:
        turn_type, reason = explicit.strip().lower(), ("explicit" if explicit.strip().lower() == "side" else None)
    else:
        reason = rules.side_reason(messages)
        turn_type = "side" if reason else "main"
    return Attribution(session_id=session_id, source=source, turn_type=turn_type,
                       side_reason=reason, done=_truthy(headers.get("x-session-done")),
                       continued_turn_id=continued_turn_id, next_state_from=next_from)


def extract_next_state(messages: Sequence[Mapping], start: int | None,
                       rules: TurnRules) -> tuple[str | None, str | None]:
    """The next state of the previous main turn, from the new request's messages.

    Args:
        messages: the new request's messages.
        start: index where the messages after the previous reply begin; None means after the
            last assistant message (or all non-system messages when there is none).
        rules: provides the context patterns stripped from the next state text.

    Returns:
        ``(text, role)``: tool results and user replies in order (tool results prefixed with
        ``[tool <id>]``), injected context removed; ``role`` is ``"tool"`` or ``"user"`` (that of
        the first message). ``(None, None)`` when nothing follows.
    """
    if start is None:
        last = max((i for i, m in enumerate(messages) if m.get("role") == "assistant"), default=-1)
        start = last + 1
    parts, role = [], None
    for m in messages[start:]:
        r = m.get("role")
        if r not in ("user", "tool"):
            continue
        text = rules.strip_context(message_text(m)).strip()
        if not text:
            continue
        role = role or r
        parts.append(f"[tool {m.get('tool_call_id') or ''}]".replace(" ]", "]") + " " + text
                     if r == "tool" else text)
    if not parts:
        return None, None
    return "\n\n".join(parts), role
