"""Capture through the real server: sessions, next states, token exactness, side turns."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import httpx
import openai
import torch

from openclaw_rl.capture.store import TrajectoryStore
from openclaw_rl.models import load_model

FIXTURE = Path(__file__).parent / "fixtures" / "openclaw-tool-session.jsonl"
AUTH = {"Authorization": "Bearer sk-test"}


def _post(server, body: dict, headers: dict | None = None) -> httpx.Response:
    return httpx.post(server.base_url + "/chat/completions", json=body,
                      headers={**AUTH, **(headers or {})}, timeout=300)


def _sse_text(resp: httpx.Response) -> str:
    out = []
    for line in resp.text.splitlines():
        if line.startswith("data: ") and line != "data: [DONE]":
            chunk = json.loads(line[6:])
            for c in chunk.get("choices", []):
                out.append(c["delta"].get("content") or "")
    return "".join(out)


def _fixture_requests() -> list[dict]:
    return [json.loads(line) for line in FIXTURE.read_text().splitlines()]


def test_openclaw_fixture_replay_links_tool_result(tiny_server):
    """The two real OpenClaw requests (no session headers) land in one session; the tool
    result becomes the first turn's next state."""
    store = TrajectoryStore(tiny_server.buffer_dir)
    for rec in _fixture_requests():
        body = dict(rec["body"], max_completion_tokens=8)  # keep the random model short
        headers = {k: v for k, v in rec["headers"].items() if k in ("user-agent", "authorization")}
        headers["authorization"] = "Bearer sk-test"
        r = httpx.post(tiny_server.base_url + "/chat/completions", json=body, headers=headers, timeout=300)
        assert r.status_code == 200, r.text
        assert r.text.rstrip().endswith("data: [DONE]")
    turns = store.turns(session_id="f5aba073-5020-48b0-b26b-98e6e189a1ad")
    assert [t.turn_type for t in turns] == ["main", "main"]
    first = turns[0]
    assert first.status == "ready" and first.next_state_role == "tool"
    assert first.next_state == "[tool call470a7a12] secret-value-42"
    assert "OPENCLAW_INTERNAL_CONTEXT" not in first.next_state
    assert turns[1].status == "awaiting_next"
    store.close()


def test_a_messages_name_field_is_kept_in_the_store(tiny_server):
    """OpenAI's optional ``name`` of a message (a participant's name) is recorded as sent, next to
    the finish reason the client was told."""
    sid = "name-field-" + uuid.uuid4().hex[:8]
    r = _post(tiny_server, {"model": "policy", "max_tokens": 2, "messages": [
        {"role": "system", "content": "Be brief."}, {"role": "user", "name": "ann", "content": "Hi."}]},
        {"X-Session-Id": sid})
    assert r.status_code == 200, r.text
    store = TrajectoryStore(tiny_server.buffer_dir)
    try:
        (turn,) = store.turns(session_id=sid)
    finally:
        store.close()
    assert turn.messages[1] == {"role": "user", "name": "ann", "content": "Hi."}
    assert "name" not in turn.messages[0]
    assert turn.finish_reason == r.json()["choices"][0]["finish_reason"]


def test_continuation_matching_without_any_session_hint(tiny_server):
    """Strip OpenClaw's sessionId line: two interleaved conversations are still told apart
    by matching each request against earlier requests plus our replies."""
    client = openai.OpenAI(base_url=tiny_server.base_url, api_key="sk-test", max_retries=0)
    convs = {name: [{"role": "system", "content": f"conversation {name}"},
                    {"role": "user", "content": f"first message of {name}"}] for name in ("A", "B")}
    for _round in range(2):
        for name, msgs in convs.items():
            r = client.chat.completions.create(model="m", messages=msgs, max_tokens=5, seed=1)
            msgs += [{"role": "assistant", "content": r.choices[0].message.content},
                     {"role": "user", "content": f"{name} follow-up {_round}"}]
    store = TrajectoryStore(tiny_server.buffer_dir)
    by_session: dict[str, list] = {}
    for t in store.turns():
        if t.messages[0]["content"].startswith("conversation "):
            by_session.setdefault(t.session_id, []).append(t)
    assert len(by_session) == 2
    for turns in by_session.values():
        assert len(turns) == 2
        name = turns[0].messages[0]["content"][-1]
        assert {t.messages[0]["content"] for t in turns} == {f"conversation {name}"}
        assert turns[0].next_state == f"{name} follow-up 0" and turns[0].next_state_role == "user"
    store.close()


def test_token_exact_capture_matches_teacher_forcing(tiny_server):
    """Stored prompt ids + sampled ids, scored by the same weights with teacher forcing, give
    back the stored sampling logprobs (temperature 1, top_p 1): nothing was re-tokenized."""
    r = _post(tiny_server, {"messages": [{"role": "user", "content": "Numbers: 1 2 3, émojis 🙂"}],
                            "max_tokens": 12, "temperature": 1.0, "seed": 5}, {"X-Session-Id": "exact"})
    assert r.status_code == 200
    store = TrajectoryStore(tiny_server.buffer_dir)
    (turn,) = store.turns(session_id="exact")
    assert len(turn.response_ids) == len(turn.response_logprobs) == r.json()["usage"]["completion_tokens"]
    assert turn.weight_version == 0 and turn.prompt_text.endswith("<|im_start|>assistant\n")
    model = load_model("builtin:tiny-qwen3")
    ids = torch.tensor([turn.prompt_ids + turn.response_ids])
    with torch.no_grad():
        logp = torch.log_softmax(model(input_ids=ids).logits[0].float(), -1)
    p = len(turn.prompt_ids)
    expected = [float(logp[p - 1 + i, tok]) for i, tok in enumerate(turn.response_ids)]
    assert max(abs(a - b) for a, b in zip(expected, turn.response_logprobs)) < 1e-4
    store.close()


def test_prefix_continuity_recorded(tool_server):
    """With a reply that re-renders identically, turn t+1's prompt starts with turn t's prompt +
    response; when the client rewrites history the break position is recorded."""
    client = openai.OpenAI(base_url=tool_server.base_url, api_key="sk-test", max_retries=0)
    msgs = [{"role": "user", "content": "hi"}]
    for i in range(2):
        r = client.chat.completions.create(model="m", messages=msgs, max_tokens=8,
                                           extra_headers={"X-Session-Id": "prefix"})
        msgs += [{"role": "assistant", "content": r.choices[0].message.content},
                 {"role": "user", "content": f"and again {i}"}]
    msgs[1]["content"] = "Something I never said."
    client.chat.completions.create(model="m", messages=msgs, max_tokens=8, extra_headers={"X-Session-Id": "prefix"})
    store = TrajectoryStore(tool_server.buffer_dir)
    t0, t1, t2 = store.turns(session_id="prefix")
    assert t0.prefix_ok is None
    assert t1.prefix_ok is True and t1.prompt_ids[:len(t0.prompt_ids) + len(t0.response_ids)] == t0.prompt_ids + t0.response_ids
    assert t2.prefix_ok is False
    expected = t1.prompt_ids + t1.response_ids
    first_diff = next(i for i, (a, b) in enumerate(zip(expected, t2.prompt_ids)) if a != b)
    assert t2.prefix_break_at == first_diff
    store.close()


def test_side_turns_are_recorded_not_trained(tiny_server):
    heartbeat = "Read HEARTBEAT.md if it exists. If nothing needs attention, reply HEARTBEAT_OK."
    _post(tiny_server, {"messages": [{"role": "user", "content": "do the thing"}], "max_tokens": 3},
          {"X-Session-Id": "side"})
    _post(tiny_server, {"messages": [{"role": "user", "content": heartbeat}], "max_tokens": 3},
          {"X-Session-Id": "side"})
    _post(tiny_server, {"messages": [{"role": "user", "content": "summary please"}], "max_tokens": 3,
                        "turn_type": "side"}, {"X-Session-Id": "side"})
    store = TrajectoryStore(tiny_server.buffer_dir)
    turns = store.turns(session_id="side")
    assert [(t.turn_type, t.status, t.side_reason) for t in turns] == [
        ("main", "awaiting_next", None), ("side", "side", "heartbeat"), ("side", "side", "explicit")]
    store.close()


def test_session_done_header_finalises_without_next_state(tiny_server):
    _post(tiny_server, {"messages": [{"role": "user", "content": "bye"}], "max_tokens": 3},
          {"X-Session-Id": "done-1", "X-Session-Done": "true"})
    store = TrajectoryStore(tiny_server.buffer_dir)
    (turn,) = store.turns(session_id="done-1")
    assert turn.status == "ready" and turn.next_state is None
    store.close()


def test_streamed_turn_is_committed_before_done(tiny_server):
    """The chunk that carries the finish reason (and so the [DONE] line after it) is sent only
    after the turn is durable."""
    with httpx.stream("POST", tiny_server.base_url + "/chat/completions", headers=AUTH, timeout=120,
                      json={"messages": [{"role": "user", "content": "stream me"}], "max_tokens": 6,
                            "stream": True, "session_id": "durable-stream"}) as r:
        lines, checked = [], 0
        for line in r.iter_lines():
            lines.append(line)
            if not line.startswith("data: {"):
                continue
            chunk = json.loads(line[len("data: "):])
            if chunk["choices"] and chunk["choices"][0]["finish_reason"] is not None:
                store = TrajectoryStore(tiny_server.buffer_dir)
                assert len(store.turns(session_id="durable-stream")) == 1
                store.close()
                checked += 1
    assert checked == 1  # exactly one chunk carried the finish reason, and the turn was stored by then
    assert [line for line in lines if line][-1] == "data: [DONE]"


def test_closing_side_request_gives_the_last_reply_its_next_state(tiny_server):
    """A client that closes the session with a side request (``X-Session-Done``) still delivers its
    reaction to the last reply: that main turn gets the reaction as its next state."""
    msgs = [{"role": "user", "content": "tell me a fact"}]
    r = _post(tiny_server, {"messages": msgs, "max_tokens": 3}, {"X-Session-Id": "closing-1"})
    msgs += [r.json()["choices"][0]["message"], {"role": "user", "content": "No, shorter please."}]
    _post(tiny_server, {"messages": msgs, "max_tokens": 1},
          {"X-Session-Id": "closing-1", "X-Turn-Type": "side", "X-Session-Done": "true"})
    store = TrajectoryStore(tiny_server.buffer_dir)
    main, side = store.turns(session_id="closing-1")
    assert (main.turn_type, side.turn_type) == ("main", "side")
    assert (main.status, main.next_state, main.next_state_role) == ("ready", "No, shorter please.", "user")
    store.close()
