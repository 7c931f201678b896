"""The real ``openai`` SDK against the running server (real HTTP, real tiny models)."""

from __future__ import annotations

import json

import httpx
import openai
import pytest

from openclaw_rl.capture.store import TrajectoryStore
from tests.support.tool_model import SHORT_TOOLS


def _client(server, key="sk-test") -> openai.OpenAI:
    return openai.OpenAI(base_url=server.base_url, api_key=key, max_retries=0, timeout=120)


def test_models_and_health(tiny_server):
    models = _client(tiny_server).models.list()
    assert [m.id for m in models.data] == ["builtin:tiny-qwen3"]
    # OpenClaw's gateway probes /v1/models without credentials: it stays public
    assert _client(tiny_server, key="none").models.list().data[0].id == "builtin:tiny-qwen3"
    assert httpx.get(tiny_server.base_url.replace("/v1", "/healthz")).json()["status"] == "ok"


def test_non_streaming_completion_with_logprobs(tiny_server):
    resp = _client(tiny_server).chat.completions.create(
        model="builtin:tiny-qwen3", messages=[{"role": "user", "content": "Hello there"}],
        max_tokens=8, seed=3, logprobs=True, top_logprobs=2)
    choice = resp.choices[0]
    assert choice.finish_reason in ("stop", "length")
    assert resp.usage.completion_tokens == len(choice.logprobs.content) >= 1
    assert all(lp.logprob <= 0 and len(lp.top_logprobs) == 2 for lp in choice.logprobs.content)
    assert resp.usage.total_tokens == resp.usage.prompt_tokens + resp.usage.completion_tokens


def test_stream_equals_non_stream_for_same_seed(tiny_server):
    client = _client(tiny_server)
    kw = dict(model="m", messages=[{"role": "system", "content": "Be brief."},
                                   {"role": "user", "content": [{"type": "text", "text": "Tell me a story"}]}],
              max_completion_tokens=12, seed=11, temperature=0.9)
    full = client.chat.completions.create(**kw)
    chunks = list(client.chat.completions.create(stream=True, stream_options={"include_usage": True}, **kw))
    assert chunks[0].choices[0].delta.role == "assistant"
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    finishes = [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]
    assert text == full.choices[0].message.content
    assert finishes == [full.choices[0].finish_reason]
    assert chunks[-1].choices == [] and chunks[-1].usage.completion_tokens == full.usage.completion_tokens
    assert sum(1 for c in chunks if c.choices and c.choices[0].delta.content) >= 2  # tokens streamed


def test_errors_are_sdk_exceptions(tiny_server):
    with pytest.raises(openai.AuthenticationError):
        _client(tiny_server, key="wrong").chat.completions.create(
            model="m", messages=[{"role": "user", "content": "hi"}])
    client = _client(tiny_server)
    with pytest.raises(openai.BadRequestError, match="n=1"):
        client.chat.completions.create(model="m", n=2, messages=[{"role": "user", "content": "hi"}])
    with pytest.raises(openai.BadRequestError) as err:
        client.chat.completions.create(model="m", messages=[{"role": "wizard", "content": "hi"}])
    assert err.value.status_code == 400 and err.value.body["param"] == "messages.0.role"
    with pytest.raises(openai.BadRequestError, match="temperature"):
        client.chat.completions.create(model="m", temperature=7, messages=[{"role": "user", "content": "x"}])
    with pytest.raises(openai.BadRequestError, match="context") as err:
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": "word " * 40000}])
    assert err.value.code == "context_length_exceeded"


def test_malformed_bodies_get_openai_errors_and_buffer_survives(tiny_server):
    store = TrajectoryStore(tiny_server.buffer_dir)
    before = store.counts()
    url = tiny_server.base_url + "/chat/completions"
    auth = {"Authorization": "Bearer sk-test", "Content-Type": "application/json"}
    bad = [b"{not json", b"[1, 2]", b'{"messages": "hi"}', b'{"messages": []}',
           b'{"messages": [{"role": "user", "content": 5}]}',
           b'{"messages": [{"role": "user"}]}', b'{"messages": [{"role": "user", "content": "x"}], "max_tokens": -1}',
           b'{"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {}}]}]}']
    for body in bad:
        r = httpx.post(url, content=body, headers=auth, timeout=30)
        assert r.status_code == 400, (body, r.text)
        err = r.json()["error"]
        assert err["type"] == "invalid_request_error" and err["message"]
    assert store.counts() == before
    r = httpx.post(url, content=b'{"messages": [{"role": "user", "content": "still up?"}], "max_tokens": 2}',
                   headers=auth, timeout=60)
    assert r.status_code == 200
    store.close()


def test_tool_call_round_trip(tool_server):
    client = _client(tool_server)
    tools = SHORT_TOOLS  # the schema the tool model was trained with
    messages = [{"role": "system", "content": "You are helpful."},
                {"role": "user", "content": "USE_TOOL please read the file"}]
    first = client.chat.completions.create(model="tiny-tools", messages=messages, tools=tools,
                                           max_tokens=40, extra_headers={"X-Session-Id": "tool-rt"})
    msg = first.choices[0].message
    assert first.choices[0].finish_reason == "tool_calls"
    call = msg.tool_calls[0]
    assert call.function.name == "read" and json.loads(call.function.arguments) == {"path": "hello.txt"}
    # the streamed form of the same call carries index, id, name and argument fragments
    chunks = list(client.chat.completions.create(model="tiny-tools", messages=messages, tools=tools,
                                                 max_tokens=40, stream=True))
    deltas = [tc for c in chunks if c.choices for tc in (c.choices[0].delta.tool_calls or [])]
    assert deltas[0].index == 0 and deltas[0].id and deltas[0].function.name == "read"
    assert json.loads("".join(d.function.arguments or "" for d in deltas)) == {"path": "hello.txt"}
    assert chunks[-1].choices[0].finish_reason == "tool_calls"
    messages += [msg.model_dump(exclude_none=True),
                 {"role": "tool", "tool_call_id": call.id, "content": "secret-value-42\n"}]
    second = client.chat.completions.create(model="tiny-tools", messages=messages, tools=tools,
                                            max_tokens=10, extra_headers={"X-Session-Id": "tool-rt"})
    assert second.choices[0].finish_reason == "stop"
    assert second.choices[0].message.tool_calls is None
    store = TrajectoryStore(tool_server.buffer_dir)
    turns = store.turns(session_id="tool-rt")
    assert [t.turn_type for t in turns] == ["main", "main"]
    assert turns[0].tool_calls[0]["function"]["name"] == "read"
    assert turns[0].next_state_role == "tool" and "secret-value-42" in turns[0].next_state
    assert turns[0].status == "ready"
    store.close()
