"""``openclaw-rl import-openclaw``: OpenClaw's session history into a trajectory store.

    openclaw-rl import-openclaw [--state-dir DIR | --bundle PATH ...] [--agent ID] [--since DATE]
                                [--out BUFFER] [--yes]

Reads only what it is pointed at (a state folder, or trajectory bundles), prints what it will
import (agents, sessions, date range, main/side turn counts, what it skips and why) and asks before
writing unless ``--yes``. Each session is written in one transaction: a failure leaves the sessions
already written and nothing of the failed one.

Idempotent: an imported session keeps OpenClaw's session id and each turn a stable uid
(``openclaw:<session id>:<entry id>``), so importing again adds nothing; a session that went on
after it was imported gets its new turns appended, and an earlier turn that had no next state yet
gets the one that followed it (if no judge has read the turn yet). A session the store
already has (captured live: the live server names an OpenClaw session by the same id, taken from
its runtime line), or one with a reply whose ``chatcmpl-...`` id the store already holds, is not
imported again: nothing is counted twice. A session the user forgot
(:mod:`openclaw_rl.capture.forget`) is never imported back; ``forget`` works on an imported session
like on any other (it names the same session id).

Imported main turns are ``ready`` without token ids: the training job gives them ids with its
policy's chat template before judging (:mod:`openclaw_rl.capture.text_turns`), as for any turn
imported from text.
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from openclaw_rl.capture.openclaw_history.sources import (HistorySession, ReadResult, SessionReadError, read_bundle,
                                                          read_state_dir)
from openclaw_rl.capture.openclaw_history.turns import SOURCE, SessionTurnError, session_turns
from openclaw_rl.capture.records import TurnRecord, TurnType, insert_turn_sql, turn_insert_values
from openclaw_rl.capture.store import TrajectoryStore, session_key
from openclaw_rl.capture.turn_rules import TurnRules

__all__ = ["ImportPlan", "main", "plan_import", "read_sources", "write_plan"]


@dataclass
class ImportPlan:
    """What an import will write, and what it skips.

    Attributes:
        sessions: ``(session, turns)`` to write, oldest first.
        extended: ``(session, new_turns, filled_turns)`` for sessions imported before that went on
            since: turns to append, and earlier turns whose next state is now known.
        problems: one line per session (or store) that could not be read or converted.
        skipped: ``reason -> session ids`` left out on purpose (already imported, captured live,
            forgotten, before ``--since``, no reply).
    """

    sessions: list[tuple[HistorySession, list[TurnRecord]]] = field(default_factory=list)
    extended: list[tuple[HistorySession, list[TurnRecord], list[TurnRecord]]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    skipped: dict[str, list[str]] = field(default_factory=dict)

    def counts(self) -> Counter:
        """Turn counts: ``main``, ``side``, ``main_with_next_state``."""
        c: Counter = Counter()
        for _, turns in [*self.sessions, *((s, new) for s, new, _ in self.extended)]:
            for t in turns:
                c[t.turn_type.value] += 1
                c["main_with_next_state"] += t.turn_type == TurnType.MAIN and t.next_state is not None
        return c

    def summary(self) -> list[str]:
        """The lines printed before asking (agents, sessions, date range, counts, skips, problems)."""
        c = self.counts()
        agents = Counter(s.agent_id for s, _ in self.sessions)
        stamps = [t for s, _ in self.sessions for t in s.times() if t is not None]
        span = (" from " + " to ".join(datetime.fromtimestamp(t, timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
                                       for t in (min(stamps), max(stamps)))) if stamps else ""
        lines = [f"will import {len(self.sessions)} session(s){span}: {c['main']} main turn(s) "
                 f"({c['main_with_next_state']} with a next state), {c['side']} side turn(s)"]
        lines += [f"  agent {a}: {n} session(s)" for a, n in sorted(agents.items())]
        if self.extended:
            new = sum(len(t) for _, t, _ in self.extended)
            filled = sum(len(f) for _, _, f in self.extended)
            lines.append(f"will add {new} turn(s) to {len(self.extended)} session(s) imported before"
                         + (f" ({filled} earlier turn(s) get their next state)" if filled else ""))
        lines += [f"skipped {len(ids)} session(s): {why}" for why, ids in self.skipped.items()]
        lines += [f"problem: {p}" for p in self.problems]
        return lines


def read_sources(state_dir: str | None, bundles: list[str], agent: str | None) -> ReadResult:
    """Read a state folder and/or trajectory bundles (see :mod:`.sources`).

    Raises:
        HistoryVersionError: a format version this importer does not know.
        SessionReadError: the state folder is not one (or has no such agent).
    """
    found = read_state_dir(state_dir, agent) if state_dir else ReadResult()
    for path in bundles:
        try:
            session = read_bundle(path)
        except SessionReadError as exc:
            found.problems.append(f"{exc}; bundle skipped")
            continue
        if agent is None or session.agent_id == agent:
            found.sessions.append(session)
    return found


def _known(store: TrajectoryStore | None, session: HistorySession, turns: list[TurnRecord]) -> str | None:
    """Why the store already has this session (None: it does not, or there is no store yet)."""
    if store is None:
        return None
    rows = store.read("SELECT source FROM sessions WHERE session_id=?", (session.session_id,))
    if rows:
        return "already imported" if rows[0][0] == SOURCE else "captured live"
    if store.read("SELECT 1 FROM forgotten WHERE session_key=?", (session_key(session.session_id),)):
        return "forgotten"
    ids = [t.completion_id for t in turns if t.completion_id]
    if ids and store.read(f"SELECT 1 FROM turns WHERE completion_id IN ({','.join('?' * len(ids))}) LIMIT 1", ids):
        return "captured live"
    return None


def _went_on(store: TrajectoryStore, session: HistorySession,
             turns: list[TurnRecord]) -> tuple[list[TurnRecord], list[TurnRecord]]:
    """``(new, filled)`` of a session imported before: turns the store does not have yet, and
    stored turns without a next state (and no judgement) whose next state is now known."""
    stored = {uid: (ns, judged) for uid, ns, judged in store.read(
        "SELECT turn_uid, next_state, EXISTS(SELECT 1 FROM judgements j WHERE j.turn_id=turns.id) "
        "FROM turns WHERE session_id=?", (session.session_id,))}
    new = [t for t in turns if t.turn_uid not in stored]
    filled = [t for t in turns if t.turn_uid in stored and t.next_state is not None
              and stored[t.turn_uid][0] is None and not stored[t.turn_uid][1]]
    return new, filled


def plan_import(found: ReadResult, store: TrajectoryStore | None, rules: TurnRules,
                since: float | None = None) -> ImportPlan:
    """Convert what was read into turns and decide what to write (nothing is written).

    Args:
        found: the sessions read.
        store: the destination (read only here); None when it does not exist yet.
        rules: the live server's side-turn rules and context patterns.
        since: UNIX seconds; a session whose last event is older is skipped.
    """
    plan = ImportPlan(problems=list(found.problems))
    seen: set[str] = set()
    for session in sorted(found.sessions, key=lambda s: (s.times()[0] or 0.0, s.session_id)):
        if session.session_id in seen:
            plan.skipped.setdefault("read twice", []).append(session.session_id)
            continue
        seen.add(session.session_id)
        last = session.times()[1]
        if since is not None and (last is None or last < since):
            plan.skipped.setdefault("before --since", []).append(session.session_id)
            continue
        try:
            turns = session_turns(session, rules)
        except SessionTurnError as exc:
            plan.problems.append(f"{exc}; session skipped")
            continue
        if not turns:
            plan.skipped.setdefault("no assistant reply", []).append(session.session_id)
            continue
        why = _known(store, session, turns)
        if why == "already imported":
            new, filled = _went_on(store, session, turns)
            if new or filled:
                plan.extended.append((session, new, filled))
                continue
        if why:
            plan.skipped.setdefault(why, []).append(session.session_id)
            continue
        plan.sessions.append((session, turns))
    return plan


def write_plan(store: TrajectoryStore, plan: ImportPlan) -> tuple[int, int]:
    """Write the plan's sessions and the turns of sessions that went on, one transaction each;
    returns ``(sessions, turns)`` written (new sessions; turns written in all).

    A session that appeared in the store since the plan was made (a concurrent import), or a turn
    that did, is left alone, so the write stays idempotent.
    """
    n_sessions = n_turns = 0
    for session, turns in plan.sessions:
        first, last = session.times()
        with store.transaction() as db:
            if db.execute("SELECT 1 FROM sessions WHERE session_id=?", (session.session_id,)).fetchone():
                continue
            db.execute("INSERT INTO sessions(session_id, source, created_at, last_activity, closed) "
                       "VALUES (?, ?, ?, ?, 1)", (session.session_id, SOURCE, first or 0.0, last or first or 0.0))
            for index, rec in enumerate(turns):
                rec.turn_index, rec.created_at = index, rec.created_at or last or 0.0
                db.execute(insert_turn_sql(), turn_insert_values(rec))
        n_sessions += 1
        n_turns += len(turns)
    for session, new, filled in plan.extended:
        last = session.times()[1]
        with store.transaction() as db:
            top = db.execute("SELECT COALESCE(MAX(turn_index), -1) FROM turns WHERE session_id=?",
                             (session.session_id,)).fetchone()[0]
            for rec in new:
                if db.execute("SELECT 1 FROM turns WHERE turn_uid=?", (rec.turn_uid,)).fetchone():
                    continue
                top += 1
                rec.turn_index, rec.created_at = top, rec.created_at or last or 0.0
                db.execute(insert_turn_sql(), turn_insert_values(rec))
                n_turns += 1
            for rec in filled:
                db.execute("UPDATE turns SET next_state=?, next_state_role=?, next_state_at=? WHERE turn_uid=? "
                           "AND next_state IS NULL AND NOT EXISTS (SELECT 1 FROM judgements j WHERE j.turn_id=turns.id)",
                           (rec.next_state, rec.next_state_role, last, rec.turn_uid))
            db.execute("UPDATE sessions SET last_activity=MAX(last_activity, ?) WHERE session_id=?",
                       (last or 0.0, session.session_id))
    return n_sessions, n_turns


def _since(text: str | None) -> float | None:
    if text is None:
        return None
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(f"--since {text!r}: not a date (YYYY-MM-DD or an ISO date-time)") from None
    return (when if when.tzinfo else when.replace(tzinfo=timezone.utc)).timestamp()


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="openclaw-rl import-openclaw",
                                description="Import OpenClaw's own session history (its agent SQLite store, legacy "
                                            "JSONL transcripts, trajectory bundles) as sessions to judge and train on.")
    p.add_argument("--state-dir", help="OpenClaw's state folder (~/.openclaw or $OPENCLAW_STATE_DIR): every agent's "
                                       "store and legacy transcripts; read only, safe while the gateway runs")
    p.add_argument("--bundle", action="append", default=[], metavar="PATH",
                   help="a trajectory bundle folder written by `openclaw sessions export-trajectory` (repeatable)")
    p.add_argument("--agent", help="only this agent's sessions")
    p.add_argument("--since", help="only sessions active on or after this date (YYYY-MM-DD, UTC)")
    p.add_argument("--out", default="./rl_buffer", metavar="BUFFER",
                   help="the trajectory store's folder (the server's --rl-buffer-dir; default ./rl_buffer)")
    p.add_argument("--side-turn-rules", help="side-turn rules file, as given to the server (default: its rules)")
    p.add_argument("--yes", action="store_true", help="import without asking")
    return p


def main(argv: list[str]) -> int:
    """Run the command; returns the exit code (0, or 1 when the user declined). Errors (bad
    arguments, an unknown format version, no state folder) raise ``ValueError`` for the one-line
    message of :mod:`openclaw_rl.cli`."""
    a = _parser().parse_args(argv)
    if not a.state_dir and not a.bundle:
        raise ValueError("give --state-dir DIR or --bundle PATH (the import reads only what it is pointed at)")
    for path in a.bundle:
        if not Path(path).exists():
            raise ValueError(f"--bundle {path}: no such file or folder")
    since = _since(a.since)
    rules = TurnRules.from_file(a.side_turn_rules) if a.side_turn_rules else TurnRules()
    found = read_sources(a.state_dir, a.bundle, a.agent)
    existed = (Path(a.out) / TrajectoryStore.FILENAME).is_file()
    store = None
    try:
        store = TrajectoryStore(a.out) if existed else None  # created only once the user said yes
        plan = plan_import(found, store, rules, since)
        print("\n".join(plan.summary()), file=sys.stderr)
        if not plan.sessions and not plan.extended:
            return 0
        if not a.yes:
            if not sys.stdin.isatty():
                raise ValueError("not a terminal: run again with --yes to import without asking")
            try:
                answer = input("import these sessions? [y/N] ")
            except (EOFError, KeyboardInterrupt):
                answer = ""
                print(file=sys.stderr)
            if answer.strip().lower() not in ("y", "yes"):
                print("nothing imported", file=sys.stderr)
                return 1
        store = store or TrajectoryStore(a.out)
        sessions, turns = write_plan(store, plan)
    except sqlite3.DatabaseError as exc:
        raise ValueError(f"--out {a.out}: {exc}") from exc
    finally:
        if store is not None:
            store.close()
    went_on = f" ({len(plan.extended)} session(s) imported before went on)" if plan.extended else ""
    print(f"imported {sessions} session(s), {turns} turn(s) into {a.out}{went_on}", file=sys.stderr)
    return 0
