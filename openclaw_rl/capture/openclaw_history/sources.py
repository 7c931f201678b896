"""Read OpenClaw's session history: the agent SQLite store, legacy JSONL transcripts, trajectory bundles.

Each reader returns :class:`HistorySession` records (the active branch of one session's transcript,
plus the trigger of each run) and one-line problems for the sessions it could not read; nothing is
written anywhere. Formats and versions are those of ``openclaw@2026.9.6`` (see the package doc):

* a store whose ``schema_meta`` names another schema version, a transcript header with another
  ``version`` or a bundle with another ``traceSchema`` / ``schemaVersion`` raises
  :class:`HistoryVersionError` (the whole import stops before anything is written: never a silent
  partial import of a format this reader does not know);
* a locked or corrupt store is one problem for that agent, a transcript with a bad line or a
  corrupt event one problem for that session; the other agents and sessions are read.

The store is read without taking a lock a writer would wait on: it is opened read-only
(``mode=ro``, a 2 s busy timeout) and copied with SQLite's online backup into memory, so a running
gateway keeps writing (a WAL reader never blocks the writer) and the copy includes the committed
write-ahead log.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from urllib.parse import quote

import zstandard

__all__ = ["BUNDLE_SCHEMA_VERSIONS", "STORE_SCHEMA_VERSIONS", "TRANSCRIPT_VERSIONS", "HistorySession",
           "HistoryVersionError", "ReadResult", "SessionReadError", "active_branch", "read_bundle",
           "read_jsonl", "read_state_dir", "read_store"]

#: ``schema_meta.schema_version`` of the agent stores this reader knows (openclaw 2026.9.6 writes 23)
STORE_SCHEMA_VERSIONS = (23,)
#: ``version`` of the transcript's ``{"type": "session"}`` header (2026.9.6 writes 4)
TRANSCRIPT_VERSIONS = (4,)
#: ``schemaVersion`` of an ``openclaw-trajectory`` bundle (2026.9.6 writes 1)
BUNDLE_SCHEMA_VERSIONS = (1,)
STORE_NAME = "openclaw-agent.sqlite"
_MAX_EVENT_BYTES = 4 * 1024 * 1024  # the store's own CHECK bound on one event


class HistoryVersionError(ValueError):
    """A store, transcript or bundle in a format version this reader does not know (one line)."""


class SessionReadError(ValueError):
    """One session (or one agent's store) could not be read; the message names where and why."""


@dataclass
class HistorySession:
    """One OpenClaw session as read from its history.

    Attributes:
        session_id: OpenClaw's session id (the ``sessionId=`` of its runtime line, the live capture's
            session id for the same conversation).
        session_key: OpenClaw's session key (``agent:main:...``), None when the source has none.
        agent_id: the agent that owns it.
        origin: where it was read (store path, transcript file or bundle folder).
        entries: the transcript events of the active branch, oldest first (the header excluded).
        triggers: ``run id -> trigger`` from each run's ``session.started`` runtime event (empty
            for a legacy transcript, which has no runtime events).
    """

    session_id: str
    session_key: str | None
    agent_id: str
    origin: str
    entries: list[dict]
    triggers: dict[str, str] = field(default_factory=dict)

    def times(self) -> tuple[float | None, float | None]:
        """``(first, last)`` event time as UNIX seconds (None when no event has a timestamp)."""
        stamps = [t for t in (_event_time(e) for e in self.entries) if t is not None]
        return (min(stamps), max(stamps)) if stamps else (None, None)


@dataclass
class ReadResult:
    """What a reader found: the sessions, and one line per session (or store) it had to skip."""

    sessions: list[HistorySession] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def extend(self, other: "ReadResult") -> None:
        """Append ``other``'s sessions and problems."""
        self.sessions += other.sessions
        self.problems += other.problems


def _event_time(event: dict) -> float | None:
    stamp = event.get("timestamp")
    if isinstance(stamp, str):
        try:
            return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
        except ValueError:
            return None
    return None


def _branch(entries: list[dict], leaf_id: str | None, where: str) -> list[dict]:
    """:func:`active_branch`, its error naming ``where``."""
    try:
        return active_branch(entries, leaf_id)
    except SessionReadError as exc:
        raise SessionReadError(f"{where}: {exc}") from exc


def active_branch(entries: list[dict], leaf_id: str | None = None) -> list[dict]:
    """The entries on the path from the root to ``leaf_id`` (default: the last entry with an id).

    OpenClaw's transcript is a tree: each entry names its ``parentId``; a rewind starts a new
    branch from an older entry. Entries without an id are dropped.

    Raises:
        SessionReadError: the leaf is unknown, or the parent chain loops.
    """
    by_id = {e["id"]: e for e in entries if isinstance(e.get("id"), str)}
    if not by_id:
        return []
    if leaf_id is None:
        leaf_id = next(e["id"] for e in reversed(entries) if isinstance(e.get("id"), str))
    if leaf_id not in by_id:
        raise SessionReadError(f"the active leaf {leaf_id} is not among the session's entries")
    path, seen, node = [], set(), by_id.get(leaf_id)
    while node is not None:
        if node["id"] in seen:
            raise SessionReadError(f"the transcript's parent chain loops at entry {node['id']}")
        seen.add(node["id"])
        path.append(node)
        node = by_id.get(node.get("parentId"))
    return path[::-1]


def _check_header(header: dict, where: str) -> str:
    """The session id of a transcript header; :class:`HistoryVersionError` for an unknown version."""
    if header.get("type") != "session" or not isinstance(header.get("id"), str):
        raise SessionReadError(f"{where}: the first event is not a session header")
    if header.get("version") not in TRANSCRIPT_VERSIONS:
        raise HistoryVersionError(f"{where}: OpenClaw transcript version {header.get('version')!r}; this importer "
                                  f"reads version {', '.join(map(str, TRANSCRIPT_VERSIONS))} (openclaw 2026.9.6)")
    return header["id"]


# ---------------------------------------------------------------------------------------------- store
def _snapshot(path: Path) -> sqlite3.Connection:
    """An in-memory copy of the database at ``path``, read without blocking its writer."""
    src = sqlite3.connect(f"file:{quote(str(path))}?mode=ro", uri=True, timeout=2.0, isolation_level=None)
    try:
        # take the read lock first, within the busy timeout: the backup itself retries a locked
        # source for ever; inside this read transaction it copies one consistent snapshot
        src.execute("BEGIN")
        src.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
        mem = sqlite3.connect(":memory:")
        src.backup(mem)
        src.execute("COMMIT")
    finally:
        src.close()
    return mem


def _decode_event(row: tuple, where: str) -> dict:
    seq, text, blob, size = row
    try:
        if text is None:
            if blob is None or not size or size > _MAX_EVENT_BYTES:
                raise ValueError("no event body")
            text = zstandard.ZstdDecompressor().decompress(blob, max_output_size=size).decode("utf-8")
        event = json.loads(text)
    except (ValueError, zstandard.ZstdError) as exc:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        raise SessionReadError(f"{where}: event {seq} is corrupt ({exc})") from exc
    if not isinstance(event, dict):
        raise SessionReadError(f"{where}: event {seq} is not a JSON object")
    return event


def _store_version(db: sqlite3.Connection, path: Path) -> str | None:
    """The agent id the store names; :class:`HistoryVersionError` for another schema version."""
    try:
        row = db.execute("SELECT role, schema_version, agent_id, app_version FROM schema_meta "
                         "WHERE meta_key='primary'").fetchone()
    except sqlite3.OperationalError as exc:
        raise SessionReadError(f"{path}: not an OpenClaw agent store ({exc})") from exc
    if row is None or row[0] != "agent":
        raise SessionReadError(f"{path}: not an OpenClaw agent store (no primary agent schema row)")
    if row[1] not in STORE_SCHEMA_VERSIONS:
        raise HistoryVersionError(f"{path}: OpenClaw agent store schema version {row[1]} (written by OpenClaw "
                                  f"{row[3] or 'unknown'}); this importer reads version "
                                  f"{', '.join(map(str, STORE_SCHEMA_VERSIONS))} (openclaw 2026.9.6)")
    return row[2]


def _triggers(rows) -> dict[str, str]:
    out = {}
    for (text,) in rows:
        try:
            event = json.loads(text)
        except ValueError:
            continue  # a runtime event is advisory: the transcript still imports
        if isinstance(event, dict) and event.get("type") == "session.started" and event.get("runId"):
            trigger = (event.get("data") or {}).get("trigger")
            if isinstance(trigger, str):
                out[event["runId"]] = trigger
    return out


def read_store(path: str | Path, agent_id: str | None = None) -> ReadResult:
    """Every session of one agent store (``openclaw-agent.sqlite``).

    Args:
        path: the store file.
        agent_id: the agent's id (default: the one the store names, else its folder's name).

    Returns:
        The sessions; a locked or corrupt store is one problem (no sessions), a corrupt session
        one problem each.

    Raises:
        HistoryVersionError: the store's schema version is not one this reader knows.
    """
    path = Path(path)
    try:
        db = _snapshot(path)
    except sqlite3.DatabaseError as exc:
        why = "locked by another process" if "locked" in str(exc) else "not a readable SQLite database"
        return ReadResult(problems=[f"{path}: {why} ({exc}); its sessions are skipped"])
    try:
        try:
            named = _store_version(db, path)
        except SessionReadError as exc:
            return ReadResult(problems=[f"{exc}; its sessions are skipped"])
        agent = agent_id or named or path.parent.parent.name
        return _store_sessions(db, path, agent)
    except sqlite3.DatabaseError as exc:
        return ReadResult(problems=[f"{path}: not a readable SQLite database ({exc}); its sessions are skipped"])
    finally:
        db.close()


def _store_sessions(db: sqlite3.Connection, path: Path, agent: str) -> ReadResult:
    out = ReadResult()
    keys = dict(db.execute("SELECT session_id, session_key FROM session_windows"))
    for (sid,) in db.execute("SELECT DISTINCT session_id FROM transcript_events ORDER BY session_id").fetchall():
        where = f"{path} session {sid}"
        try:
            rows = db.execute("SELECT seq, event_json, event_zstd, event_utf8_bytes FROM transcript_events "
                              "WHERE session_id=? ORDER BY seq", (sid,)).fetchall()
            events = [_decode_event(r, where) for r in rows]
            if not events:
                continue
            _check_header(events[0], where)
            leaf = db.execute("SELECT e.event_json, e.event_zstd, e.event_utf8_bytes, e.seq FROM "
                              "session_transcript_active_events a JOIN transcript_events e ON "
                              "e.session_id=a.session_id AND e.seq=a.event_seq WHERE a.session_id=? "
                              "ORDER BY a.active_position DESC LIMIT 1", (sid,)).fetchone()
            leaf_id = _decode_event((leaf[3], *leaf[:3]), where).get("id") if leaf else None
            entries = _branch(events[1:], leaf_id, where)
        except SessionReadError as exc:
            out.problems.append(f"{exc}; session skipped")
            continue
        triggers = _triggers(db.execute("SELECT event_json FROM trajectory_runtime_events WHERE session_id=?",
                                        (sid,)).fetchall())
        out.sessions.append(HistorySession(sid, keys.get(sid), agent, str(path), entries, triggers))
    return out


# ---------------------------------------------------------------------------------------------- JSONL
def _jsonl_events(path: Path) -> list[dict]:
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise SessionReadError(f"{path}: not UTF-8 text ({exc})") from exc
    events = []
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            event = json.loads(line)
        except ValueError as exc:
            raise SessionReadError(f"{path}:{lineno}: truncated or invalid JSON line ({exc})") from exc
        if not isinstance(event, dict):
            raise SessionReadError(f"{path}:{lineno}: an event must be a JSON object")
        events.append(event)
    if not events:
        raise SessionReadError(f"{path}: empty transcript")
    return events


def read_jsonl(path: str | Path, agent_id: str) -> HistorySession:
    """One legacy JSONL transcript (``<state>/agents/<agentId>/sessions/<id>.jsonl``).

    Raises:
        SessionReadError: a bad line (truncated write, not JSON), no session header.
        HistoryVersionError: the header's version is not one this reader knows.
    """
    path = Path(path)
    events = _jsonl_events(path)
    sid = _check_header(events[0], str(path))
    return HistorySession(sid, None, agent_id, str(path), _branch(events[1:], None, str(path)))


# ---------------------------------------------------------------------------------------------- bundle
def read_bundle(path: str | Path) -> HistorySession:
    """One trajectory bundle (the folder ``openclaw sessions export-trajectory`` writes).

    Reads ``manifest.json`` (format and version), ``session-branch.json`` (the active branch, in
    the transcript's own event format) and the run triggers from ``events.jsonl``.

    Raises:
        HistoryVersionError: the manifest names another trace schema or schema version.
        SessionReadError: a missing or unreadable file.
    """
    path = Path(path)
    try:
        manifest = json.loads((path / "manifest.json").read_text(encoding="utf-8"))
        branch = json.loads((path / "session-branch.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise SessionReadError(f"{path}: not a readable OpenClaw trajectory bundle ({exc})") from exc
    schema, version = manifest.get("traceSchema"), manifest.get("schemaVersion")
    if schema != "openclaw-trajectory" or version not in BUNDLE_SCHEMA_VERSIONS:
        raise HistoryVersionError(f"{path}: trajectory bundle {schema!r} schema version {version!r}; this importer "
                                  f"reads 'openclaw-trajectory' version {', '.join(map(str, BUNDLE_SCHEMA_VERSIONS))} "
                                  "(openclaw 2026.9.6)")
    if not isinstance(branch, dict) or not isinstance(branch.get("entries"), list):
        raise SessionReadError(f"{path}/session-branch.json: no 'entries' list")
    sid = _check_header(branch.get("header") or {}, f"{path}/session-branch.json")
    entries = _branch(branch["entries"], branch.get("leafId"), str(path))
    triggers: dict[str, str] = {}
    events_file = path / "events.jsonl"
    if events_file.is_file():
        for event in _jsonl_events(events_file):
            if event.get("source") == "runtime":
                triggers.update(_triggers([(json.dumps(event),)]))
    key = manifest.get("sessionKey")
    agent = key.split(":")[1] if isinstance(key, str) and key.startswith("agent:") and key.count(":") >= 2 else "main"
    return HistorySession(sid, key, agent, str(path), entries, triggers)


# ---------------------------------------------------------------------------------------------- state dir
def read_state_dir(state_dir: str | Path, agent: str | None = None) -> ReadResult:
    """Every session under an OpenClaw state folder (``~/.openclaw`` or ``$OPENCLAW_STATE_DIR``).

    Reads ``agents/<id>/agent/openclaw-agent.sqlite`` and the legacy ``agents/<id>/sessions/*.jsonl``
    of each agent (only ``agent`` when given). A legacy transcript of a session the store also
    holds is skipped (``openclaw doctor`` imported it).

    Raises:
        HistoryVersionError: a store or transcript in an unknown format version.
        SessionReadError: no agent folder (or not ``agent``'s) under ``state_dir``.
    """
    root = Path(state_dir)
    agents_dir = root / "agents"
    if not root.exists():
        raise SessionReadError(f"{root}: no such folder")
    if not root.is_dir():
        raise SessionReadError(f"{root}: not a folder (give OpenClaw's state folder, e.g. ~/.openclaw)")
    if not agents_dir.is_dir():
        raise SessionReadError(f"{root}: no agents/ folder (not an OpenClaw state folder)")
    agent_dirs = sorted(p for p in agents_dir.iterdir() if p.is_dir() and (agent is None or p.name == agent))
    if not agent_dirs:
        raise SessionReadError(f"{root}: no agent {agent!r} under agents/" if agent else f"{root}: agents/ holds no agent")
    out = ReadResult()
    for adir in agent_dirs:
        store = adir / "agent" / STORE_NAME
        found = read_store(store, adir.name) if store.is_file() else ReadResult()
        if store.exists() and not store.is_file():
            found.problems.append(f"{store}: not a file; store skipped")
        known = {s.session_id for s in found.sessions}
        for transcript in sorted((adir / "sessions").glob("*.jsonl")):
            try:
                session = read_jsonl(transcript, adir.name)
            except (SessionReadError, OSError) as exc:  # OSError: a dangling link, a folder named *.jsonl
                kept = transcript.stem in known
                found.problems.append(f"{exc}; " + ("the store's copy of this session is used" if kept
                                                      else "session skipped"))
                continue
            if session.session_id not in known:
                found.sessions.append(session)
        out.extend(found)
    return out
