"""The stored form of a turn: the vocabularies, the table declarations and :class:`TurnRecord`.

Every column of the store is declared once (:data:`TABLES`); the ``CREATE TABLE`` statements
(:data:`SCHEMA`), the in-place migration of columns added after the first release
(:func:`migrations`), the ``INSERT`` of a new turn (:func:`insert_turn_sql`) and the mapping of a
row back to a :class:`TurnRecord` (:func:`row_to_record`) are all derived from it.
"""

from __future__ import annotations

import enum
import json
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = ["ADDED_COLUMNS", "AFTER_MIGRATIONS", "AWAITING_NEXT", "CLAIMED", "JUDGED", "JUDGING", "READY", "SCHEMA", "SIDE", "SKIPPED",
           "TABLES", "TRAINED", "TURN_COLUMNS", "Column", "Table", "TurnRecord", "TurnStatus", "TurnType", "dumps",
           "insert_turn_sql", "migrations", "row_to_record", "turn_insert_values"]


class TurnType(enum.StrEnum):
    """A turn is ``main`` (trainable: the agent answering its user) or ``side`` (housekeeping,
    evaluation, generate-hook requests: stored, never trained)."""

    MAIN = "main"
    SIDE = "side"


class TurnStatus(enum.StrEnum):
    """Life cycle of a stored turn: main turns go ``awaiting_next -> ready -> judging -> judged |
    skipped`` (not trainable: verdict 0, no next state) ``-> claimed -> trained``, or ``claimed ->
    held_out`` (kept from training for the promotion gate, :mod:`slime.guards.promotion`); side turns stay
    ``side``."""

    AWAITING_NEXT = "awaiting_next"
    READY = "ready"
    JUDGING = "judging"
    JUDGED = "judged"
    SKIPPED = "skipped"
    CLAIMED = "claimed"
    TRAINED = "trained"
    HELD_OUT = "held_out"
    SIDE = "side"


# the statuses under their short names (the store's and callers' spelling)
AWAITING_NEXT, READY, CLAIMED, TRAINED, SIDE = (TurnStatus.AWAITING_NEXT, TurnStatus.READY, TurnStatus.CLAIMED,
                                                 TurnStatus.TRAINED, TurnStatus.SIDE)
JUDGING, JUDGED, SKIPPED, HELD_OUT = TurnStatus.JUDGING, TurnStatus.JUDGED, TurnStatus.SKIPPED, TurnStatus.HELD_OUT


@dataclass(frozen=True)
class Column:
    """One column.

    name: SQL name. sql: type and constraints. attr: the :class:`TurnRecord` attribute it maps
    to (None: store bookkeeping only, never on the record). codec: how the attribute is stored
    (``json`` text, ``bool`` as 0/1, else as is). added: added after the first release (an older
    database gets it with ``ALTER TABLE ... ADD COLUMN``). inserted: written when a turn is added.
    """

    name: str
    sql: str
    attr: str | None = None
    codec: Literal["plain", "json", "bool"] = "plain"
    added: bool = False
    inserted: bool = True


@dataclass(frozen=True)
class Table:
    """A table: its columns and extra ``CREATE`` statements (indexes)."""

    name: str
    columns: tuple[Column, ...]
    indexes: tuple[str, ...] = ()

    def create_sql(self) -> str:
        """``CREATE TABLE IF NOT EXISTS`` plus the indexes."""
        cols = ",\n    ".join(f"{c.name} {c.sql}" for c in self.columns)
        return "\n".join([f"CREATE TABLE IF NOT EXISTS {self.name} (\n    {cols}\n);", *self.indexes])


_TURN_TYPES = ", ".join(f"'{t.value}'" for t in TurnType)

TURN_COLUMNS: tuple[Column, ...] = (
    Column("id", "INTEGER PRIMARY KEY AUTOINCREMENT", "id", inserted=False),
    Column("turn_uid", "TEXT NOT NULL UNIQUE", "turn_uid"),
    Column("session_id", "TEXT NOT NULL REFERENCES sessions(session_id)", "session_id"),
    Column("turn_index", "INTEGER NOT NULL", "turn_index"),
    Column("turn_type", f"TEXT NOT NULL CHECK (turn_type IN ({_TURN_TYPES}))", "turn_type"),
    Column("status", "TEXT NOT NULL", "status"),
    Column("created_at", "REAL NOT NULL", "created_at"),
    Column("model", "TEXT", "model"),
    Column("messages_json", "TEXT NOT NULL", "messages", "json"),
    Column("tools_json", "TEXT", "tools", "json"),
    Column("prompt_text", "TEXT NOT NULL", "prompt_text"),
    Column("prompt_ids", "TEXT NOT NULL", "prompt_ids", "json"),
    Column("response_ids", "TEXT NOT NULL", "response_ids", "json"),
    Column("response_logprobs", "TEXT NOT NULL", "response_logprobs", "json"),
    Column("response_text", "TEXT NOT NULL", "response_text"),
    Column("reasoning_content", "TEXT", "reasoning_content"),
    Column("tool_calls_json", "TEXT", "tool_calls", "json"),
    Column("finish_reason", "TEXT NOT NULL", "finish_reason"),
    Column("weight_version", "INTEGER NOT NULL", "weight_version"),
    Column("next_state", "TEXT", "next_state"),
    Column("next_state_role", "TEXT", "next_state_role"),
    Column("next_state_at", "REAL", inserted=False),
    Column("prefix_ok", "INTEGER", "prefix_ok", "bool"),
    Column("prefix_break_at", "INTEGER", "prefix_break_at"),
    Column("side_reason", "TEXT", "side_reason"),
    Column("claimed_by", "TEXT", inserted=False),
    Column("claimed_at", "REAL", inserted=False),
    Column("temperature", "REAL", "temperature", added=True),
    Column("top_p", "REAL", "top_p", added=True),
    Column("trained_step", "INTEGER", added=True, inserted=False),
    Column("constrained", "INTEGER", "constrained", "bool", added=True),
    Column("ids_from_text", "INTEGER", "ids_from_text", "bool", added=True),
    Column("images_json", "TEXT", "images", "json", added=True),
    # the chat completion's ``id`` the client got (``chatcmpl-...``): explicit feedback names it
    Column("completion_id", "TEXT", "completion_id", added=True),
    Column("trained_at", "REAL", added=True, inserted=False),
    # a history turn's place in the training queue (1 = judged and trained first; the most recent
    # first), set when a run loads --history-path (openclaw_rl.rollout.history); None for live turns
    Column("history_rank", "INTEGER", "history_rank", added=True, inserted=False),
)

TABLES: tuple[Table, ...] = (
    Table("sessions", (Column("session_id", "TEXT PRIMARY KEY"), Column("source", "TEXT NOT NULL"),
                       Column("created_at", "REAL NOT NULL"), Column("last_activity", "REAL NOT NULL"),
                       Column("closed", "INTEGER NOT NULL DEFAULT 0"))),
    Table("turns", TURN_COLUMNS, ("CREATE INDEX IF NOT EXISTS turns_session ON turns(session_id, turn_index);",
                                  "CREATE INDEX IF NOT EXISTS turns_status ON turns(status, id);")),
    Table("judgements", (Column("turn_id", "INTEGER PRIMARY KEY REFERENCES turns(id)"),
                         Column("method", "TEXT NOT NULL"), Column("reward", "REAL"),
                         Column("trainable", "INTEGER NOT NULL"), Column("details_json", "TEXT"),
                         Column("created_at", "REAL NOT NULL"))),
    Table("continuations", (Column("fingerprint", "TEXT PRIMARY KEY"), Column("session_id", "TEXT NOT NULL"),
                            Column("turn_id", "INTEGER NOT NULL"))),
    # the weight versions the server served (openclaw_rl.server.versions)
    Table("weight_versions", (Column("version", "INTEGER PRIMARY KEY"), Column("model_path", "TEXT NOT NULL"),
                              Column("served_at", "REAL NOT NULL"), Column("gate_json", "TEXT"),
                              Column("status", "TEXT NOT NULL"))),
    # a person's explicit rating of a main turn (openclaw_rl.capture.feedback): overrides the judge's
    # vote when the turn is trained; a correction becomes the turn's hint
    Table("feedback", (Column("turn_id", "INTEGER PRIMARY KEY REFERENCES turns(id)"),
                       Column("rating", "INTEGER NOT NULL CHECK (rating IN (-1, 1))"),
                       Column("correction", "TEXT"), Column("created_at", "REAL NOT NULL"),
                       Column("status_at_rating", "TEXT NOT NULL"), Column("applied_step", "INTEGER"))),
    # lessons: accepted hindsight hints, de-duplicated (openclaw_rl.capture.lessons); a deleted one
    # keeps its row (``deleted`` = 1, text emptied) so the same hint arriving again stays deleted
    Table("lessons", (Column("id", "INTEGER PRIMARY KEY AUTOINCREMENT"), Column("key", "TEXT NOT NULL UNIQUE"),
                      Column("text", "TEXT NOT NULL"), Column("created_at", "REAL NOT NULL"),
                      Column("updated_at", "REAL NOT NULL"), Column("edited", "INTEGER NOT NULL DEFAULT 0"),
                      Column("deleted", "INTEGER NOT NULL DEFAULT 0"))),
    # forgotten sessions (openclaw_rl.capture.forget): the SHA-256 of the session id, never the id, and
    # when; a turn of one whose request started before that is not recorded (it was in flight)
    Table("forgotten", (Column("session_key", "TEXT PRIMARY KEY"), Column("forgotten_at", "REAL NOT NULL"))),
    # one row once the live traffic of a run ended (a benchmark's simulated users are done): a
    # trainer waiting for judged turns stops once the recorded ones are used up
    # (TrajectoryStore.end_live_traffic, openclaw_rl.rollout.data_source.TrafficEnded)
    Table("live_traffic", (Column("id", "INTEGER PRIMARY KEY CHECK (id = 1)"), Column("ended_at", "REAL NOT NULL"))),
    Table("lesson_sources", (Column("lesson_id", "INTEGER NOT NULL REFERENCES lessons(id)"),
                             Column("turn_id", "INTEGER NOT NULL REFERENCES turns(id)")),
          ("CREATE UNIQUE INDEX IF NOT EXISTS lesson_sources_pair ON lesson_sources(lesson_id, turn_id);",
           "CREATE INDEX IF NOT EXISTS lesson_sources_turn ON lesson_sources(turn_id);")),
)

#: statements run after the in-place migrations (indexes on columns an older database gets then)
AFTER_MIGRATIONS = ("CREATE INDEX IF NOT EXISTS turns_completion ON turns(completion_id)",)

#: the whole schema, derived from :data:`TABLES`
SCHEMA = "\n".join(t.create_sql() for t in TABLES)
#: turn columns added after the first release, ``name -> SQL type`` (migrated in place on open)
ADDED_COLUMNS = {c.name: c.sql for c in TURN_COLUMNS if c.added}


def migrations(table: str, have: Iterable[str]) -> list[str]:
    """``ALTER TABLE`` statements adding the declared ``added`` columns of ``table`` missing from
    ``have`` (the column names an existing database has)."""
    have = set(have)
    (decl,) = [t for t in TABLES if t.name == table]
    return [f"ALTER TABLE {table} ADD COLUMN {c.name} {c.sql}" for c in decl.columns if c.added and c.name not in have]


@dataclass
class TurnRecord:
    """One served turn, as stored (see :data:`TURN_COLUMNS` for the columns)."""

    session_id: str
    turn_type: TurnType
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
    #: sampled under a grammar (``tool_choice`` required / named): the logprobs are the
    #: constrained distribution's, not the policy's
    constrained: bool | None = None
    #: the ids were made from text with the chat template (an imported turn without ids), not
    #: sampled: there are no sampling logprobs (``response_logprobs`` is empty)
    ids_from_text: bool | None = None
    #: the prompt's images in prompt order, ``[{"sha256", "media_type", "data_b64"}]`` (the bytes
    #: the client sent; ``messages`` refer to them by ``sha256``), None for a text prompt; the
    #: trained sample's ``pixel_values`` are rebuilt from them (:mod:`openclaw_rl.capture.images`)
    images: list[dict] | None = None
    #: the chat completion ``id`` the client received (None for imported turns)
    completion_id: str | None = None
    #: a history turn's place in the queue (:mod:`openclaw_rl.rollout.history`); None: a live turn
    history_rank: int | None = None
    # filled by the store
    id: int | None = None
    turn_index: int | None = None
    status: TurnStatus | None = None
    created_at: float | None = None
    next_state: str | None = None
    next_state_role: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        """Normalise ``turn_type`` / ``status`` to their enums; ``ValueError`` for another value."""
        self.turn_type = TurnType(self.turn_type)
        if self.status is not None:
            self.status = TurnStatus(self.status)

    @property
    def trainable(self) -> bool:
        """Main turns are trainable; side turns never are."""
        return self.turn_type == TurnType.MAIN


def dumps(obj) -> str | None:
    """JSON text of ``obj`` (None stays None)."""
    return None if obj is None else json.dumps(obj, ensure_ascii=False)


_INSERTED = tuple(c for c in TURN_COLUMNS if c.inserted)


def insert_turn_sql() -> str:
    """``INSERT INTO turns(<inserted columns>) VALUES (?, ...)``."""
    return (f"INSERT INTO turns({', '.join(c.name for c in _INSERTED)}) "
            f"VALUES ({', '.join('?' for _ in _INSERTED)})")


def _encode(c: Column, value: Any) -> Any:
    if c.codec == "json":
        return dumps(value)
    if c.codec == "bool":
        return None if value is None else int(value)
    return value


def turn_insert_values(rec: TurnRecord) -> tuple:
    """The values of :func:`insert_turn_sql` for ``rec``, in column order."""
    return tuple(_encode(c, getattr(rec, c.attr)) for c in _INSERTED)  # type: ignore[arg-type]


def _decode(c: Column, value: Any) -> Any:
    if value is None:
        return None
    if c.codec == "json":
        return json.loads(value)
    if c.codec == "bool":
        return bool(value)
    return value


def row_to_record(row: sqlite3.Row) -> TurnRecord:
    """A ``turns`` row as a :class:`TurnRecord` (every column with an ``attr``)."""
    return TurnRecord(**{c.attr: _decode(c, row[c.name]) for c in TURN_COLUMNS if c.attr is not None})
