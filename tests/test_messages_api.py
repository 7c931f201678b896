"""``POST /v1/messages`` driven by the real ``anthropic`` SDK against the real server on the tiny
model: a tool, ``tool_use`` / ``tool_result`` blocks, the SDK's streaming helper, stop sequences,
Anthropic-shaped errors, and what capture records (one session, main turns, linked next states,
token continuity, the message ids).

Where the random tiny model would decide the verdict, the path is forced: ``tool_choice`` names
the tool (constrained decoding writes a complete call to a schema with an ``enum``), and a
free-text turn gets too few tokens for a complete call.
"""

from __future__ import annotations

import uuid

import anthropic
import httpx

from openclaw_rl.capture.store import TrajectoryStore
from tests.support.sessions import turns_by_completion_id

CITIES = ["Paris", "Oslo"]
TOOLS = [{"name": "get_weather", "description": "The weather in a city.",
          "input_schema": {"type": "object", "properties": {"city": {"type": "string", "enum": CITIES}},
                           "required": ["city"], "additionalProperties": False}}]
FORCED = {"type": "tool", "name": "get_weather"}


def _client(server, key: str = "sk-test") -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=server.base_url.removesuffix("/v1"), api_key=key, max_retries=0,
                               timeout=300)


def _only_tool_use(message) -> object:
    assert [b.type for b in message.content] == ["tool_use"], message.content
    block = message.content[0]
    assert block.name == "get_weather" and block.input["city"] in CITIES
    assert message.stop_reason == "tool_use"
    return block


def test_a_messages_conversation_with_a_tool_is_one_recorded_session(tiny_server):
    """Three turns on the Messages API (a forced tool use, the streaming helper with a forced tool
    use after the first result, then streamed free text) are recorded as one session of main
    turns, each linked to the tool result the client sent next."""
    client = _client(tiny_server)
    system = f"You check the weather ({uuid.uuid4().hex})."
    messages = [{"role": "user", "content": "What is the weather in Paris?"}]
    first = client.messages.create(model="m", system=system, messages=messages, tools=TOOLS, tool_choice=FORCED,
                                   max_tokens=40, extra_body={"seed": 1})
    use1 = _only_tool_use(first)
    assert first.usage.input_tokens > 0 and first.usage.output_tokens > 0

    messages += [{"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in first.content]},
                 {"role": "user", "content": [{"type": "tool_result", "tool_use_id": use1.id, "content": "sunny"}]}]
    with client.messages.stream(model="m", system=system, messages=messages, tools=TOOLS, tool_choice=FORCED,
                                max_tokens=40, extra_body={"seed": 2}) as stream:
        kinds = [event.type for event in stream]
        second = stream.get_final_message()
    use2 = _only_tool_use(second)
    assert kinds[0] == "message_start" and kinds[-2:] == ["message_delta", "message_stop"]
    assert "input_json" in kinds

    messages += [{"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in second.content]},
                 {"role": "user", "content": [{"type": "tool_result", "tool_use_id": use2.id,
                                               "content": [{"type": "text", "text": "rain"}]},
                                              {"type": "text", "text": "And now?"}]}]
    with client.messages.stream(model="m", system=system, messages=messages, tools=TOOLS, max_tokens=6,
                                extra_body={"seed": 3}) as stream:
        streamed = "".join(stream.text_stream)
        third = stream.get_final_message()
    assert [b.type for b in third.content] == ["text"] and third.content[0].text == streamed
    assert third.stop_reason in ("max_tokens", "end_turn")

    t1, t2, t3 = turns_by_completion_id(tiny_server, [first.id, second.id, third.id])
    assert t1.session_id == t2.session_id == t3.session_id
    assert [t.turn_type for t in (t1, t2, t3)] == ["main", "main", "main"]
    assert t1.messages[0] == {"role": "system", "content": system}
    assert (t1.next_state_role, t1.next_state) == ("tool", f"[tool {use1.id}] sunny")
    assert (t2.next_state_role, t2.next_state) == ("tool", f"[tool {use2.id}] rain\n\nAnd now?")
    assert t1.status == t2.status == "ready" and t3.status == "awaiting_next"
    assert t1.finish_reason == t2.finish_reason == "tool_calls"
    assert t2.prefix_ok is True and t3.prefix_ok is True
    assert t3.prompt_ids[:len(t2.prompt_ids) + len(t2.response_ids)] == t2.prompt_ids + t2.response_ids
    assert len(t3.response_ids) == third.usage.output_tokens


def test_messages_stop_sequence_is_reported(tiny_server):
    """A stop sequence the reply hit is ``stop_reason: stop_sequence`` with the sequence (the
    sequence is taken from the same seeded reply without it, so it is certain to occur)."""
    client = _client(tiny_server)
    body = dict(model="m", messages=[{"role": "user", "content": "Say something."}], max_tokens=12,
                extra_body={"seed": 5})
    free = client.messages.create(**body)
    text = free.content[0].text
    at = next(i for i in range(1, len(text) - 1) if text[i:i + 2].strip() == text[i:i + 2])
    stop = text[at:at + 2]
    cut = client.messages.create(**body, stop_sequences=[stop])
    assert cut.stop_reason == "stop_sequence" and cut.stop_sequence == stop
    assert cut.content[0].text == text[:text.index(stop)]


def test_messages_errors_take_anthropics_shape(tiny_server):
    """Bad requests get Anthropic's error body (so the SDK raises its typed errors), and a
    wrong key is an authentication error; nothing is recorded."""
    store = TrajectoryStore(tiny_server.buffer_dir)
    before = len(store.turns())
    url, key = tiny_server.base_url + "/messages", {"x-api-key": "sk-test"}
    msgs = [{"role": "user", "content": "hi"}]
    for body, needle in (({"model": "m", "messages": msgs}, "max_tokens"),
                         ({"model": "m", "max_tokens": 4, "messages": [
                             {"role": "user", "content": [{"type": "document", "source": {}}]}]},
                          "messages.0.content.0.type"),
                         ({"model": "m", "max_tokens": 4, "messages": msgs, "tools": TOOLS,
                           "tool_choice": {"type": "tool", "name": "nope"}}, "nope")):
        r = httpx.post(url, json=body, headers=key)
        assert r.status_code == 400, r.text
        assert r.json()["type"] == "error" and r.json()["error"]["type"] == "invalid_request_error"
        assert needle in r.json()["error"]["message"]
    try:
        _client(tiny_server, key="wrong").messages.create(model="m", max_tokens=4, messages=msgs)
        raise AssertionError("a wrong key was accepted")
    except anthropic.AuthenticationError as exc:
        assert exc.status_code == 401
    assert len(store.turns()) == before
    store.close()
