"""Real OpenClaw history as a text fixture, and back into OpenClaw's own store format.

``tests/fixtures/openclaw-history/`` holds what ``openclaw@2026.9.6`` wrote while the real agent
(``openclaw agent --local``, see :func:`tests.openclaw_agent.harness.run_openclaw_local`) talked to
our server on the tiny tool model: the agent store's schema (``agent-store-schema.sql``, SQLite's
own text of the read tables and their indexes) and the rows of the tables the importer reads
(``agent-store-rows.json``; a zstd-compressed event as base64; of the runtime events only each
run's ``session.started``). :func:`build_agent_store` rebuilds an ``openclaw-agent.sqlite`` from
them, so the importer's tests read OpenClaw's real format without a binary file in the repository. ``bundle/`` is the trajectory bundle ``openclaw sessions
export-trajectory`` wrote for the tool session: its ``manifest.json`` and ``session-branch.json``,
and of its ``events.jsonl`` the run's ``session.started`` line (the manifest still lists the
files and sizes of the whole export). Regenerate the store's files with::

    python -m tests.support.openclaw_history <state dir> tests/fixtures/openclaw-history
"""

from __future__ import annotations

import base64
import json
import sqlite3
import sys
from pathlib import Path

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "openclaw-history"
#: the tables the importer reads, in insert order
TABLES = ("schema_meta", "session_windows", "transcript_events", "session_transcript_active_events",
          "trajectory_runtime_events")


def _octet_length(value):
    """SQLite 3.43's ``octet_length`` (the store's CHECK constraints use it; Python's SQLite may be older)."""
    return None if value is None else len(value if isinstance(value, bytes) else str(value).encode("utf-8"))


def build_agent_store(path: Path, rows: dict | None = None, schema: str | None = None) -> Path:
    """Write an OpenClaw agent store at ``path`` from the fixture's schema and rows (or the given ones).

    ``rows``: ``table -> [row dict]``; a ``bytes`` column value is given as ``{"base64": ...}``.
    Returns ``path``.
    """
    schema = schema if schema is not None else (FIXTURE / "agent-store-schema.sql").read_text()
    rows = rows if rows is not None else load_rows()
    path.parent.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(path)
    db.create_function("octet_length", 1, _octet_length, deterministic=True)
    db.executescript(schema)
    for table in TABLES:
        for row in rows.get(table, []):
            cols = list(row)
            values = [base64.b64decode(v["base64"]) if isinstance(v, dict) else v for v in row.values()]
            db.execute(f"INSERT INTO {table}({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})", values)
    db.commit()
    db.close()
    return path


def load_rows() -> dict:
    """The fixture's rows (``table -> [row dict]``)."""
    return json.loads((FIXTURE / "agent-store-rows.json").read_text())


def dump_state(state_dir: Path, out: Path) -> None:
    """Write the ``main`` agent store of ``state_dir`` as the fixture's two files in ``out``."""
    store = state_dir / "agents" / "main" / "agent" / "openclaw-agent.sqlite"
    src = sqlite3.connect(f"file:{store}?mode=ro", uri=True)
    db = sqlite3.connect(":memory:")
    src.backup(db)
    src.close()
    db.row_factory = sqlite3.Row
    marks = ", ".join("?" * len(TABLES))
    schema = ";\n".join(r[0] for r in db.execute(  # the read tables and their indexes (no triggers: they touch others)
        f"SELECT sql FROM sqlite_master WHERE sql IS NOT NULL AND type IN ('table', 'index') AND tbl_name IN ({marks}) "
        "ORDER BY rowid", TABLES)) + ";\n"
    rows = {t: [{k: ({"base64": base64.b64encode(r[k]).decode()} if isinstance(r[k], bytes) else r[k])
                 for k in r.keys()} for r in db.execute(f"SELECT * FROM {t}")] for t in TABLES}
    # of the runtime events the importer reads only each run's start (its trigger); the others hold
    # the whole prompt, tool list and install paths
    rows["trajectory_runtime_events"] = [r for r in rows["trajectory_runtime_events"]
                                         if json.loads(r["event_json"]).get("type") == "session.started"]
    out.mkdir(parents=True, exist_ok=True)
    (out / "agent-store-schema.sql").write_text(schema)
    (out / "agent-store-rows.json").write_text(json.dumps(rows, indent=1, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    dump_state(Path(sys.argv[1]), Path(sys.argv[2]))
