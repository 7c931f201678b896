"""Training from history: the conversations a person had before this run (``--history-path``,
``HISTORY_PATH`` in the launch scripts, the main job's ``--history``).

What the path may be (:func:`history_kind`), decided by what it holds:

* an **OpenClaw state folder** (``agents/`` inside, e.g. ``~/.openclaw``): every agent's store and
  legacy transcripts, read as ``openclaw-rl import-openclaw --state-dir`` reads them;
* an OpenClaw **trajectory bundle** (``manifest.json`` inside), as ``import-openclaw --bundle``;
* a **trajectory store** (``trajectories.sqlite`` inside): what ``import-openclaw --out`` wrote,
  or another run's buffer (e.g. sessions recorded live by an earlier server). Its sessions are
  copied with their token ids, sampling log-probs, weight versions and times as recorded; when it
  is the run's own buffer, its imported sessions (``import-openclaw``, ``openclaw-rl import``) are
  the history;
* a **session file** (``openclaw-rl export`` / ``import`` format, ``.jsonl`` or ``.json``).

:func:`load_history` brings the sessions into the run's store (idempotent: a session the store
already has is not copied again, one captured live is not counted twice, a forgotten one is never
brought back) and queues their main turns for judging and training: the ``--history-max-turns``
most recent turns not yet judged get a ``history_rank`` (1 = the most recent), which the store's
claims serve first (:meth:`TrajectoryStore.claim_judged`), so the history is judged and trained
before live turns, most recent first; the live turns that arrive meanwhile wait at most
``ceil(max_turns / --rollout-batch-size)`` steps. Older turns beyond the cap are left out of the
run (``skipped``, judgement ``history:over_cap``); a later run ranks them again. A history turn is
never dropped as stale (``--max-staleness`` bounds live turns): its rollout log-probs are the
recorded ones (truncated importance sampling corrects for them, ``--use-tis``), or, for a turn
imported as text, the trainer's own (:mod:`openclaw_rl.capture.text_turns`).

:func:`history_counts` is what the run's summary reports: how many history turns were loaded,
judged, trained, held out for the gate, skipped, and the judges' verdicts.

``python -m openclaw_rl.rollout.history PATH`` checks a path the way the launch scripts do before
they start anything: prints its kind, or one line naming what is wrong (exit 2).
"""

from __future__ import annotations

import json
import logging
import sqlite3
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from openclaw_rl.capture.export import import_sessions, read_session_file
from openclaw_rl.capture.openclaw_history.importer import plan_import, read_sources, write_plan
from openclaw_rl.capture.openclaw_history.sources import HistoryVersionError, SessionReadError
from openclaw_rl.capture.records import READY, SIDE, SKIPPED, TRAINED, TurnType, insert_turn_sql, row_to_record, turn_insert_values
from openclaw_rl.capture.store import HELD_OUT, TrajectoryStore, session_key
from openclaw_rl.capture.turn_rules import TurnRules

__all__ = ["OVER_CAP", "HistoryLoad", "HistoryPathError", "history_counts", "history_kind", "history_line",
           "load_history"]

log = logging.getLogger(__name__)

#: the judgement method of a history turn left out of a run by ``--history-max-turns``
OVER_CAP = "history:over_cap"
#: session sources of the run's own buffer that are history (imported, never captured live)
IMPORTED_SOURCES = ("openclaw-history", "import")


class HistoryPathError(ValueError):
    """``--history-path`` is not something history can be read from (one line naming why)."""


def _is_openclaw_transcript(path: Path) -> bool:
    """Whether ``path`` opens with OpenClaw's transcript header (``{"type": "session", ...}``)."""
    try:
        with path.open(encoding="utf-8", errors="replace") as fh:
            head = json.loads(fh.readline() or "null")
    except (OSError, ValueError):
        return False
    return isinstance(head, dict) and head.get("type") == "session"


def history_kind(path: str | Path) -> str:
    """What ``path`` is: ``"openclaw-state"``, ``"bundle"``, ``"store"`` or ``"sessions"`` (module
    docstring).

    Raises:
        HistoryPathError: it does not exist, or is none of these.
    """
    p = Path(path)
    if p.is_file():
        if p.name == TrajectoryStore.FILENAME:
            return "store"
        if p.suffix in (".jsonl", ".json"):
            if _is_openclaw_transcript(p):
                raise HistoryPathError(f"{path}: an OpenClaw session transcript; give the state folder that holds it "
                                       f"(e.g. ~/.openclaw), which reads every agent's sessions")
            return "sessions"
        raise HistoryPathError(f"{path}: a file that is not a session file (.jsonl/.json, openclaw-rl export) "
                               f"or a trajectory store ({TrajectoryStore.FILENAME})")
    if not p.is_dir():
        raise HistoryPathError(f"{path}: no such file or folder")
    if (p / TrajectoryStore.FILENAME).is_file():
        return "store"
    if (p / "manifest.json").is_file():
        return "bundle"
    if (p / "agents").is_dir():
        return "openclaw-state"
    raise HistoryPathError(f"{path}: not an OpenClaw state folder (no agents/), a trajectory bundle (no "
                           f"manifest.json) or a trajectory store (no {TrajectoryStore.FILENAME})")


@dataclass
class HistoryLoad:
    """What :func:`load_history` did.

    Attributes:
        path / kind: the history and its kind (:func:`history_kind`).
        sessions_added / turns_added: sessions and turns newly written into the run's store.
        turn_ids: the store ids of the main turns queued this run, most recent first.
        over_cap: history turns left out by the cap.
        lines: what the import said (sessions skipped and why, problems), for the log.
    """
    path: str
    kind: str
    sessions_added: int = 0
    turns_added: int = 0
    turn_ids: list[int] = field(default_factory=list)
    over_cap: int = 0
    lines: list[str] = field(default_factory=list)


def _from_openclaw(store: TrajectoryStore, path: str, kind: str, load: HistoryLoad) -> list[str]:
    try:
        found = read_sources(path if kind == "openclaw-state" else None, [path] if kind == "bundle" else [], None)
    except (HistoryVersionError, SessionReadError) as exc:
        raise HistoryPathError(str(exc)) from None
    if kind == "bundle" and not found.sessions and found.problems:
        raise HistoryPathError(found.problems[0])
    plan = plan_import(found, store, TurnRules())
    load.lines += plan.summary()[1:]
    load.sessions_added, load.turns_added = write_plan(store, plan)
    return ([s.session_id for s, _ in plan.sessions] + [s.session_id for s, _, _ in plan.extended]
            + plan.skipped.get("already imported", []))


def _from_store(store: TrajectoryStore, path: str) -> list[str]:
    """Copy the sessions of another store (as recorded); returns the history's session ids."""
    src_dir = Path(path).parent if Path(path).is_file() else Path(path)
    if src_dir.resolve() == store.dir.resolve():  # the run's own buffer: its imported sessions
        marks = ",".join("?" * len(IMPORTED_SOURCES))
        return [r[0] for r in store.read(f"SELECT session_id FROM sessions WHERE source IN ({marks})",
                                         IMPORTED_SOURCES)]
    try:
        src = sqlite3.connect(f"file:{src_dir / TrajectoryStore.FILENAME}?mode=ro", uri=True)
        src.row_factory = sqlite3.Row
        sessions = src.execute("SELECT * FROM sessions ORDER BY created_at, rowid").fetchall()
    except sqlite3.DatabaseError as exc:
        raise HistoryPathError(f"{path}: not a readable trajectory store ({exc})") from None
    ids = []
    try:
        for s in sessions:
            sid = s["session_id"]
            if store.read("SELECT 1 FROM forgotten WHERE session_key=?", (session_key(sid),)):
                continue
            ids.append(sid)
            turns = [row_to_record(r) for r in src.execute("SELECT * FROM turns WHERE session_id=? ORDER BY "
                                                           "turn_index", (sid,))]
            with store.transaction() as db:
                if db.execute("SELECT 1 FROM sessions WHERE session_id=?", (sid,)).fetchone():
                    continue  # already copied (or captured live by this store): never counted twice
                db.execute("INSERT INTO sessions(session_id, source, created_at, last_activity, closed) "
                           "VALUES (?, ?, ?, ?, 1)", (sid, s["source"], s["created_at"], s["last_activity"]))
                for rec in turns:
                    rec.status = READY if rec.turn_type == TurnType.MAIN else SIDE
                    db.execute(insert_turn_sql(), turn_insert_values(rec))
    finally:
        src.close()
    return ids


def _from_session_file(store: TrajectoryStore, path: str, load: HistoryLoad) -> list[str]:
    try:
        parsed = read_session_file(path)
    except ValueError as exc:
        raise HistoryPathError(str(exc)) from None
    load.sessions_added, load.turns_added = import_sessions(store, parsed)
    return [sid for sid, _ in parsed]


def load_history(store: TrajectoryStore, path: str | Path, max_turns: int) -> HistoryLoad:
    """Bring the history at ``path`` into ``store`` and queue its ``max_turns`` most recent main
    turns not yet judged (module docstring); the others are left out of this run.

    Raises:
        HistoryPathError: ``path`` cannot be read as history (one line).
    """
    path = str(path)
    kind = history_kind(path)
    load = HistoryLoad(path, kind)
    if kind in ("openclaw-state", "bundle"):
        sessions = _from_openclaw(store, path, kind, load)
    elif kind == "store":
        before = store.counts()
        sessions = _from_store(store, path)
        after = store.counts()
        load.sessions_added = after["sessions"] - before["sessions"]
        load.turns_added = sum(after.values()) - sum(before.values()) - load.sessions_added
    else:
        sessions = _from_session_file(store, path, load)
    with store.transaction() as db:
        rows = db.execute(
            "SELECT t.id FROM turns t LEFT JOIN judgements j ON j.turn_id = t.id "
            "WHERE t.session_id IN (SELECT value FROM json_each(?)) AND t.turn_type = ? "
            "AND (t.status = ? OR (t.status = ? AND j.method = ?)) ORDER BY t.created_at DESC, t.id DESC",
            (json.dumps(sessions), TurnType.MAIN, READY, SKIPPED, OVER_CAP)).fetchall()
        ids = [r[0] for r in rows]
        load.turn_ids, over = ids[:max_turns], ids[max_turns:]
        db.executemany("DELETE FROM judgements WHERE turn_id=? AND method=?", [(i, OVER_CAP) for i in load.turn_ids])
        db.executemany("UPDATE turns SET status=?, history_rank=?, claimed_by=NULL WHERE id=?",
                       [(READY, rank, i) for rank, i in enumerate(load.turn_ids, 1)])
        db.executemany("INSERT OR REPLACE INTO judgements VALUES (?, ?, NULL, 0, ?, ?)",
                       [(i, OVER_CAP, json.dumps({"history": "over_cap"}), time.time()) for i in over])
        db.executemany("UPDATE turns SET status=?, history_rank=NULL WHERE id=?", [(SKIPPED, i) for i in over])
    load.over_cap = len(over)
    log.warning("history %s (%s): %d new session(s) / %d turn(s) imported; %d main turn(s) queued first, most "
                "recent first%s", path, kind, load.sessions_added, load.turns_added, len(load.turn_ids),
                f"; {load.over_cap} older one(s) left out by --history-max-turns {max_turns}" if over else "")
    for line in load.lines:
        log.warning("history: %s", line)
    return load


def _verdict(reward: float | None, details: dict) -> str:
    v = details.get("verdict")
    if v is None and reward is not None:
        v = (reward > 0) - (reward < 0)
    return {1: "+1", -1: "-1"}.get(v, "0")


def history_counts(store: TrajectoryStore, turn_ids: list[int], over_cap: int = 0) -> dict:
    """What became of the history turns ``turn_ids`` queued by :func:`load_history`.

    Returns:
        ``{"queued", "over_cap", "judged", "trained", "held_out", "skipped", "waiting",
        "verdicts": {"+1", "-1", "0"}}``: ``judged`` counts every turn a judge gave a verdict
        (trainable or not), ``verdicts`` their verdicts (the PRM's, else the reward's sign);
        ``trained`` / ``held_out`` (for the promotion gate) / ``skipped`` (not trainable: verdict 0,
        no next state, or dropped by the data source) / ``waiting`` (not judged or not trained yet)
        add up to ``queued``.
    """
    rows = store.read("SELECT t.status, j.method, j.reward, j.details_json FROM turns t LEFT JOIN judgements j "
                      "ON j.turn_id = t.id WHERE t.id IN (SELECT value FROM json_each(?))", (json.dumps(turn_ids),))
    verdicts = {"+1": 0, "-1": 0, "0": 0}
    out = {"queued": len(turn_ids), "over_cap": over_cap, "judged": 0, "trained": 0, "held_out": 0, "skipped": 0,
           "waiting": 0}
    for status, method, reward, details_json in rows:
        judged = method is not None and not method.startswith("dropped:")
        if judged:
            out["judged"] += 1
            verdicts[_verdict(reward, json.loads(details_json) if details_json else {})] += 1
        out[{TRAINED: "trained", HELD_OUT: "held_out", SKIPPED: "skipped"}.get(status, "waiting")] += 1
    out["verdicts"] = verdicts
    return out


def history_line(counts: dict) -> str:
    """:func:`history_counts` in one line, as the run's log and the main job print it."""
    v = counts["verdicts"]
    return (f"history: {counts['queued']} turn(s) queued ({counts['over_cap']} older left out by the cap), "
            f"{counts['judged']} judged (verdicts +1: {v['+1']}, -1: {v['-1']}, 0: {v['0']}), {counts['trained']} "
            f"trained, {counts['held_out']} held out for the gate, {counts['skipped']} not trainable, "
            f"{counts['waiting']} still waiting")


def main(argv: list[str] | None = None) -> int:
    """``python -m openclaw_rl.rollout.history PATH``: print the path's kind, or one line and exit 2."""
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print("usage: python -m openclaw_rl.rollout.history PATH", file=sys.stderr)
        return 2
    try:
        print(history_kind(argv[0]))
    except HistoryPathError as exc:
        print(f"HISTORY_PATH {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
