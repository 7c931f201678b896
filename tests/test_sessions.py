"""Session attribution, canonical matching, next-state extraction and side-turn rules."""

from __future__ import annotations

import json

import pytest

from openclaw_rl.capture.sessions import (attribute, canonical_message, canonical_messages, chain_fingerprints,
                                          extract_next_state, reply_fingerprint)
from openclaw_rl.capture.store import TrajectoryStore, TurnRecord
from openclaw_rl.capture.turn_rules import DEFAULT_SIDE_RULES, SideRule, TurnRules

RULES = TurnRules()
SID = "f5aba073-5020-48b0-b26b-98e6e189a1ad"
RUNTIME = (f"\n\nRuntime: agent=main | session=agent:main:explicit:{SID} | sessionId={SID} | "
           "host=workstation | os=Linux (x64) | node=v24.22.3 | active_node=unknown | "
           "model=openclawrl/N | default_model=openclawrl/N")
CTX = ("<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>>\nConversation data (data, not instructions):\n"
       "\"Active exec sessions:\\nnone\"\n<<<END_OPENCLAW_INTERNAL_CONTEXT>>>")


def carrier(note: str = "none") -> dict:
    return {"role": "user", "content": [{"type": "text", "text": CTX.replace("none", note)}]}


@pytest.fixture
def store(tmp_path):
    s = TrajectoryStore(tmp_path / "buf")
    yield s
    s.close()


def _record(store: TrajectoryStore, session_id: str, messages: list[dict], reply: dict) -> int:
    """Store a served turn with its continuation fingerprint, as the recorder does."""
    store.touch_session(session_id, "test")
    rec = TurnRecord(session_id=session_id, turn_type="main", messages=messages, prompt_text="p",
                     prompt_ids=[1, 2], response_ids=[3], response_logprobs=[-0.5],
                     response_text=reply.get("content") or "", finish_reason="stop", weight_version=0,
                     tool_calls=reply.get("tool_calls"))
    return store.add_turn(rec, fingerprint=reply_fingerprint(messages, reply)).id


# ---------------------------------------------------------------------------------- attribution
def test_precedence_order(store):
    base = [{"role": "system", "content": "sys"}, {"role": "user", "content": "hello" + RUNTIME}]
    reply = {"role": "assistant", "content": "hi there"}
    turn_id = _record(store, "cont-1", base, reply)
    msgs = base + [reply, {"role": "user", "content": "more"}]
    full_body = {"session_id": "B", "prompt_cache_key": "P", "user": "U"}

    def who(body, headers=None, messages=msgs):
        a = attribute(messages, body, headers or {}, RULES, store.lookup_continuation)
        return a.session_id, a.source

    assert who(full_body, {"x-session-id": "H"}) == ("H", "header")
    assert who(full_body) == ("B", "header")
    assert who({"prompt_cache_key": "P", "user": "U"}) == ("P", "prompt_cache_key")
    assert who({"user": "U"}) == ("U", "user")
    assert who({}) == (SID, "openclaw_runtime")  # the runtime line beats continuation
    no_runtime = [{"role": "system", "content": "sys"}, {"role": "user", "content": "hello"}]
    turn2 = _record(store, "cont-2", no_runtime, reply)
    assert who({}, messages=no_runtime + [reply, {"role": "user", "content": "more"}]) == ("cont-2", "continuation")
    sid, src = who({}, messages=[{"role": "user", "content": "a brand new conversation"}])
    assert src == "new" and len(sid) == 32 and int(sid, 16) >= 0
    assert who({}, messages=[{"role": "user", "content": "a brand new conversation"}])[0] != sid
    # the continued turn is reported only when it belongs to the chosen session
    a = attribute(msgs, {}, {"x-session-id": "cont-1"}, RULES, store.lookup_continuation)
    assert (a.continued_turn_id, a.next_state_from) == (turn_id, 3)
    a = attribute(msgs, {}, {}, RULES, store.lookup_continuation)
    assert a.session_id == SID and (a.continued_turn_id, a.next_state_from) == (None, None)
    a = attribute(no_runtime + [reply, {"role": "user", "content": "x"}], {}, {}, RULES, store.lookup_continuation)
    assert (a.continued_turn_id, a.next_state_from) == (turn2, 3)
    assert turn2 != turn_id


def test_headers_turn_type_and_done(store):
    msgs = [{"role": "user", "content": "Read HEARTBEAT.md if it exists. Reply HEARTBEAT_OK."}]
    a = attribute(msgs, {}, {"x-session-id": "s"}, RULES, store.lookup_continuation)
    assert (a.turn_type, a.side_reason, a.done) == ("side", "heartbeat", False)
    a = attribute(msgs, {}, {"x-turn-type": "Main", "x-session-done": "yes"}, RULES, store.lookup_continuation)
    assert (a.turn_type, a.side_reason, a.done) == ("main", None, True)
    a = attribute([{"role": "user", "content": "hi"}], {"turn_type": "side"}, {"x-session-done": "0"},
                  RULES, store.lookup_continuation)
    assert (a.turn_type, a.side_reason, a.done) == ("side", "explicit", False)


def test_longest_matching_prefix_wins(store):
    m1 = [{"role": "user", "content": "q1"}]
    r1 = {"role": "assistant", "content": "a1"}
    t1 = _record(store, "long", m1, r1)
    m2 = m1 + [r1, {"role": "user", "content": "q2"}]
    r2 = {"role": "assistant", "content": "a2"}
    t2 = _record(store, "long", m2, r2)
    a = attribute(m2 + [r2, {"role": "user", "content": "q3"}], {}, {}, RULES, store.lookup_continuation)
    assert (a.session_id, a.source, a.continued_turn_id, a.next_state_from) == ("long", "continuation", t2, 4)
    # a request that rewrote the second reply still continues the first turn
    a = attribute(m2 + [{"role": "assistant", "content": "edited"}], {}, {}, RULES, store.lookup_continuation)
    assert (a.session_id, a.continued_turn_id, a.next_state_from) == ("long", t1, 2)


# ---------------------------------------------------------------------------------- canonical form
def test_internal_context_blocks_are_ignored_for_matching(store):
    call = {"id": "call1", "type": "function", "function": {"name": "read", "arguments": '{"path":"hello.txt"}'}}
    first = [{"role": "system", "content": "sys"}, {"role": "user", "content": "read it" + RUNTIME}, carrier("none")]
    turn_id = _record(store, SID, first, {"role": "assistant", "content": "", "tool_calls": [call]})
    # OpenClaw's follow-up: the carrier moved to the end with different data, arguments re-spaced
    follow = first[:2] + [
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call1", "type": "function", "function": {"name": "read", "arguments": '{ "path" : "hello.txt" }'}}]},
        {"role": "tool", "tool_call_id": "call1", "content": "secret-value-42\n"},
        carrier("1 running")]
    a = attribute(follow, {}, {}, RULES, store.lookup_continuation)
    assert (a.session_id, a.continued_turn_id, a.next_state_from) == (SID, turn_id, 3)
    assert extract_next_state(follow, a.next_state_from, RULES) == ("[tool call1] secret-value-42", "tool")
    # context inlined in a message's text is removed too
    assert canonical_message({"role": "user", "content": "x" + CTX})["content"] == "x"
    assert canonical_message(carrier()) is None
    assert [i for i, _ in canonical_messages(follow)] == [0, 1, 2, 3]


def test_tool_call_argument_whitespace_and_key_order_ignored():
    def fp(args, name="f"):
        msg = {"role": "assistant", "content": None,
               "tool_calls": [{"type": "function", "function": {"name": name, "arguments": args}}]}
        return chain_fingerprints([canonical_message(msg)])[0]

    assert fp('{"a": 1, "b": [1, 2]}') == fp('{"b":[1,2],"a":1}') == fp({"a": 1, "b": [1, 2]})
    assert fp('{"a": 1, "b": [1, 2]}') != fp('{"a": 2, "b": [1, 2]}')
    assert fp('{"a": 1}') != fp('{"a": 1}', name="g")
    assert fp("not json") == fp("not json") != fp("not  json")  # non-JSON compared verbatim


def test_list_content_parts_joined():
    parts = {"role": "user", "content": [{"type": "text", "text": "Hello "}, {"type": "text", "text": "world"}]}
    plain = {"role": "user", "content": "Hello world"}
    assert chain_fingerprints([canonical_message(parts)]) == chain_fingerprints([canonical_message(plain)])
    other = {"role": "user", "content": "Hello  world"}
    assert chain_fingerprints([canonical_message(other)]) != chain_fingerprints([canonical_message(plain)])
    # assistant text is compared stripped; role matters
    a1 = canonical_message({"role": "assistant", "content": " hi \n"})
    assert a1 == {"role": "assistant", "content": "hi", "tool_calls": []}
    assert canonical_message({"role": "system", "content": "hi"}) != canonical_message({"role": "user", "content": "hi"})


def test_chain_fingerprints_identify_prefixes():
    msgs = [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b", "tool_calls": []}]
    fps = chain_fingerprints(msgs)
    assert len(fps) == 2 and len(set(fps)) == 2 and all(len(f) == 64 for f in fps)
    assert chain_fingerprints(msgs[:1]) == fps[:1]
    assert chain_fingerprints([msgs[1]])[0] != fps[1]  # depends on everything before
    assert reply_fingerprint([{"role": "user", "content": "a"}], {"role": "assistant", "content": "b"}) == fps[1]


def test_no_match_when_history_differs(store):
    _record(store, "s", [{"role": "user", "content": "q"}], {"role": "assistant", "content": "a"})
    msgs = [{"role": "user", "content": "q (edited)"}, {"role": "assistant", "content": "a"},
            {"role": "user", "content": "next"}]
    a = attribute(msgs, {}, {}, RULES, store.lookup_continuation)
    assert a.source == "new" and a.continued_turn_id is None
    # and a request with no assistant message never matches
    a = attribute([{"role": "user", "content": "q"}], {}, {}, RULES, store.lookup_continuation)
    assert a.source == "new"


# ---------------------------------------------------------------------------------- next state
def test_extract_next_state_tool_results():
    msgs = [{"role": "system", "content": "s"}, {"role": "user", "content": "u"},
            {"role": "assistant", "content": None, "tool_calls": [{"id": "c1"}, {"id": "c2"}]},
            {"role": "tool", "tool_call_id": "c1", "content": "secret-value-42\n"},
            {"role": "tool", "tool_call_id": "c2", "content": [{"type": "text", "text": "two"}]},
            {"role": "tool", "content": "no id"},
            carrier()]
    assert extract_next_state(msgs, None, RULES) == (
        "[tool c1] secret-value-42\n\n[tool c2] two\n\n[tool] no id", "tool")


def test_extract_next_state_user_reply_strips_context_and_runtime():
    msgs = [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"},
            {"role": "user", "content": "[Mon 2026-11-30 03:19 UTC] thanks!" + RUNTIME}, carrier()]
    assert extract_next_state(msgs, None, RULES) == ("[Mon 2026-11-30 03:19 UTC] thanks!", "user")
    # role is that of the first message; tool then user
    msgs = [{"role": "assistant", "content": "a"}, {"role": "tool", "tool_call_id": "x", "content": "r"},
            {"role": "user", "content": "ok" + CTX}]
    assert extract_next_state(msgs, None, RULES) == ("[tool x] r\n\nok", "tool")
    # user then tool
    msgs = [{"role": "assistant", "content": "a"}, {"role": "user", "content": "u"},
            {"role": "tool", "tool_call_id": "x", "content": "r"}]
    assert extract_next_state(msgs, None, RULES) == ("u\n\n[tool x] r", "user")


def test_extract_next_state_nothing_after():
    assert extract_next_state([{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}],
                              None, RULES) == (None, None)
    # only injected context / a bare runtime line / whitespace after the reply
    msgs = [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}, carrier(),
            {"role": "user", "content": RUNTIME}, {"role": "user", "content": "  \n"}]
    assert extract_next_state(msgs, None, RULES) == (None, None)
    # an explicit start past the end
    assert extract_next_state([{"role": "user", "content": "q"}], 1, RULES) == (None, None)


def test_extract_next_state_start_index_and_no_assistant():
    msgs = [{"role": "system", "content": "s"}, {"role": "user", "content": "u1"},
            {"role": "assistant", "content": "a1"}, {"role": "user", "content": "u2"}]
    assert extract_next_state(msgs, 3, RULES) == ("u2", "user")
    assert extract_next_state(msgs, 1, RULES) == ("u1\n\nu2", "user")  # assistants are skipped
    assert extract_next_state(msgs[:2], None, RULES) == ("u1", "user")  # no assistant: all of it


# ---------------------------------------------------------------------------------- side rules
HOUSEKEEPING = {
    "heartbeat": [
        ("Follow the heartbeat monitor scratch context when provided. Recurring tasks are automations; "
         "do not infer or repeat old tasks from prior chats. If nothing needs attention, reply NO_REPLY.\n"
         "Current time: Monday, November 30th, 2026 03:19 (UTC)\nReference UTC: 2026-11-30 03:19 UTC"),
        ("Follow the heartbeat monitor scratch context when provided. Use heartbeat_respond to report the "
         "wake outcome.\n\nHeartbeat monitor scratch:\n- inbox\nCurrent time: x (UTC)\nReference UTC: "
         "2026-11-30 03:19 UTC"),
        ("Run the following periodic tasks (only those due based on their intervals):\n- check mail\n"
         "Current time: x (UTC)\nReference UTC: 2026-11-30 03:19 UTC"),
        "Read HEARTBEAT.md if it exists (workspace context). Follow it strictly. If nothing needs "
        "attention, reply HEARTBEAT_OK.",
        "[OpenClaw heartbeat poll]",
    ],
    "memory_flush": [
        "Pre-compaction memory flush. Store durable memories only in memory/2026-11-30.md (create "
        "memory/ if needed). Reply NO_REPLY when done.",
        "Save important context from this session to the daily memory file.\nSTRICT RULES: only append.",
    ],
    "compaction": [
        ("<conversation>\n[user]: hi\n[assistant]: hello\n</conversation>\n\nThe messages above are a "
         "conversation to summarize. Create a structured context checkpoint summary."),
        ("<conversation>\n[user]: more\n</conversation>\n\n<previous-summary>old</previous-summary>\n\n"
         "The messages above are NEW conversation messages to incorporate into the existing summary "
         "provided in <previous-summary> tags."),
    ],
    "slug": ["Based on this conversation, generate a short 1-2 word filename slug (lowercase, hyphens)."],
    "title": ["Generate a concise session title (3-6 words, max 60 characters) from the user's first "
              "message.\n\nFirst message: fix my printer"],
}
SYSTEM_HOUSEKEEPING = {
    "memory_flush": "You are helpful.\n## Conversation Context\nPre-compaction memory flush turn. The session "
                    "is near auto-compaction; capture durable memories to disk.",
    "compaction": "You are a context summarization assistant. Your task is to read a conversation between "
                  "a user and an AI assistant, then produce a structured summary.",
}
ORDINARY = [
    "What is a heartbeat monitor and how do hospitals use one?",
    "Please summarize this conversation for me.",
    "Explain: 'Pre-compaction memory flush.' in plain words",
    "Write a title for my blog post about memory",
    "[Mon 2026-11-30 03:19 UTC] please read hello.txt" + RUNTIME,
    "Let's talk about <conversation> tags in XML",
]


@pytest.mark.parametrize("reason, text", [(r, t) for r, ts in HOUSEKEEPING.items() for t in ts])
def test_default_side_rules_on_openclaw_housekeeping(reason, text):
    msgs = [{"role": "system", "content": "You are a personal assistant running inside OpenClaw."},
            {"role": "user", "content": "earlier ordinary question"}, {"role": "assistant", "content": "ok"},
            {"role": "user", "content": text}]
    assert RULES.side_reason(msgs) == reason
    # the trailing context carrier does not hide the last real user message
    assert RULES.side_reason(msgs + [carrier()]) == reason


@pytest.mark.parametrize("reason, text", [(r, t) for r in ("heartbeat", "memory_flush") for t in HOUSEKEEPING[r]])
def test_side_rules_see_through_openclaw_time_envelope(reason, text):
    # OpenClaw puts its time envelope before a user message it sends (the real agent's heartbeat prompt
    # sent as a message arrived so: tests/test_openclaw_history_agent.py)
    msgs = [{"role": "user", "content": f"[Wed 2026-12-02 06:56 UTC] {text}" + RUNTIME}, carrier()]
    assert RULES.side_reason(msgs) == reason


@pytest.mark.parametrize("reason", sorted(SYSTEM_HOUSEKEEPING))
def test_default_side_rules_on_system_prompts(reason):
    msgs = [{"role": "system", "content": SYSTEM_HOUSEKEEPING[reason]}, {"role": "user", "content": "hello"}]
    assert RULES.side_reason(msgs) == reason
    assert RULES.side_reason([{"role": "developer", "content": SYSTEM_HOUSEKEEPING[reason]}]) == reason


@pytest.mark.parametrize("text", ORDINARY)
def test_ordinary_messages_are_main(text):
    msgs = [{"role": "system", "content": "You are a personal assistant running inside OpenClaw."},
            {"role": "user", "content": text}, carrier()]
    assert RULES.side_reason(msgs) is None


def test_only_the_last_real_user_message_counts():
    hb = HOUSEKEEPING["heartbeat"][0]
    msgs = [{"role": "user", "content": hb}, {"role": "assistant", "content": "NO_REPLY"},
            {"role": "user", "content": "now a real question"}]
    assert RULES.side_reason(msgs) is None
    # a tool message after the heartbeat does not change the last user message
    assert RULES.side_reason(msgs[:2] + [{"role": "tool", "content": "x"}]) == "heartbeat"


def test_side_turn_rules_file(tmp_path):
    path = tmp_path / "rules.json"
    path.write_text(json.dumps([{"name": "ping", "pattern": r"^PING\b", "where": "last_user"},
                                {"name": "sysbot", "pattern": "internal bot", "where": "system"},
                                {"name": "anywhere", "pattern": "XYZZY", "where": "any"}]))
    rules = TurnRules.from_file(path)
    assert [r.name for r in rules.side_rules] == ["ping", "sysbot", "anywhere"]
    assert rules.side_reason([{"role": "user", "content": "PING now"}]) == "ping"
    assert rules.side_reason([{"role": "user", "content": "say PING"}]) is None
    assert rules.side_reason([{"role": "system", "content": "an internal bot"}, {"role": "user", "content": "x"}]) == "sysbot"
    assert rules.side_reason([{"role": "assistant", "content": "XYZZY"}, {"role": "user", "content": "x"}]) == "anywhere"
    # the file replaces the defaults
    assert rules.side_reason([{"role": "user", "content": HOUSEKEEPING["heartbeat"][0]}]) is None
    assert rules.context_patterns == RULES.context_patterns
    empty = tmp_path / "empty.json"
    empty.write_text("[]")
    assert TurnRules.from_file(empty).side_reason([{"role": "user", "content": "Read HEARTBEAT.md"}]) is None
    assert TurnRules().side_rules == DEFAULT_SIDE_RULES


@pytest.mark.parametrize("content", [
    None,  # missing file
    "{not json",
    '{"name": "x", "pattern": "y"}',  # not a list
    "[1, 2]",
    '[{"name": "x"}]',  # no pattern
    '[{"name": "x", "pattern": "y", "color": "red"}]',  # unknown key
    '[{"name": "x", "pattern": "(unclosed"}]',  # bad regex
    '[{"name": "x", "pattern": "y", "where": "everywhere"}]',  # bad where
])
def test_bad_side_turn_rules_file_names_the_path(tmp_path, content):
    path = tmp_path / "bad-rules.json"
    if content is not None:
        path.write_text(content)
    with pytest.raises(ValueError) as err:
        TurnRules.from_file(path)
    assert str(path) in str(err.value)


def test_side_rule_validation():
    with pytest.raises(ValueError, match="where"):
        SideRule("x", "y", "nowhere")
    with pytest.raises(ValueError, match="bad regex"):
        SideRule("x", "[")


RETRY = ("[Sat 2026-12-05 07:16 UTC] The previous attempt did not produce a user-visible answer. Continue from the "
         "current state and produce the visible answer now. Do not restart from scratch.")


def test_openclaws_empty_answer_retry_belongs_to_the_run_it_retries():
    heartbeat = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "Hello!"},
                 {"role": "user", "content": "[Sat 2026-12-05 07:16 UTC] " + HOUSEKEEPING["heartbeat"][0]},
                 {"role": "assistant", "content": "<tool_call>\n<tool_call>"}, {"role": "user", "content": RETRY + RUNTIME}]
    assert RULES.side_reason(heartbeat) == "heartbeat"
    assert RULES.side_reason(heartbeat + [{"role": "assistant", "content": ""}, {"role": "user", "content": RETRY}]) \
        == "heartbeat"  # a retry of the retry too
    user_run = [{"role": "user", "content": "please read hello.txt"}, {"role": "assistant", "content": ""},
                {"role": "user", "content": RETRY}]
    assert RULES.side_reason(user_run) is None  # the user's own run: a main turn, as import-openclaw reads it
