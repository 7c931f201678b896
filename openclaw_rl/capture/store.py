"""The durable trajectory buffer: SQLite in WAL mode under ``--rl-buffer-dir``.

Every served turn is one row of ``turns``, committed before its response finishes (WAL with
``synchronous=FULL``: a committed turn survives ``kill -9`` and power loss). The trainer consumes
the same database: main turns move ``awaiting_next -> ready -> claimed -> trained``; side turns
are stored with status ``side`` and never leave it. Nothing is ever truncated on open.

Thread-safe: one connection guarded by a lock (SQLite serialises writers anyway); callers in an
event loop should call through ``asyncio.to_thread``. A write that fails on the disk (full,
read-only, I/O error) is rolled back and the connection is dropped; the next call opens a fresh
one, so the store works again once the disk recovers, with nothing committed before touched.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from pathlib import Path
from typing import Iterable

from openclaw_rl.capture import lessons as _lessons
from openclaw_rl.capture.records import (ADDED_COLUMNS, AFTER_MIGRATIONS, AWAITING_NEXT, CLAIMED, HELD_OUT,  # noqa: F401
                                         JUDGED, JUDGING, READY, SCHEMA, SIDE, SKIPPED, TRAINED, TurnRecord, TurnStatus,
                                         TurnType, dumps as _dumps, insert_turn_sql, migrations,
                                         row_to_record as _row_to_record, turn_insert_values)

class ForgottenSession(Exception):
    """A turn of a session forgotten after its request started (it was in flight): not recorded."""


def session_key(session_id: str) -> str:
    """The SHA-256 of a session id: how the ``forgotten`` table names a session without its id."""
    return hashlib.sha256(session_id.encode("utf-8")).hexdigest()


def _check_forgotten(db: sqlite3.Connection, session_id: str, started_at: float | None) -> None:
    if started_at is None:
        return
    row = db.execute("SELECT forgotten_at FROM forgotten WHERE session_key=?", (session_key(session_id),)).fetchone()
    if row is not None and row[0] >= started_at:
        # no session id in the message: it is logged after the forget scrubbed the logs of the id
        raise ForgottenSession("a session forgotten while this request ran: its turn is not recorded")


class TrajectoryStore:
    """SQLite-backed store of sessions and turns.

    Args:
        buffer_dir: folder for ``trajectories.sqlite`` (created if missing).

    Raises:
        sqlite3.DatabaseError: the file exists but is not a valid database.
    """

    FILENAME = "trajectories.sqlite"

    def __init__(self, buffer_dir: str | Path):
        self.dir = Path(buffer_dir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.path = self.dir / self.FILENAME
        self._lock = threading.RLock()
        self._conn: sqlite3.Connection | None = None
        self._closed = False
        self._open()

    def _open(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None, timeout=30)
        try:
            db.row_factory = sqlite3.Row
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=FULL")
            db.execute("PRAGMA secure_delete=ON")  # deleted rows are overwritten with zeros (forgetting)
            db.executescript(SCHEMA)
            for statement in migrations("turns", (r[1] for r in db.execute("PRAGMA table_info(turns)"))):
                db.execute(statement)
            for statement in AFTER_MIGRATIONS:
                db.execute(statement)
        except BaseException:
            db.close()
            raise
        self._conn = db
        return db

    @property
    def _db(self) -> sqlite3.Connection:
        """The connection (callers hold the lock); opened again after a failure dropped it."""
        if self._conn is None:
            if self._closed:
                raise sqlite3.ProgrammingError("Cannot operate on a closed database.")
            self._open()
        return self._conn

    def _drop(self) -> None:
        """Forget the connection after a failed write (the next call reopens it)."""
        conn, self._conn = self._conn, None
        if conn is not None:
            try:
                conn.close()
            except sqlite3.Error:
                pass

    def close(self) -> None:
        """Close the connection (the WAL is checkpointed by SQLite); later calls raise
        ``sqlite3.ProgrammingError``. Closing twice is fine."""
        with self._lock:
            self._closed = True
            self._drop()

    def _tx(self):
        return _Transaction(self)

    def transaction(self) -> "_Transaction":
        """``with store.transaction() as db:`` one ``BEGIN IMMEDIATE`` ... ``COMMIT`` (rolled back on
        an error) on the store's connection, for the store's companions (feedback, lessons,
        forgetting: :mod:`openclaw_rl.capture`)."""
        return _Transaction(self)

    def compact(self, attempts: int = 20) -> bool:
        """Rebuild the database so deleted rows leave no bytes on disk: checkpoint and truncate the
        write-ahead log, ``VACUUM``, truncate the log again (with ``secure_delete`` the deleted
        cells were zeroed already). Retries while another connection keeps the log busy.

        Returns:
            True when the log ended empty, False when it stayed busy after ``attempts`` tries.
        """
        for attempt in range(attempts):
            with self._lock:
                db = self._db
                try:
                    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                    db.execute("VACUUM")
                    busy = db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
                except sqlite3.OperationalError:  # another process holds the database: try again
                    busy = 1
            if not busy:
                return True
            time.sleep(0.1 * (attempt + 1))
        return False

    def read(self, sql: str, args: tuple | list = (), reopen: bool = True) -> list[sqlite3.Row]:
        """The rows of one read-only statement, under the store's lock. A disk error drops the
        connection (the next call opens a fresh one, as after a failed write) and is raised.

        ``reopen=False`` (a periodic background read): when a failed write dropped the connection,
        raise ``sqlite3.OperationalError`` instead of opening a new one, so that a background read
        never opens the database while the disk is failing (a connection opened on a read-only
        disk fails the first write after it recovers); capture's next write reopens it."""
        with self._lock:
            if not reopen and self._conn is None:
                raise sqlite3.OperationalError("the store's connection was dropped after a failed write")
            try:
                return self._db.execute(sql, args).fetchall()
            except (sqlite3.OperationalError, OSError):
                self._drop()
                raise

    # ------------------------------------------------------------------ sessions
    def touch_session(self, session_id: str, source: str, now: float | None = None,
                      started_at: float | None = None) -> None:
        """Create the session if new and mark it active now (reopens a closed one).

        Raises:
            ForgottenSession: the session was forgotten after ``started_at`` (the request's start).
        """
        now = time.time() if now is None else now
        with self._tx() as db:
            _check_forgotten(db, session_id, started_at)
            db.execute("INSERT INTO sessions(session_id, source, created_at, last_activity) "
                       "VALUES (?, ?, ?, ?) ON CONFLICT(session_id) DO UPDATE SET "
                       "last_activity=excluded.last_activity, closed=0", (session_id, source, now, now))

    def close_session(self, session_id: str) -> int:
        """Close a session: its awaiting turn is finalised without a next state.

        Returns:
            The number of turns finalised.
        """
        with self._tx() as db:
            db.execute("UPDATE sessions SET closed=1 WHERE session_id=?", (session_id,))
            cur = db.execute("UPDATE turns SET status=? WHERE session_id=? AND status=?",
                             (READY, session_id, AWAITING_NEXT))
            return cur.rowcount

    def end_live_traffic(self, now: float | None = None) -> None:
        """Record that no more live sessions will come (a benchmark's simulated users are done): a
        trainer waiting for judged turns then stops once the turns already recorded are used up
        (:class:`openclaw_rl.rollout.data_source.TrafficEnded`) instead of waiting out its
        ``--rollout-timeout-s``. ``now``: UNIX seconds (default: the time now)."""
        with self._tx() as db:
            db.execute("INSERT OR REPLACE INTO live_traffic(id, ended_at) VALUES (1, ?)",
                       (time.time() if now is None else now,))

    def live_traffic_ended(self) -> bool:
        """Whether :meth:`end_live_traffic` was called on this store."""
        return bool(self.read("SELECT 1 FROM live_traffic WHERE id = 1"))

    def finalize_idle(self, idle_seconds: float, now: float | None = None) -> list[str]:
        """Close sessions idle for longer than ``idle_seconds``; return their ids."""
        now = time.time() if now is None else now
        with self._tx() as db:
            rows = db.execute("SELECT session_id FROM sessions WHERE closed=0 AND last_activity < ?",
                              (now - idle_seconds,)).fetchall()
            ids = [r[0] for r in rows]
            for sid in ids:
                db.execute("UPDATE sessions SET closed=1 WHERE session_id=?", (sid,))
                db.execute("UPDATE turns SET status=? WHERE session_id=? AND status=?",
                           (READY, sid, AWAITING_NEXT))
        return ids

    # ------------------------------------------------------------------ turns
    def add_turn(self, rec: TurnRecord, fingerprint: str | None = None, started_at: float | None = None) -> TurnRecord:
        """Append a turn to its session (durable when this returns).

        Main turns start ``awaiting_next``; side turns are stored as ``side``. When
        ``fingerprint`` is given it is indexed for continuation matching.

        Raises:
            ForgottenSession: the session was forgotten after ``started_at`` (the request's start).
        """
        now = time.time()
        with self._tx() as db:
            _check_forgotten(db, rec.session_id, started_at)
            (n,) = db.execute("SELECT COUNT(*) FROM turns WHERE session_id=?", (rec.session_id,)).fetchone()
            rec.turn_index = n
            rec.status = AWAITING_NEXT if rec.turn_type == TurnType.MAIN else SIDE
            rec.created_at = now
            rec.turn_uid = rec.turn_uid or f"{rec.session_id}:{n}"
            cur = db.execute(insert_turn_sql(), turn_insert_values(rec))
            rec.id = cur.lastrowid
            db.execute("UPDATE sessions SET last_activity=? WHERE session_id=?", (now, rec.session_id))
            if fingerprint:
                db.execute("INSERT OR REPLACE INTO continuations VALUES (?, ?, ?)",
                           (fingerprint, rec.session_id, rec.id))
        return rec

    def set_next_state(self, turn_id: int, next_state: str | None, role: str | None) -> bool:
        """Attach the next state to an awaiting main turn and mark it ready.

        Returns:
            False if the turn was no longer awaiting (already finalised): nothing changes.
        """
        with self._tx() as db:
            cur = db.execute("UPDATE turns SET next_state=?, next_state_role=?, next_state_at=?, "
                             "status=? WHERE id=? AND status=?",
                             (next_state, role, time.time(), READY, turn_id, AWAITING_NEXT))
            return cur.rowcount == 1

    def finalize_turn(self, turn_id: int) -> None:
        """Mark an awaiting main turn ready without a next state."""
        with self._tx() as db:
            db.execute("UPDATE turns SET status=? WHERE id=? AND status=?", (READY, turn_id, AWAITING_NEXT))

    def lookup_continuation(self, fingerprints: Iterable[str]) -> tuple[str, int, str] | None:
        """Return ``(session_id, turn_id, fingerprint)`` of the first known fingerprint."""
        with self._lock:
            for fp in fingerprints:
                row = self._db.execute("SELECT session_id, turn_id FROM continuations WHERE fingerprint=?",
                                       (fp,)).fetchone()
                if row:
                    return row[0], row[1], fp
        return None

    def untokenized_turns(self) -> list[TurnRecord]:
        """Main turns stored without token ids (imported from text), oldest first; skipped ones (never
        trained, e.g. history left out by ``--history-max-turns``) are left for when they are queued."""
        with self._lock:
            rows = self._db.execute("SELECT * FROM turns WHERE turn_type=? AND status!=? AND (prompt_ids='[]' OR "
                                    "response_ids='[]') ORDER BY id", (TurnType.MAIN, SKIPPED)).fetchall()
        return [_row_to_record(r) for r in rows]

    def set_text_ids(self, turn_id: int, prompt_text: str, prompt_ids: list[int], response_ids: list[int]) -> None:
        """Store the ids made from a turn's text (:mod:`openclaw_rl.capture.text_turns`): the
        rendered prompt text, its ids and the response ids, marked ``ids_from_text``, with no
        sampling logprobs."""
        with self._tx() as db:
            db.execute("UPDATE turns SET prompt_text=?, prompt_ids=?, response_ids=?, response_logprobs='[]', "
                       "ids_from_text=1 WHERE id=?", (prompt_text, _dumps(prompt_ids), _dumps(response_ids), turn_id))

    def last_main_turn(self, session_id: str) -> TurnRecord | None:
        """The session's latest main turn, or None."""
        with self._lock:
            row = self._db.execute("SELECT * FROM turns WHERE session_id=? AND turn_type=? "
                                   "ORDER BY turn_index DESC LIMIT 1", (session_id, TurnType.MAIN)).fetchone()
        return _row_to_record(row) if row else None

    def get_turn(self, turn_id: int) -> TurnRecord | None:
        """One turn by its row id."""
        with self._lock:
            row = self._db.execute("SELECT * FROM turns WHERE id=?", (turn_id,)).fetchone()
        return _row_to_record(row) if row else None

    def turns(self, session_id: str | None = None, status: TurnStatus | str | None = None) -> list[TurnRecord]:
        """Turns in insertion order, optionally filtered by session and status."""
        sql, args = "SELECT * FROM turns WHERE 1=1", []
        if session_id is not None:
            sql += " AND session_id=?"
            args.append(session_id)
        if status is not None:
            sql += " AND status=?"
            args.append(status)
        with self._lock:
            rows = self._db.execute(sql + " ORDER BY id", args).fetchall()
        return [_row_to_record(r) for r in rows]

    def session_ids(self) -> list[str]:
        """All session ids, oldest first."""
        with self._lock:
            return [r[0] for r in self._db.execute("SELECT session_id FROM sessions ORDER BY created_at, rowid")]

    # ------------------------------------------------------------------ trainer side
    def claim_ready(self, limit: int, worker: str = "trainer") -> list[TurnRecord]:
        """Atomically claim up to ``limit`` ready main turns (unjudged), ranked history turns first
        (``history_rank``), then oldest first."""
        return self._claim(READY, CLAIMED, limit, worker)

    def mark_trained(self, turn_ids: Iterable[int], step: int | None = None) -> None:
        """Claimed turns were trained on (in train step ``step``)."""
        with self._tx() as db:
            now = time.time()
            db.executemany("UPDATE turns SET status=?, trained_step=?, trained_at=? WHERE id=? AND status=?",
                           [(TRAINED, step, now, i, CLAIMED) for i in turn_ids])

    def hold_out(self, turn_ids: Iterable[int]) -> None:
        """Claimed turns are kept from training for the promotion gate (status ``held_out``)."""
        with self._tx() as db:
            db.executemany("UPDATE turns SET status=?, claimed_by=NULL WHERE id=? AND status=?",
                           [(HELD_OUT, i, CLAIMED) for i in turn_ids])

    def held_out_turns(self, limit: int) -> list[TurnRecord]:
        """The ``limit`` most recent held-out turns, oldest first."""
        with self._lock:
            rows = self._db.execute("SELECT * FROM turns WHERE status=? ORDER BY id DESC LIMIT ?",
                                    (HELD_OUT, limit)).fetchall()
        return [_row_to_record(r) for r in reversed(rows)]

    # ------------------------------------------------------------------ served weight versions
    def record_version(self, version: int, model_path: str, gate_json: str, served_at: float) -> None:
        """``version`` is served now (``served``); every other ``served`` one becomes ``superseded``."""
        with self._tx() as db:
            db.execute("UPDATE weight_versions SET status='superseded' WHERE status='served'")
            db.execute("INSERT OR REPLACE INTO weight_versions VALUES (?, ?, ?, ?, 'served')",
                       (int(version), model_path, served_at, gate_json))

    def roll_back_versions(self, version: int) -> None:
        """Serving went back to ``version``: it is ``served``, newer ones ``rolled_back``."""
        with self._tx() as db:
            db.execute("UPDATE weight_versions SET status='superseded' WHERE status='served'")
            db.execute("UPDATE weight_versions SET status='rolled_back' WHERE version > ?", (version,))
            db.execute("UPDATE weight_versions SET status='served' WHERE version = ?", (version,))

    def versions(self) -> list[sqlite3.Row]:
        """The ``weight_versions`` rows, newest first."""
        with self._lock:
            return self._db.execute("SELECT * FROM weight_versions ORDER BY version DESC").fetchall()

    def turns_per_version(self) -> dict[int, dict[str, int]]:
        """``{weight version: {"turns_sampled": main turns it sampled, "turns_trained": of those,
        trained}}``."""
        with self._lock:
            rows = self._db.execute("SELECT weight_version, COUNT(*), SUM(status='trained') FROM turns "
                                    "WHERE turn_type='main' GROUP BY weight_version").fetchall()
        return {int(v): {"turns_sampled": n, "turns_trained": int(t or 0)} for v, n, t in rows}

    # ------------------------------------------------------------------ judging
    def claim_for_judging(self, limit: int, worker: str = "judge") -> list[TurnRecord]:
        """Atomically move up to ``limit`` ready main turns to ``judging``, ranked history turns first
        (``history_rank``), then oldest first."""
        return self._claim(READY, JUDGING, limit, worker)

    def save_judgement(self, turn_id: int, method: str, reward: float | None, trainable: bool,
                       details: dict | None = None, final: bool = False) -> None:
        """Record a judgement (durable) and move the turn to ``judged`` or ``skipped``.

        A turn a person rated (:mod:`openclaw_rl.capture.feedback`) is ``judged`` (trainable) even
        when the judge abstained, unless ``final`` (the data source dropping it: stale, no ids).
        An accepted hint (``details["hint_accepted"]`` and ``details["hint"]``) becomes a lesson
        (:mod:`openclaw_rl.capture.lessons`).
        """
        with self._tx() as db:
            db.execute("INSERT OR REPLACE INTO judgements VALUES (?, ?, ?, ?, ?, ?)",
                       (turn_id, method, reward, int(trainable), _dumps(details), time.time()))
            rated = not final and db.execute("SELECT 1 FROM feedback WHERE turn_id=?", (turn_id,)).fetchone()
            db.execute("UPDATE turns SET status=?, claimed_by=NULL WHERE id=?",
                       (JUDGED if trainable or rated else SKIPPED, turn_id))
            if details and details.get("hint_accepted") and details.get("hint") and not final:
                _lessons.add_hint(db, turn_id, str(details["hint"]))

    def judgement(self, turn_id: int) -> dict | None:
        """``{"method", "reward", "trainable", "details"}`` of a judged turn, or None."""
        with self._lock:
            row = self._db.execute("SELECT * FROM judgements WHERE turn_id=?", (turn_id,)).fetchone()
        if row is None:
            return None
        return {"method": row["method"], "reward": row["reward"], "trainable": bool(row["trainable"]),
                "details": json.loads(row["details_json"]) if row["details_json"] else None}

    def claim_judged(self, limit: int, worker: str = "trainer", history_only: bool = False,
                     newest_first: bool = False) -> list[TurnRecord]:
        """Atomically claim up to ``limit`` judged (trainable) turns for training, ranked history turns
        first (``history_rank``, the most recent first), then oldest first, or newest first with
        ``newest_first`` (``history_only``: ranked history turns only)."""
        return self._claim(JUDGED, CLAIMED, limit, worker, history_only, newest_first)

    def claim_judged_ids(self, turn_ids: Iterable[int], worker: str = "trainer") -> list[TurnRecord]:
        """Atomically claim those of ``turn_ids`` that are still judged (unclaimed); the others (rated
        meanwhile into another state, claimed, dropped) are left alone. Returns the claimed turns."""
        with self._tx() as db:
            ids = [i for i in turn_ids
                   if db.execute("UPDATE turns SET status=?, claimed_by=?, claimed_at=? WHERE id=? AND status=?",
                                 (CLAIMED, worker, time.time(), i, JUDGED)).rowcount]
        return [self.get_turn(i) for i in ids]

    def judged_live_before(self, version: int) -> list[int]:
        """Ids of judged (unclaimed) live turns, history turns aside, generated by a weight version
        older than ``version``: what a data source taking the newest first leaves behind."""
        with self._lock:
            return [r[0] for r in self._db.execute(
                "SELECT id FROM turns WHERE status=? AND history_rank IS NULL AND weight_version < ? ORDER BY id",
                (JUDGED, version)).fetchall()]

    def recover(self, last_saved_step: int | None = None) -> dict[str, int]:
        """After a restart: unfinished judging goes back to ready, unfinished training back to
        judged, and, when resuming from the checkpoint of step ``last_saved_step``, turns trained
        after it (``trained_step > last_saved_step``) are trained again, so none is lost or
        doubled. ``None`` (a fresh run) leaves trained turns alone.

        Returns:
            How many turns each rule moved.
        """
        with self._tx() as db:
            out = {"judging": db.execute("UPDATE turns SET status=?, claimed_by=NULL WHERE status=?",
                                         (READY, JUDGING)).rowcount,
                   "claimed": db.execute("UPDATE turns SET status=?, claimed_by=NULL WHERE status=?",
                                         (JUDGED, CLAIMED)).rowcount}
            out["trained_after_checkpoint"] = 0 if last_saved_step is None else db.execute(
                "UPDATE turns SET status=?, trained_step=NULL WHERE status=? AND trained_step > ?",
                (JUDGED, TRAINED, last_saved_step)).rowcount
        return out

    def recover_claims(self, turn_ids: Iterable[int]) -> None:
        """Return claimed turns to ``judged`` (a train step that did not happen)."""
        with self._tx() as db:
            db.executemany("UPDATE turns SET status=?, claimed_by=NULL WHERE id=? AND status=?",
                           [(JUDGED, i, CLAIMED) for i in turn_ids])

    def _claim(self, src: TurnStatus, dst: TurnStatus, limit: int, worker: str,
               history_only: bool = False, newest_first: bool = False) -> list[TurnRecord]:
        only = " AND history_rank IS NOT NULL" if history_only else ""
        order = "id DESC" if newest_first else "id"
        with self._tx() as db:
            # history turns a run loaded (--history-path) first, by rank (the most recent first), then
            # the others oldest (or newest) first
            ids = [r[0] for r in db.execute(f"SELECT id FROM turns WHERE status=?{only} ORDER BY history_rank IS "
                                            f"NULL, history_rank, {order} LIMIT ?", (src, limit)).fetchall()]
            db.executemany("UPDATE turns SET status=?, claimed_by=?, claimed_at=? WHERE id=?",
                           [(dst, worker, time.time(), i) for i in ids])
        return [self.get_turn(i) for i in ids]

    def release(self, turn_ids: Iterable[int]) -> None:
        """Return claimed turns to ready (e.g. after a trainer restart)."""
        with self._tx() as db:
            db.executemany("UPDATE turns SET status=?, claimed_by=NULL WHERE id=? AND status=?",
                           [(READY, i, CLAIMED) for i in turn_ids])

    def counts(self, history_only: bool = False) -> dict[str, int]:
        """Number of turns per status (``history_only``: of ranked history turns), plus ``sessions``."""
        only = " WHERE history_rank IS NOT NULL" if history_only else ""
        with self._lock:
            out = {r[0]: r[1] for r in self._db.execute(f"SELECT status, COUNT(*) FROM turns{only} GROUP BY status")}
            out["sessions"] = self._db.execute("SELECT COUNT(*) FROM sessions").fetchone()[0]
        return out


class _Transaction:
    """``BEGIN IMMEDIATE`` ... ``COMMIT`` under the store's lock; on an error, ``ROLLBACK``, and
    on a disk error (``sqlite3.OperationalError``, ``OSError``) the connection is dropped too, so
    a half-failed transaction never poisons later calls."""

    def __init__(self, store: TrajectoryStore):
        self.store = store

    def __enter__(self) -> sqlite3.Connection:
        self.store._lock.acquire()
        try:
            self.db = self.store._db
            self.db.execute("BEGIN IMMEDIATE")
        except (sqlite3.OperationalError, OSError):
            self.store._drop()
            self.store._lock.release()
            raise
        except BaseException:
            self.store._lock.release()
            raise
        return self.db

    def __exit__(self, exc_type, exc, tb) -> None:
        try:
            if exc_type is None:
                try:
                    self.db.execute("COMMIT")
                except (sqlite3.OperationalError, OSError):
                    self._rollback()
                    self.store._drop()
                    raise
            else:
                self._rollback()
                if issubclass(exc_type, (sqlite3.OperationalError, OSError)):
                    self.store._drop()
        finally:
            self.store._lock.release()

    def _rollback(self) -> None:
        if self.db.in_transaction:
            try:
                self.db.execute("ROLLBACK")
            except sqlite3.Error:  # the connection is dropped next
                self.store._drop()
