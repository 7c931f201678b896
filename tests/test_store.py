"""TrajectoryStore on real SQLite files: life cycle, durability settings, concurrency."""

from __future__ import annotations

import sqlite3
import threading

import pytest

from openclaw_rl.capture.store import TrajectoryStore, TurnRecord


def rec(session_id: str, turn_type: str = "main", **kw) -> TurnRecord:
    base = dict(session_id=session_id, turn_type=turn_type, messages=[{"role": "user", "content": "hi"}],
                prompt_text="<|im_start|>user\nhi<|im_end|>\n", prompt_ids=[1, 2, 3], response_ids=[4, 5],
                response_logprobs=[-0.25, -1.5], response_text="ok", finish_reason="stop", weight_version=0)
    base.update(kw)
    return TurnRecord(**base)


@pytest.fixture
def store(tmp_path):
    s = TrajectoryStore(tmp_path / "buf")
    yield s
    s.close()


def status(store, turn_id):
    return store.get_turn(turn_id).status


def test_main_turn_life_cycle(store):
    store.touch_session("s", "header")
    t = store.add_turn(rec("s"))
    assert (t.turn_index, t.status, t.turn_uid) == (0, "awaiting_next", "s:0")
    assert store.claim_ready(10) == []  # not ready yet
    assert store.set_next_state(t.id, "thanks", "user") is True
    got = store.get_turn(t.id)
    assert (got.status, got.next_state, got.next_state_role) == ("ready", "thanks", "user")
    (claimed,) = store.claim_ready(10, worker="w1")
    assert (claimed.id, claimed.status) == (t.id, "claimed")
    assert store.claim_ready(10) == []  # a claimed turn is not claimed twice
    store.release([t.id])
    assert status(store, t.id) == "ready"
    assert [c.id for c in store.claim_ready(1)] == [t.id]
    store.mark_trained([t.id])
    assert status(store, t.id) == "trained"
    store.release([t.id])  # only claimed turns are released
    store.mark_trained([t.id])
    assert status(store, t.id) == "trained"
    assert store.counts() == {"trained": 1, "sessions": 1}


def test_claim_order_and_limit(store):
    ids = [store.add_turn(rec(f"s{i}")).id for i in range(5)]
    for i in reversed(ids):
        store.finalize_turn(i)
    assert [t.id for t in store.claim_ready(2)] == ids[:2]
    assert [t.id for t in store.claim_ready(10)] == ids[2:]


def test_side_turns_never_claimable(store):
    store.touch_session("s", "header")
    side = store.add_turn(rec("s", "side", side_reason="heartbeat"))
    main = store.add_turn(rec("s"))
    assert (side.status, side.turn_index, main.turn_index) == ("side", 0, 1)
    assert store.get_turn(side.id).trainable is False and store.get_turn(main.id).trainable is True
    assert store.set_next_state(side.id, "x", "user") is False
    store.finalize_turn(side.id)
    assert store.close_session("s") == 1  # only the main turn was awaiting
    assert store.finalize_idle(0, now=1e12) == []  # already closed
    assert [t.id for t in store.claim_ready(10)] == [main.id]
    assert status(store, side.id) == "side" and store.get_turn(side.id).next_state is None
    assert store.last_main_turn("s").id == main.id


def test_set_next_state_on_finalised_turn_is_noop(store):
    t = store.add_turn(rec("s"))
    store.finalize_turn(t.id)
    assert store.set_next_state(t.id, "late", "user") is False
    got = store.get_turn(t.id)
    assert (got.status, got.next_state, got.next_state_role) == ("ready", None, None)
    t2 = store.add_turn(rec("s"))
    assert store.set_next_state(t2.id, "first", "tool") is True
    assert store.set_next_state(t2.id, "second", "user") is False
    assert store.get_turn(t2.id).next_state == "first"
    store.claim_ready(10)
    assert store.set_next_state(t.id, "x", "user") is False and status(store, t.id) == "claimed"
    assert store.set_next_state(123456, "x", "user") is False


def test_finalize_idle_with_explicit_now(store):
    a, b = store.add_turn(rec("A")), store.add_turn(rec("B"))
    store.touch_session("A", "user", now=1000.0)
    store.touch_session("B", "user", now=1005.0)
    assert store.finalize_idle(10, now=1010.0) == []  # A: 1000 is not < 1000
    assert store.finalize_idle(10, now=1012.0) == ["A"]
    assert (status(store, a.id), status(store, b.id)) == ("ready", "awaiting_next")
    assert store.get_turn(a.id).next_state is None
    assert store.finalize_idle(10, now=1012.0) == []  # closed sessions are not closed again
    assert store.finalize_idle(10, now=1015.0) == []
    assert store.finalize_idle(10, now=1015.5) == ["B"]
    assert status(store, b.id) == "ready"
    # new activity reopens a session; its new turn waits again
    store.touch_session("A", "user", now=2000.0)
    a2 = store.add_turn(rec("A"))
    assert (a2.turn_index, a2.status) == (1, "awaiting_next")
    store.touch_session("A", "user", now=2000.0)
    assert store.finalize_idle(5, now=2006.0) == ["A"]
    assert status(store, a2.id) == "ready"


def test_close_session_counts(store):
    t0 = store.add_turn(rec("s"))
    t1 = store.add_turn(rec("s"))  # both awaiting (no next state was linked)
    store.add_turn(rec("other"))
    assert store.close_session("s") == 2
    assert store.close_session("s") == 0
    assert {status(store, t0.id), status(store, t1.id)} == {"ready"}
    assert store.counts() == {"ready": 2, "awaiting_next": 1, "sessions": 0}  # add_turn alone makes no session row
    assert store.close_session("missing") == 0


def test_round_trip_of_every_field(store):
    calls = [{"id": "call_1", "type": "function", "function": {"name": "read", "arguments": '{"path": "é"}'}}]
    r = rec("s", tools=[{"type": "function", "function": {"name": "read"}}], tool_calls=calls,
            reasoning_content="thinking 🤔", model="m", prefix_ok=False, prefix_break_at=7,
            response_text="日本語 ✓", messages=[{"role": "user", "content": [{"type": "text", "text": "x"}]}],
            weight_version=3, finish_reason="tool_calls", response_logprobs=[-1e-9, -12.5])
    saved = store.add_turn(r, fingerprint="fp1")
    got = store.get_turn(saved.id)
    for name in ("session_id", "turn_type", "messages", "tools", "prompt_text", "prompt_ids", "response_ids",
                 "response_logprobs", "response_text", "reasoning_content", "tool_calls", "finish_reason",
                 "weight_version", "model", "prefix_ok", "prefix_break_at", "turn_uid", "turn_index"):
        assert getattr(got, name) == getattr(r, name), name
    assert store.lookup_continuation(["nope", "fp1"]) == ("s", saved.id, "fp1")
    assert store.lookup_continuation(["nope"]) is None
    assert store.get_turn(999) is None and store.last_main_turn("none") is None


def test_wal_mode_and_full_sync(store):
    store.add_turn(rec("s"))
    with sqlite3.connect(store.path) as db:  # journal mode is a property of the file
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert store._db.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
    assert (store.dir / "trajectories.sqlite-wal").exists()


def test_reopen_keeps_everything(tmp_path):
    s1 = TrajectoryStore(tmp_path / "buf")
    for i in range(3):
        s1.touch_session(f"s{i}", "header")
        t = s1.add_turn(rec(f"s{i}"), fingerprint=f"fp{i}")
    s1.set_next_state(t.id, "next", "user")
    side = s1.add_turn(rec("s0", "side"))
    before = [(x.id, x.session_id, x.turn_index, x.status, x.next_state) for x in s1.turns()]
    s1.close()
    s2 = TrajectoryStore(tmp_path / "buf")
    assert [(x.id, x.session_id, x.turn_index, x.status, x.next_state) for x in s2.turns()] == before
    assert s2.session_ids() == ["s0", "s1", "s2"]
    assert s2.lookup_continuation(["fp1"]) == ("s1", 2, "fp1")
    more = s2.add_turn(rec("s0"))
    assert (more.turn_index, more.id) == (2, side.id + 1)
    s2.close()
    s3 = TrajectoryStore(tmp_path / "buf")
    assert len(s3.turns()) == 5 and s3.counts()["sessions"] == 3
    s3.close()


def test_corrupt_file_is_an_error_not_a_truncation(tmp_path):
    buf = tmp_path / "buf"
    buf.mkdir()
    garbage = b"this is not a database" * 100
    (buf / "trajectories.sqlite").write_bytes(garbage)
    with pytest.raises(sqlite3.DatabaseError):
        TrajectoryStore(buf)
    assert (buf / "trajectories.sqlite").read_bytes() == garbage


def test_two_store_objects_on_one_file(tmp_path):
    s1, s2 = TrajectoryStore(tmp_path / "buf"), TrajectoryStore(tmp_path / "buf")
    try:
        t = s1.add_turn(rec("s"))
        assert [x.id for x in s2.turns()] == [t.id]  # committed: visible at once
        assert s2.set_next_state(t.id, "from s2", "user") is True
        assert s1.get_turn(t.id).next_state == "from s2"
        t2 = s2.add_turn(rec("s"))
        assert t2.turn_index == 1
        s1.finalize_turn(t2.id)
        assert len(s1.claim_ready(1, "w1")) == 1 and len(s2.claim_ready(5, "w2")) == 1
        assert s1.claim_ready(5) == [] and s2.claim_ready(5) == []
        assert s2.counts() == {"claimed": 2, "sessions": 0}
    finally:
        s1.close()
        s2.close()


def test_concurrent_add_turn_keeps_turn_index_dense(tmp_path):
    stores = [TrajectoryStore(tmp_path / "buf"), TrajectoryStore(tmp_path / "buf")]
    errors: list[BaseException] = []
    barrier = threading.Barrier(8)

    def worker(k: int) -> None:
        try:
            barrier.wait()
            for i in range(20):
                sid = f"s{(k + i) % 3}"
                stores[(k + i) % 2].add_turn(rec(sid, "side" if i % 5 == 0 else "main"))
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(60)
    try:
        assert not errors, errors
        all_turns = stores[0].turns()
        assert len(all_turns) == 160
        for sid in ("s0", "s1", "s2"):
            idx = [t.turn_index for t in stores[1].turns(session_id=sid)]
            assert sorted(idx) == list(range(len(idx)))
            assert idx == sorted(idx)  # insertion order follows turn_index
        assert len({t.turn_uid for t in all_turns}) == 160
        assert sum(1 for t in all_turns if t.turn_type == "side") == 32
    finally:
        for s in stores:
            s.close()
