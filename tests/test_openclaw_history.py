"""``openclaw-rl import-openclaw`` on real OpenClaw history (no server, no model).

The fixture (``tests/fixtures/openclaw-history``, see :mod:`tests.support.openclaw_history`) is
what ``openclaw@2026.9.6`` wrote in its agent store while the real agent talked to our server:
a chat session (a greeting, a correction, a heartbeat poll) and a tool session (a ``read`` tool
call, its result, the answer). Each kind of bad input the issue lists is made from
it: a truncated JSONL line, a locked and a corrupt store, a tool call without a result, unknown
format versions; and re-importing is idempotent.
"""

from __future__ import annotations

import io
import json
import shutil
import sqlite3
from pathlib import Path

import pytest
import zstandard

from openclaw_rl import cli
from openclaw_rl.capture.forget import forget
from openclaw_rl.capture.openclaw_history.importer import plan_import, read_sources, write_plan
from openclaw_rl.capture.openclaw_history.sources import HistoryVersionError, read_state_dir
from openclaw_rl.capture.openclaw_history.turns import session_turns
from openclaw_rl.capture.store import TrajectoryStore
from openclaw_rl.capture.turn_rules import TurnRules
from tests.support.openclaw_history import build_agent_store, load_rows

CORRECTION = "No, that is wrong. Say goodbye instead."


def _state(tmp_path: Path, rows: dict | None = None, agent: str = "main") -> Path:
    """An OpenClaw state folder holding the fixture's agent store (or ``rows``)."""
    state = tmp_path / "state"
    build_agent_store(state / "agents" / agent / "agent" / "openclaw-agent.sqlite", rows)
    return state


def _name(first_user: str) -> str:
    return {"hi there": "chat", "please read hello.txt": "tools"}[first_user]


def _session_ids(rows: dict) -> dict[str, str]:
    """``{"chat": id, "tools": id}`` of the fixture's two sessions (told apart by their first message)."""
    out = {}
    for e in rows["transcript_events"]:
        event = json.loads(e["event_json"]) if e["event_json"] else {}
        m = event.get("message") or {}
        if m.get("role") == "user" and m.get("content") in ("hi there", "please read hello.txt"):
            out[_name(m["content"])] = e["session_id"]
    return out


def _session_events(rows: dict, name: str) -> list[dict]:
    """The transcript events of the fixture session ``name``, in order (header first)."""
    sid = _session_ids(rows)[name]
    return [json.loads(e["event_json"]) for e in sorted(rows["transcript_events"], key=lambda e: e["seq"])
            if e["session_id"] == sid and e["event_json"] is not None]


def _write_jsonl(path: Path, events: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(e) + "\n" for e in events))
    return path


def _import(args: list[str], capsys) -> tuple[int, str]:
    rc = cli.main(["import-openclaw", *args])
    return rc, capsys.readouterr().err


def _by_name(found) -> dict:
    return {_name(next(e["message"]["content"] for e in s.entries if e.get("type") == "message")): s
            for s in found.sessions}


def test_store_sessions_become_main_and_side_turns_with_next_states(tmp_path):
    found = read_state_dir(_state(tmp_path))
    assert found.problems == []
    sessions = _by_name(found)
    assert set(sessions) == {"chat", "tools"}
    assert all(s.session_key.startswith("agent:main:explicit:") for s in sessions.values())
    chat = session_turns(sessions["chat"], TurnRules())
    assert [t.turn_type.value for t in chat] == ["main", "main", "side"]
    assert chat[2].side_reason == "heartbeat"
    assert (chat[0].next_state, chat[0].next_state_role) == (CORRECTION, "user")
    assert chat[1].next_state is None  # only the heartbeat poll followed: a side request links no next state
    assert chat[1].messages[-1] == {"role": "user", "content": CORRECTION}
    tools = session_turns(sessions["tools"], TurnRules())
    assert [t.turn_type.value for t in tools] == ["main", "main"]
    call = tools[0].tool_calls[0]
    assert call["function"]["name"] == "read" and json.loads(call["function"]["arguments"]) == {"path": "hello.txt"}
    assert tools[0].response_text == '<tool_call>\n{"name": "read", "arguments": {"path": "hello.txt"}}\n</tool_call>'
    assert tools[0].next_state == f"[tool {call['id']}] secret-value-42" and tools[0].next_state_role == "tool"
    assert tools[1].messages[-1] == {"role": "tool", "tool_call_id": call["id"], "content": "secret-value-42\n"}
    for t in chat + tools:  # ids come later, from the policy's template; the reply id OpenClaw kept is ours
        assert t.prompt_ids == [] and t.completion_id.startswith("chatcmpl-")
        assert t.turn_uid.startswith(f"openclaw:{t.session_id}:")


def test_import_is_idempotent_and_keeps_what_was_imported(tmp_path, capsys):
    state, out = _state(tmp_path), tmp_path / "buf"
    rc, err = _import(["--state-dir", str(state), "--out", str(out), "--yes"], capsys)
    assert rc == 0 and "imported 2 session(s), 5 turn(s)" in err
    store = TrajectoryStore(out)
    first = [(t.turn_uid, t.status.value, t.next_state) for t in store.turns()]
    assert [s for _, s, _ in first].count("side") == 1 and len(first) == 5
    store.close()
    rc, err = _import(["--state-dir", str(state), "--out", str(out), "--yes"], capsys)
    assert rc == 0 and "will import 0 session(s)" in err and "skipped 2 session(s): already imported" in err
    store = TrajectoryStore(out)
    assert [(t.turn_uid, t.status.value, t.next_state) for t in store.turns()] == first
    store.close()


def test_plan_summary_names_agents_sessions_dates_and_counts(tmp_path, capsys):
    rc, err = _import(["--state-dir", str(_state(tmp_path)), "--out", str(tmp_path / "buf")], capsys)
    # not a terminal and no --yes: it shows the plan, then refuses in one line; nothing is written
    assert rc == 2 and "will import 2 session(s) from 20" in err and "UTC: 4 main turn(s) (2 with a next state), " \
                                                                     "1 side turn(s)" in err
    assert "agent main: 2 session(s)" in err
    assert err.strip().splitlines()[-1] == ("openclaw-rl import-openclaw: error: not a terminal: run again with --yes "
                                            "to import without asking")
    store = TrajectoryStore(tmp_path / "buf")
    assert store.turns() == []
    store.close()


def test_a_session_captured_live_or_forgotten_is_not_imported(tmp_path):
    found = read_state_dir(_state(tmp_path))
    chat = _by_name(found)["chat"]
    store = TrajectoryStore(tmp_path / "buf")
    # the live capture of the chat session: our server named it by OpenClaw's session id
    store.touch_session(chat.session_id, "openclaw_runtime")
    plan = plan_import(found, store, TurnRules())
    tools_id = _by_name(found)["tools"].session_id
    assert [s.session_id for s, _ in plan.sessions] == [tools_id]
    assert plan.skipped == {"captured live": [chat.session_id]}
    write_plan(store, plan)
    forget(store, [tools_id])
    plan = plan_import(read_state_dir(_state(tmp_path / "again")), store, TurnRules())
    assert plan.sessions == [] and plan.skipped == {"captured live": [chat.session_id], "forgotten": [tools_id]}
    store.close()


def test_truncated_jsonl_line_skips_that_session_only(tmp_path, capsys):
    rows = load_rows()
    state = _state(tmp_path, {k: [] if k != "schema_meta" else v for k, v in rows.items()})
    sessions = state / "agents" / "main" / "sessions"
    good = _write_jsonl(sessions / "good.jsonl", _session_events(rows, "tools"))
    bad = _write_jsonl(sessions / "bad.jsonl", _session_events(rows, "chat"))
    bad.write_text(bad.read_text()[:-40])  # a write cut off mid-line
    rc, err = _import(["--state-dir", str(state), "--out", str(tmp_path / "buf"), "--yes"], capsys)
    assert rc == 0 and "imported 1 session(s), 2 turn(s)" in err
    (problem,) = [line for line in err.splitlines() if line.startswith("problem:")]
    assert f"{bad}:" in problem and "truncated or invalid JSON line" in problem and problem.endswith("session skipped")
    store = TrajectoryStore(tmp_path / "buf")
    assert {t.turn_uid.split(":")[1] for t in store.turns()} == {json.loads(good.read_text().splitlines()[0])["id"]}
    store.close()


def test_tool_call_without_result_skips_that_session(tmp_path, capsys):
    rows = load_rows()
    tools_id = _session_ids(rows)["tools"]
    result = next(e for e in rows["transcript_events"] if e["session_id"] == tools_id and e["event_json"]
                  and json.loads(e["event_json"]).get("message", {}).get("role") == "toolResult")
    rows["transcript_events"].remove(result)  # the result never written (the gateway died mid-tool)
    rows["session_transcript_active_events"] = []  # the active branch is then the last entry's chain
    event = json.loads(result["event_json"])
    for e in rows["transcript_events"]:  # keep the chain whole: the result's child now hangs on its parent
        ev = json.loads(e["event_json"]) if e["event_json"] else None
        if ev and ev.get("parentId") == event["id"]:
            ev["parentId"] = event["parentId"]
            e["event_json"] = json.dumps(ev)
    rc, err = _import(["--state-dir", str(_state(tmp_path, rows)), "--out", str(tmp_path / "buf"), "--yes"], capsys)
    assert rc == 0 and "imported 1 session(s), 3 turn(s)" in err
    (problem,) = [line for line in err.splitlines() if line.startswith("problem:")]
    assert f"session {tools_id}" in problem and "(read)" in problem and "has no result; session skipped" in problem


def test_corrupt_store_skips_that_agent_only(tmp_path, capsys):
    state = _state(tmp_path)
    shutil.copytree(state / "agents" / "main", state / "agents" / "work")
    broken = state / "agents" / "work" / "agent" / "openclaw-agent.sqlite"
    broken.write_bytes(b"this is not a database" * 200)
    rc, err = _import(["--state-dir", str(state), "--out", str(tmp_path / "buf"), "--yes"], capsys)
    assert rc == 0 and "imported 2 session(s), 5 turn(s)" in err
    (problem,) = [line for line in err.splitlines() if line.startswith("problem:")]
    assert f"{broken}: not a readable SQLite database" in problem and problem.endswith("its sessions are skipped")


def test_locked_store_is_reported_not_waited_on(tmp_path, capsys):
    state = _state(tmp_path)
    path = state / "agents" / "main" / "agent" / "openclaw-agent.sqlite"
    writer = sqlite3.connect(path)
    writer.execute("PRAGMA journal_mode=DELETE")
    writer.execute("BEGIN EXCLUSIVE")  # a writer that holds the file (what a stuck rollback-mode writer does)
    try:
        rc, err = _import(["--state-dir", str(state), "--out", str(tmp_path / "buf"), "--yes"], capsys)
    finally:
        writer.rollback()
        writer.close()
    assert rc == 0 and "will import 0 session(s)" in err
    (problem,) = [line for line in err.splitlines() if line.startswith("problem:")]
    assert f"{path}: locked by another process" in problem


def test_unknown_store_version_is_one_line_and_imports_nothing(tmp_path, capsys):
    rows = load_rows()
    rows["schema_meta"][0].update(schema_version=24, app_version="2026.10.1")
    rc, err = _import(["--state-dir", str(_state(tmp_path, rows)), "--out", str(tmp_path / "buf"), "--yes"], capsys)
    assert rc == 2 and len(err.strip().splitlines()) == 1
    assert "agent store schema version 24 (written by OpenClaw 2026.10.1); this importer reads version 23" in err
    assert not (tmp_path / "buf").exists()


def test_unknown_transcript_version_is_one_line(tmp_path, capsys):
    rows = load_rows()
    state = _state(tmp_path, {k: [] if k != "schema_meta" else v for k, v in rows.items()})
    events = _session_events(rows, "chat")
    events[0]["version"] = 5
    _write_jsonl(state / "agents" / "main" / "sessions" / "s.jsonl", events)
    with pytest.raises(HistoryVersionError, match="OpenClaw transcript version 5; this importer reads version 4"):
        read_sources(str(state), [], None)
    rc, err = _import(["--state-dir", str(state), "--out", str(tmp_path / "buf"), "--yes"], capsys)
    assert rc == 2 and len(err.strip().splitlines()) == 1 and "transcript version 5" in err


def test_legacy_jsonl_of_a_migrated_session_is_not_read_twice(tmp_path):
    rows = load_rows()
    state = _state(tmp_path)
    _write_jsonl(state / "agents" / "main" / "sessions" / "chat.jsonl", _session_events(rows, "chat"))
    found = read_state_dir(state)
    assert sorted(_by_name(found)) == ["chat", "tools"] and len(found.sessions) == 2
    assert all(s.origin.endswith("openclaw-agent.sqlite") for s in found.sessions)


def test_since_and_agent_select_sessions(tmp_path, capsys):
    state = _state(tmp_path)
    rc, err = _import(["--state-dir", str(state), "--since", "2999-01-01", "--out", str(tmp_path / "b1"), "--yes"],
                      capsys)
    assert rc == 0 and "skipped 2 session(s): before --since" in err
    rc, err = _import(["--state-dir", str(state), "--agent", "nobody", "--out", str(tmp_path / "b2")], capsys)
    assert rc == 2 and err.strip() == f"openclaw-rl import-openclaw: error: {state}: no agent 'nobody' under agents/"
    rc, err = _import(["--out", str(tmp_path / "b3")], capsys)
    assert rc == 2 and "give --state-dir DIR or --bundle PATH" in err


def _compress_events(state: Path, blob=None) -> int:
    """Store the chat session's message events zstd-compressed, as OpenClaw does for large ones
    (``event_json`` NULL, ``event_zstd`` + ``event_utf8_bytes``); ``blob`` replaces the compressed
    bytes (a corrupt event). Returns how many events were rewritten."""
    sid = _session_ids(load_rows())["chat"]
    db = sqlite3.connect(state / "agents" / "main" / "agent" / "openclaw-agent.sqlite")
    db.execute("PRAGMA ignore_check_constraints=ON")  # navigation_json's CHECK needs OpenClaw's index record
    rows = db.execute("SELECT seq, event_json FROM transcript_events WHERE session_id=? AND event_json LIKE "
                      "'{\"type\":\"message\"%'", (sid,)).fetchall()
    for seq, text in rows:
        data = text.encode()
        db.execute("UPDATE transcript_events SET event_json=NULL, event_zstd=?, event_utf8_bytes=?, "
                   "navigation_json='{}' WHERE session_id=? AND seq=?",
                   (blob if blob is not None else zstandard.ZstdCompressor().compress(data), len(data), sid, seq))
    db.commit()
    db.close()
    return len(rows)


def test_compressed_events_read_like_plain_ones(tmp_path):
    plain = {t.turn_uid: (t.response_text, t.next_state) for s in read_state_dir(_state(tmp_path / "a")).sessions
             for t in session_turns(s, TurnRules())}
    state = _state(tmp_path / "b")
    assert _compress_events(state) == 6
    found = read_state_dir(state)
    assert found.problems == []
    assert {t.turn_uid: (t.response_text, t.next_state) for s in found.sessions
            for t in session_turns(s, TurnRules())} == plain


def test_corrupt_event_skips_that_session_only(tmp_path, capsys):
    state = _state(tmp_path)
    _compress_events(state, blob=b"\x28\xb5\x2f\xfd not really zstd")
    rc, err = _import(["--state-dir", str(state), "--out", str(tmp_path / "buf"), "--yes"], capsys)
    assert rc == 0 and "imported 1 session(s), 2 turn(s)" in err
    (problem,) = [line for line in err.splitlines() if line.startswith("problem:")]
    assert f"session {_session_ids(load_rows())['chat']}" in problem and "is corrupt" in problem


BUNDLE = Path(__file__).resolve().parent / "fixtures" / "openclaw-history" / "bundle"


def test_trajectory_bundle_imports_like_the_store(tmp_path, capsys):
    # the bundle `openclaw sessions export-trajectory` wrote for the tool session (its events.jsonl cut
    # to the run's start, the one runtime event read)
    rc, err = _import(["--bundle", str(BUNDLE), "--out", str(tmp_path / "buf"), "--yes"], capsys)
    assert rc == 0 and "imported 1 session(s), 2 turn(s)" in err
    store = TrajectoryStore(tmp_path / "buf")
    from_bundle = [(t.turn_uid, t.turn_type.value, t.response_text, t.next_state) for t in store.turns()]
    store.close()
    tools = _by_name(read_state_dir(_state(tmp_path)))["tools"]
    assert from_bundle == [(t.turn_uid, t.turn_type.value, t.response_text, t.next_state)
                           for t in session_turns(tools, TurnRules())]
    rc, err = _import(["--state-dir", str(_state(tmp_path / "s")), "--out", str(tmp_path / "buf"), "--yes"], capsys)
    assert rc == 0 and "imported 1 session(s), 3 turn(s)" in err and "skipped 1 session(s): already imported" in err


def test_unknown_bundle_version_is_one_line(tmp_path, capsys):
    bundle = tmp_path / "bundle"
    shutil.copytree(BUNDLE, bundle)
    manifest = json.loads((bundle / "manifest.json").read_text())
    manifest["schemaVersion"] = 2
    (bundle / "manifest.json").write_text(json.dumps(manifest))
    rc, err = _import(["--bundle", str(bundle), "--out", str(tmp_path / "buf"), "--yes"], capsys)
    assert rc == 2 and len(err.strip().splitlines()) == 1
    assert "trajectory bundle 'openclaw-trajectory' schema version 2; this importer reads" in err


def test_a_session_that_went_on_after_its_import_gets_its_new_turns(tmp_path, capsys):
    rows = load_rows()
    state = _state(tmp_path, {k: [] if k != "schema_meta" else v for k, v in rows.items()})
    events = _session_events(rows, "chat")
    first_reply = next(i for i, e in enumerate(events) if (e.get("message") or {}).get("role") == "assistant")
    chat = _write_jsonl(state / "agents" / "main" / "sessions" / "chat.jsonl", events[:first_reply + 1])
    out = tmp_path / "buf"
    rc, err = _import(["--state-dir", str(state), "--out", str(out), "--yes"], capsys)
    assert rc == 0 and "imported 1 session(s), 1 turn(s)" in err
    store = TrajectoryStore(out)
    (greeting,) = store.turns()
    assert greeting.next_state is None  # nothing followed it yet
    store.close()
    _write_jsonl(chat, events)  # the user went on: a correction, then a heartbeat poll
    rc, err = _import(["--state-dir", str(state), "--out", str(out), "--yes"], capsys)
    assert rc == 0 and "will add 2 turn(s) to 1 session(s) imported before (1 earlier turn(s) get their next state)" in err
    assert "imported 0 session(s), 2 turn(s)" in err
    store = TrajectoryStore(out)
    turns = store.turns()
    assert [t.turn_uid for t in turns][0] == greeting.turn_uid and len(turns) == 3
    assert turns[0].next_state == CORRECTION and [t.turn_index for t in turns] == [0, 1, 2]
    assert [t.turn_type.value for t in turns] == ["main", "main", "side"]
    store.close()
    rc, err = _import(["--state-dir", str(state), "--out", str(out), "--yes"], capsys)
    assert rc == 0 and "skipped 1 session(s): already imported" in err and "will add" not in err


def test_the_prompt_answered_by_end_of_input_imports_nothing_and_creates_no_store(tmp_path, capsys, monkeypatch):
    class Terminal(io.StringIO):
        def isatty(self):
            return True

    monkeypatch.setattr("sys.stdin", Terminal(""))  # Ctrl-D at the prompt: input() raises EOFError
    out = tmp_path / "buf"
    rc, err = _import(["--state-dir", str(_state(tmp_path)), "--out", str(out)], capsys)
    assert rc == 1 and err.strip().endswith("nothing imported") and "Traceback" not in err
    assert not (out / TrajectoryStore.FILENAME).exists()


def test_an_unreadable_entry_in_sessions_is_one_problem_and_the_store_still_imports(tmp_path, capsys):
    state = _state(tmp_path)
    sessions = state / "agents" / "main" / "sessions"
    sessions.mkdir(parents=True)
    (sessions / "gone.jsonl").symlink_to(tmp_path / "nowhere.jsonl")
    (sessions / "folder.jsonl").mkdir()
    rc, err = _import(["--state-dir", str(state), "--out", str(tmp_path / "buf"), "--yes"], capsys)
    assert rc == 0 and "imported 2 session(s), 5 turn(s)" in err
    problems = [line for line in err.splitlines() if line.startswith("problem:")]
    assert len(problems) == 2 and all(p.endswith("session skipped") for p in problems)


@pytest.mark.parametrize("args, message", [
    (["--bundle", "no-such-bundle"], "--bundle no-such-bundle: no such file or folder"),
    (["--state-dir", "no-such-state"], "no-such-state: no such folder"),
])
def test_a_path_that_does_not_exist_is_a_one_line_error(tmp_path, capsys, args, message):
    rc, err = _import([*args, "--out", str(tmp_path / "buf"), "--yes"], capsys)
    assert rc == 2 and len(err.strip().splitlines()) == 1 and message in err
    assert not (tmp_path / "buf").exists()
