"""The real OpenClaw agent's own history, imported, against what our server recorded live.

The real agent (npm ``openclaw@2026.9.6``, ``openclaw agent --local``: turns of one kept session
share OpenClaw's agent store) talks to our server on the tiny tool model through two multi-turn
sessions: a chat (a greeting, a correction, a heartbeat poll: OpenClaw's default heartbeat prompt
sent as the turn's message) and a tool session (``read`` on a workspace file, its result, the
answer). Then ``openclaw-rl import-openclaw`` reads OpenClaw's store into a fresh buffer and each
imported turn is checked against the live turn of the same model request: turn type and side
reason, the reply's ``chatcmpl-`` id, its text and tool calls, the user message it answered and
its next state (the text must match), and its response ids made from the text with the policy's
chat template equal the sampled ones wherever that template round-trips the reply.

Two things OpenClaw adds to each request and never writes to its history are left out of the
text comparison: the ``[Wed 2026-12-02 06:25 UTC]`` envelope before each user message (host time
zone) and, in tool-call ids sent back, the characters its ``strict`` id mode drops
(``call_5aa1...`` is sent as ``call5aa1...``).
"""

from __future__ import annotations

import json
import re
import uuid

import pytest

from openclaw_rl import cli
from openclaw_rl.capture.sessions import message_text
from openclaw_rl.capture.store import TrajectoryStore
from openclaw_rl.capture.text_turns import end_of_turn_id, tokenize_turn
from openclaw_rl.capture.turn_rules import TurnRules
from openclaw_rl.models import load_tokenizer
from tests.openclaw_agent.harness import run_openclaw_local

pytestmark = [pytest.mark.openclaw, pytest.mark.slow]

#: OpenClaw's default heartbeat prompt (``HEARTBEAT_PROMPT`` in its ``auto-reply/heartbeat``)
HEARTBEAT = ("Follow the heartbeat monitor scratch context when provided. Recurring tasks are automations; create or "
             "change their schedules with the automations tool, not heartbeat scratch. Do not infer or repeat old "
             "tasks from prior chats. If nothing needs attention, reply NO_REPLY.")
CORRECTION = "No, that is wrong. Say goodbye instead."
ENVELOPE = re.compile(r"(?m)^\[[A-Z][a-z]{2} \d{4}-\d{2}-\d{2} \d{2}:\d{2}(?::\d{2})? [^\]\n]+\] ")
TOOL_TAG = re.compile(r"\[tool ([^\]]*)\]")


def _as_history(text: str | None) -> str | None:
    """``text`` without what OpenClaw adds per request only (module docstring)."""
    if text is None:
        return None
    return TOOL_TAG.sub(lambda m: "[tool " + re.sub(r"[^A-Za-z0-9]", "", m.group(1)) + "]", ENVELOPE.sub("", text))


def _last_user(messages: list[dict]) -> str:
    rules = TurnRules()
    return next(rules.strip_context(message_text(m)).strip() for m in reversed(messages)
                if m["role"] == "user" and rules.strip_context(message_text(m)).strip())


def _calls(turn) -> list:
    return [(c["function"]["name"], json.loads(c["function"]["arguments"])) for c in turn.tool_calls or []]


def test_imported_history_matches_live_capture(tool_server, tool_model, work, tmp_path):
    chat, tools = f"agent:main:explicit:{uuid.uuid4()}", f"agent:main:explicit:{uuid.uuid4()}"
    ids = {}
    for key, message, with_tools in ((chat, "hi there", False), (chat, CORRECTION, False), (chat, HEARTBEAT, False),
                                     (tools, "please read hello.txt", True)):
        envelope = run_openclaw_local(tool_server.base_url, "sk-test", "tiny-tools", message, work / "history", key,
                                      work / "workspace", timeout=600, supports_tools=with_tools)
        ids[key] = envelope["meta"]["agentMeta"]["sessionId"]
    assert ids[chat] != ids[tools]
    state = work / "history" / "openclaw" / "state"
    assert cli.main(["import-openclaw", "--state-dir", str(state), "--out", str(tmp_path / "buf"), "--yes"]) == 0

    live_store, imported = TrajectoryStore(tool_server.buffer_dir), TrajectoryStore(tmp_path / "buf")
    tokenizer = load_tokenizer(str(tool_model))
    eot = end_of_turn_id(tokenizer)
    round_trips = 0
    for key in (chat, tools):
        live, got = live_store.turns(session_id=ids[key]), imported.turns(session_id=ids[key])
        assert [t.turn_type for t in got] == [t.turn_type for t in live]
        for lv, im in zip(live, got):
            assert (im.completion_id, im.side_reason) == (lv.completion_id, lv.side_reason)
            assert im.response_text == lv.response_text and _calls(im) == _calls(lv)
            assert _last_user(im.messages) == _as_history(_last_user(lv.messages))
            if lv.turn_type == "main":
                assert _as_history(im.next_state) == _as_history(lv.next_state)
                assert im.next_state_role == lv.next_state_role
            _, _, response_ids = tokenize_turn(im, tokenizer)
            if tokenizer(lv.response_text, add_special_tokens=False)["input_ids"] + [eot] == lv.response_ids:
                assert response_ids == lv.response_ids
                round_trips += 1
    # the conversations themselves: OpenClaw's flow, whatever the model said
    chat_turns, tool_turns = imported.turns(session_id=ids[chat]), imported.turns(session_id=ids[tools])
    # a heartbeat reply with no visible text is retried by OpenClaw (its empty-answer retry): a side
    # turn of the same heartbeat run, live and imported alike, however many the model needs
    assert [t.turn_type for t in chat_turns[:3]] == ["main", "main", "side"]
    assert all(t.turn_type == "side" and t.side_reason == "heartbeat" for t in chat_turns[2:])
    assert chat_turns[0].next_state == CORRECTION and chat_turns[1].messages[-1]["content"] == CORRECTION
    assert [t.turn_type for t in tool_turns] == ["main", "main"] and _calls(tool_turns[0]) == [("read",
                                                                                                {"path": "hello.txt"})]
    assert tool_turns[0].next_state_role == "tool" and "secret-value-42" in tool_turns[0].next_state
    print(f"response ids equal on the {round_trips} of 5 turns whose sampled ids the template round-trips")
    imported.close()

    # importing into the live buffer: both sessions were captured live, nothing is counted twice
    before = len(live_store.turns())
    live_store.close()
    assert cli.main(["import-openclaw", "--state-dir", str(state), "--out", str(tool_server.buffer_dir),
                     "--yes"]) == 0
    live_store = TrajectoryStore(tool_server.buffer_dir)
    assert len(live_store.turns()) == before
    live_store.close()
