"""The store's one declaration of its columns: CREATE, migration, INSERT and row mapping all come
from it; turn types and statuses are closed vocabularies."""

from __future__ import annotations

import dataclasses
import sqlite3

import pytest

from openclaw_rl.capture.records import (TURN_COLUMNS, TurnRecord, TurnStatus, TurnType, insert_turn_sql,
                                         migrations)
from openclaw_rl.capture.store import TrajectoryStore


def _full_record() -> TurnRecord:
    return TurnRecord(session_id="s", turn_type="main", messages=[{"role": "user", "content": "hi"}],
                      prompt_text="p", prompt_ids=[1, 2], response_ids=[3], response_logprobs=[-0.5],
                      response_text="r", finish_reason="stop", weight_version=2, tools=[{"type": "function"}],
                      reasoning_content="think", tool_calls=[{"id": "c"}], model="m", prefix_ok=False,
                      prefix_break_at=1, side_reason=None, temperature=0.7, top_p=0.9)


def test_every_record_column_round_trips(tmp_path):
    store = TrajectoryStore(tmp_path)
    store.touch_session("s", "test")
    rec = store.add_turn(_full_record())
    got = store.get_turn(rec.id)
    attrs = [c.attr for c in TURN_COLUMNS if c.attr]
    assert {f.name for f in dataclasses.fields(TurnRecord)} - set(attrs) == {"extra"}
    assert {a: getattr(got, a) for a in attrs} == {a: getattr(rec, a) for a in attrs}
    assert got.turn_type is TurnType.MAIN and got.status is TurnStatus.AWAITING_NEXT
    assert insert_turn_sql().count("?") == sum(c.inserted for c in TURN_COLUMNS)
    store.close()


def test_an_older_database_gains_the_added_columns(tmp_path):
    old = [c for c in TURN_COLUMNS if not c.added]
    db = sqlite3.connect(tmp_path / TrajectoryStore.FILENAME)
    db.execute(f"CREATE TABLE turns ({', '.join(f'{c.name} {c.sql}' for c in old)})")
    db.commit()
    db.close()
    assert [m.split()[-2] for m in migrations("turns", [c.name for c in old])] == [
        "temperature", "top_p", "trained_step", "constrained", "ids_from_text", "images_json", "completion_id",
        "trained_at", "history_rank"]
    store = TrajectoryStore(tmp_path)
    cols = [r[1] for r in store._db.execute("PRAGMA table_info(turns)")]
    assert cols == [c.name for c in TURN_COLUMNS] and migrations("turns", cols) == []
    store.touch_session("s", "test")
    assert store.get_turn(store.add_turn(_full_record()).id).top_p == 0.9
    store.close()


def test_vocabularies_are_closed():
    with pytest.raises(ValueError):
        dataclasses.replace(_full_record(), turn_type="assistant")
    with pytest.raises(ValueError):
        dataclasses.replace(_full_record(), status="done")
    assert TurnType("side") is TurnType.SIDE and "judged" in set(TurnStatus)
