"""The stored form of a turn: the SQLite schema, the status names and :class:`TurnRecord`."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass, field
from typing import Any

SCHEMA = """
CREATE TABLE IF NOT EXISTS sessions (
    session_id TEXT PRIMARY KEY,
    source TEXT NOT NULL,
    created_at REAL NOT NULL,
    last_activity REAL NOT NULL,
    closed INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS turns (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    turn_uid TEXT NOT NULL UNIQUE,
    session_id TEXT NOT NULL REFERENCES sessions(session_id),
    turn_index INTEGER NOT NULL,
    turn_type TEXT NOT NULL CHECK (turn_type IN ('main', 'side')),
    status TEXT NOT NULL,
    created_at REAL NOT NULL,
    model TEXT,
    messages_json TEXT NOT NULL,
    tools_json TEXT,
    prompt_text TEXT NOT NULL,
    prompt_ids TEXT NOT NULL,
    response_ids TEXT NOT NULL,
    response_logprobs TEXT NOT NULL,
    response_text TEXT NOT NULL,
    reasoning_content TEXT,
    tool_calls_json TEXT,
    finish_reason TEXT NOT NULL,
    weight_version INTEGER NOT NULL,
    next_state TEXT,
    next_state_role TEXT,
    next_state_at REAL,
    prefix_ok INTEGER,
    prefix_break_at INTEGER,
    side_reason TEXT,
    claimed_by TEXT,
    claimed_at REAL,
    temperature REAL,
    top_p REAL,
    trained_step INTEGER
);
CREATE INDEX IF NOT EXISTS turns_session ON turns(session_id, turn_index);
CREATE INDEX IF NOT EXISTS turns_status ON turns(status, id);
CREATE TABLE IF NOT EXISTS judgements (
    turn_id INTEGER PRIMARY KEY REFERENCES turns(id),
    method TEXT NOT NULL,
    reward REAL,
    trainable INTEGER NOT NULL,
    details_json TEXT,
    created_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS continuations (
    fingerprint TEXT PRIMARY KEY,
    session_id TEXT NOT NULL,
    turn_id INTEGER NOT NULL
);
"""

#: statuses of a turn's life cycle: main turns go awaiting_next -> ready -> judging ->
#: judged | skipped (not trainable: verdict 0, no next state) -> claimed -> trained.
AWAITING_NEXT, READY, CLAIMED, TRAINED, SIDE = "awaiting_next", "ready", "claimed", "trained", "side"
JUDGING, JUDGED, SKIPPED = "judging", "judged", "skipped"
#: columns added after the first release, migrated in place on open
ADDED_COLUMNS = {"temperature": "REAL", "top_p": "REAL", "trained_step": "INTEGER"}


@dataclass
class TurnRecord:
    """One served turn, as stored (see the ``turns`` table for the columns)."""

    session_id: str
    turn_type: str
    messages: list[dict]
    prompt_text: str
    prompt_ids: list[int]
    response_ids: list[int]
    response_logprobs: list[float]
    response_text: str
    finish_reason: str
    weight_version: int
    turn_uid: str = ""
    tools: list[dict] | None = None
    reasoning_content: str | None = None
    tool_calls: list[dict] | None = None
    model: str | None = None
    prefix_ok: bool | None = None
    prefix_break_at: int | None = None
    side_reason: str | None = None
    temperature: float | None = None
    top_p: float | None = None
    # filled by the store
    id: int | None = None
    turn_index: int | None = None
    status: str | None = None
    created_at: float | None = None
    next_state: str | None = None
    next_state_role: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def trainable(self) -> bool:
        """Main turns are trainable; side turns never are."""
        return self.turn_type == "main"


def dumps(obj) -> str | None:
    """JSON text of ``obj`` (None stays None)."""
    return None if obj is None else json.dumps(obj, ensure_ascii=False)


def row_to_record(row: sqlite3.Row) -> TurnRecord:
    """A ``turns`` row as a :class:`TurnRecord`."""
    loads = lambda s: None if s is None else json.loads(s)  # noqa: E731
    return TurnRecord(
        id=row["id"], turn_uid=row["turn_uid"], session_id=row["session_id"],
        turn_index=row["turn_index"], turn_type=row["turn_type"], status=row["status"],
        created_at=row["created_at"], model=row["model"], messages=loads(row["messages_json"]),
        tools=loads(row["tools_json"]), prompt_text=row["prompt_text"],
        prompt_ids=loads(row["prompt_ids"]), response_ids=loads(row["response_ids"]),
        response_logprobs=loads(row["response_logprobs"]), response_text=row["response_text"],
        reasoning_content=row["reasoning_content"], tool_calls=loads(row["tool_calls_json"]),
        finish_reason=row["finish_reason"], weight_version=row["weight_version"],
        next_state=row["next_state"], next_state_role=row["next_state_role"],
        prefix_ok=None if row["prefix_ok"] is None else bool(row["prefix_ok"]),
        prefix_break_at=row["prefix_break_at"], side_reason=row["side_reason"],
        temperature=row["temperature"], top_p=row["top_p"])
