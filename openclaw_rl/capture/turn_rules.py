"""Rules that classify a request without an explicit turn type as a housekeeping (side) turn.

Side turns are served and recorded but never trained on. A request is *side* when any rule
matches; the default rules recognise OpenClaw's housekeeping traffic:

* ``heartbeat``: the periodic heartbeat poll (``Follow the heartbeat monitor scratch context
  when provided.``, ``Run the following periodic tasks ...``, or the older prompt naming
  ``HEARTBEAT.md`` / ``HEARTBEAT_OK``);
* ``memory_flush``: the pre-compaction memory flush turn (``Pre-compaction memory flush.`` in
  the user text or ``Pre-compaction memory flush turn.`` in the system prompt);
* ``compaction``: the summarisation request (system prompt ``You are a context summarization
  assistant.``, user text opening with ``<conversation>``);
* ``slug`` and ``title``: the filename-slug and session-title generators.

OpenClaw's empty-answer retry (``EMPTY_RESPONSE_RETRY_INSTRUCTION``: "The previous attempt did not
produce a user-visible answer. Continue ...", sent as a user message when a reply had no visible
text) belongs to the run it retries: the request is classified by the user message before it (a
heartbeat's retry is a ``heartbeat`` side turn, a user's is main), as ``import-openclaw`` reads
the run from OpenClaw's own history.

The exact strings were read from ``openclaw@2026.9.6`` (see ``tests/openclaw_agent/NOTES.md``). The
heartbeat and memory-flush prompts match also after OpenClaw's time envelope
(:data:`OPENCLAW_ENVELOPE`): the heartbeat prompt sent as a message arrives as
``[Wed 2026-12-02 06:56 UTC] Follow the heartbeat ...``.

Rules are configurable with ``--side-turn-rules FILE``: a JSON list of
``{"name": str, "pattern": regex, "where": "last_user" | "system" | "any"}`` objects that replace
the defaults (``[]`` disables side detection). Context patterns (:data:`DEFAULT_CONTEXT_PATTERNS`,
not a flag) are removed from next-state text: OpenClaw's internal-context blocks and the per-turn
``Runtime: ...`` line.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Sequence

WHERE = ("last_user", "system", "any")


@dataclass(frozen=True)
class SideRule:
    """One side-turn rule: ``pattern`` (regex, searched) in the messages selected by ``where``."""

    name: str
    pattern: str
    where: str = "last_user"

    def __post_init__(self):
        if self.where not in WHERE:
            raise ValueError(f"side-turn rule {self.name!r}: 'where' must be one of {WHERE}")
        try:
            re.compile(self.pattern)
        except re.error as exc:
            raise ValueError(f"side-turn rule {self.name!r}: bad regex: {exc}") from exc


#: the time envelope OpenClaw puts before a user message it sends (``[Wed 2026-12-02 06:56 UTC] ``, in the
#: host's time zone, optionally after a channel label); its history stores the message without it
OPENCLAW_ENVELOPE = r"(?:\[[^\]\n]*\d{4}-\d{2}-\d{2} \d{2}:\d{2}[^\]\n]*\]\s*)?"
DEFAULT_SIDE_RULES = (
    # heartbeat poll: default prompt, scheduled-tasks variant, older HEARTBEAT.md prompt
    SideRule("heartbeat", rf"^\s*{OPENCLAW_ENVELOPE}(?:Follow the heartbeat monitor scratch context when provided\."
                          r"|Run the following periodic tasks \(only those due based on their intervals\):"
                          r"|\[OpenClaw heartbeat poll\])|HEARTBEAT\.md|HEARTBEAT_OK", "last_user"),
    SideRule("memory_flush", rf"^\s*{OPENCLAW_ENVELOPE}Pre-compaction memory flush\.|Save important context from "
                             r"this session to the daily memory file\.\s*STRICT RULES:", "last_user"),
    SideRule("memory_flush", r"Pre-compaction memory flush turn\.", "system"),
    SideRule("compaction", r"^\s*You are a context summarization assistant\.", "system"),
    SideRule("compaction", r"^\s*<conversation>\n", "last_user"),
    SideRule("slug", r"Based on this conversation, generate a short 1-2 word filename slug", "last_user"),
    SideRule("title", r"Generate a concise session title \(3-6 words, max 60 characters\)", "last_user"),
)
#: OpenClaw's ``EMPTY_RESPONSE_RETRY_INSTRUCTION`` (after its time envelope)
EMPTY_ANSWER_RETRY = re.compile(rf"^\s*{OPENCLAW_ENVELOPE}The previous attempt did not produce a user-visible answer\.")
DEFAULT_CONTEXT_PATTERNS = (
    r"<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>>.*?<<<END_OPENCLAW_INTERNAL_CONTEXT>>>",
    r"(?m)^Runtime: agent=.*$",
)


def _text(m: Mapping) -> str:
    c = m.get("content")
    if isinstance(c, list):
        return "".join(p.get("text", "") for p in c if isinstance(p, Mapping))
    return c or ""


@dataclass(frozen=True)
class TurnRules:
    """Side-turn rules plus next-state context patterns (immutable)."""

    side_rules: tuple[SideRule, ...] = DEFAULT_SIDE_RULES
    context_patterns: tuple[str, ...] = DEFAULT_CONTEXT_PATTERNS
    _compiled: tuple = field(default=(), compare=False, repr=False)

    def __post_init__(self):
        object.__setattr__(self, "_compiled", tuple(re.compile(p, re.S) for p in self.context_patterns))

    @classmethod
    def from_file(cls, path: str | Path, context_patterns: Sequence[str] = DEFAULT_CONTEXT_PATTERNS) -> "TurnRules":
        """Load side rules from a JSON file (see module doc).

        Raises:
            ValueError: unreadable file or malformed rule (message names the file).
        """
        try:
            raw = json.loads(Path(path).read_text())
            rules = tuple(SideRule(**r) for r in raw)
        except (OSError, ValueError, TypeError) as exc:  # ValueError: bad JSON, regex or 'where'
            raise ValueError(f"--side-turn-rules {path}: {exc}") from exc
        return cls(side_rules=rules, context_patterns=tuple(context_patterns))

    def side_reason(self, messages: Sequence[Mapping]) -> str | None:
        """Name of the first matching side rule, or None (a main turn). An OpenClaw empty-answer
        retry (:data:`EMPTY_ANSWER_RETRY`) is classified by the messages before it (the run it
        retries)."""
        last = next((i for i in range(len(messages) - 1, -1, -1) if messages[i].get("role") == "user"
                     and self.strip_context(_text(messages[i])).strip()), None)
        if last is not None and EMPTY_ANSWER_RETRY.search(self.strip_context(_text(messages[last]))):
            return self.side_reason(messages[:last])
        last_user = messages[last] if last is not None else None
        for rule in self.side_rules:
            if rule.where == "last_user":
                pool = [last_user] if last_user else []
            elif rule.where == "system":
                pool = [m for m in messages if m.get("role") in ("system", "developer")]
            else:
                pool = list(messages)
            if any(re.search(rule.pattern, self.strip_context(_text(m))) for m in pool):
                return rule.name
        return None

    def strip_context(self, text: str) -> str:
        """Remove client-injected context (see ``context_patterns``) from a message text."""
        for rx in self._compiled:
            text = rx.sub("", text)
        return text
