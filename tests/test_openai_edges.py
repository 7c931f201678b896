"""The OpenAI contract at its edges: cut-off tool calls, logprob bytes of split characters,
enforced tool_choice, history arguments, usage on stream chunks.

Where a random tiny model would decide the verdict, the path is forced: tool_choice makes the
engine write a complete call (constrained decoding), and the reply logic is driven with real
token ids of constructed replies.
"""

from __future__ import annotations

import json

import httpx
import openai
import pytest

from openclaw_rl.capture.store import TrajectoryStore
from openclaw_rl.engine import GenerationOutput, TokenEvent
from openclaw_rl.models import load_tokenizer
from openclaw_rl.server.prompt import tokenize
from openclaw_rl.server.reply import ReplyAssembler
from openclaw_rl.server.token_bytes import TokenBytes, gpt2_byte_decoder

AUTH = {"Authorization": "Bearer sk-test"}
FILES = ["a.txt", "b.txt"]
TOOLS = [{"type": "function", "function": {"name": "read", "parameters": {
    "type": "object", "properties": {"path": {"type": "string", "enum": FILES}},
    "required": ["path"], "additionalProperties": False}}},
         {"type": "function", "function": {"name": "ping", "parameters": {
             "type": "object", "properties": {}, "additionalProperties": False}}}]
FORCED = {"type": "function", "function": {"name": "read"}}


def _client(server) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.base_url, api_key="sk-test", max_retries=0, timeout=300)


def _assemble(tok, ids: list[int], engine_finish: str, logprobs: bool = False):
    """Drive the server's reply logic with real token ids; returns (events, assembler)."""
    stop = {tok.convert_tokens_to_ids("<|im_end|>"), tok.convert_tokens_to_ids("<|endoftext|>")}
    out = GenerationOutput(prompt_ids=[1, 2])
    reply = ReplyAssembler(tok, TokenBytes(tok), stop, out, parse_tools=True, stops=[], logprobs=logprobs)
    events = []
    for i in ids:
        out.token_ids.append(i)
        out.logprobs.append(-0.5)
        out.top_logprobs.append([])
        events += reply.push(TokenEvent(i, -0.5))
    out.finish_reason = engine_finish
    return events + reply.finish(), reply


CALL_A = '<tool_call>\n{"name": "read", "arguments": {"path": "a.txt"}}\n</tool_call>'
OPEN_B = '\n<tool_call>\n{"name": "read", "arguments": {"path": "b.txt"}}\n'


def test_cut_off_calls_are_never_calls():
    tok = load_tokenizer("builtin:tiny-qwen3")
    eot = tok.convert_tokens_to_ids("<|im_end|>")
    # JSON complete, </tool_call> not reached: length, no call, the text stays content
    events, reply = _assemble(tok, tokenize(tok, CALL_A[:-len("</tool_call>")]), "length")
    assert [e.kind for e in events] == ["content", "finish"] and events[-1].finish_reason == "length"
    assert reply.parser.tool_calls == [] and events[0].text.startswith("<tool_call>\n{")
    # a complete call, then a second one cut off: the first is a call, the finish is length
    events, reply = _assemble(tok, tokenize(tok, CALL_A + OPEN_B), "length")
    calls = [e.tool_call for e in events if e.kind == "tool_call"]
    assert [(c.name, c.arguments) for c in calls] == [("read", '{"path": "a.txt"}')]
    assert events[-1].finish_reason == "length" and len(reply.parser.tool_calls) == 1
    assert "b.txt" in reply.parser.content
    # the model itself ended the reply after the second call's JSON: both are calls
    events, reply = _assemble(tok, tokenize(tok, CALL_A + OPEN_B) + [eot], "stop")
    assert [c.arguments for c in reply.parser.tool_calls] == ['{"path": "a.txt"}', '{"path": "b.txt"}']
    assert events[-1].finish_reason == "tool_calls"
    # budget ends right after a complete call: still length (OpenAI: the budget ran out)
    events, _ = _assemble(tok, tokenize(tok, CALL_A), "length")
    assert events[-1].finish_reason == "length" and any(e.kind == "tool_call" for e in events)


def test_max_tokens_inside_a_forced_call_through_the_server(tiny_server):
    """The engine writes a complete call (tool_choice names it); the same request with
    max_tokens ending just before </tool_call> gets length, no call and no ``<tool_call>`` markup
    as content (a forced reply can only have been a call: issue 29), and the store agrees: no call,
    the sampled text kept token-exact."""
    client = _client(tiny_server)
    kw = dict(model="m", messages=[{"role": "user", "content": "read one"}], tools=TOOLS,
              tool_choice=FORCED, seed=7, logprobs=True)
    full = client.chat.completions.create(max_tokens=60, extra_headers={"X-Session-Id": "cut-full"}, **kw)
    assert full.choices[0].finish_reason == "tool_calls"
    tokens = [e.token for e in full.choices[0].logprobs.content]
    close = tokens.index("</tool_call>")
    cut = client.chat.completions.create(max_tokens=close, extra_headers={"X-Session-Id": "cut"}, **kw)
    choice = cut.choices[0]
    assert choice.finish_reason == "length" and not choice.message.tool_calls
    assert not choice.message.content  # the unfinished call's markup never reaches the user
    chunks = list(client.chat.completions.create(max_tokens=close, stream=True,
                                                 extra_headers={"X-Session-Id": "cut-stream"}, **kw))
    assert not any(c.choices and c.choices[0].delta.tool_calls for c in chunks)
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == ""
    assert [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason] == ["length"]
    store = TrajectoryStore(tiny_server.buffer_dir)
    for sid in ("cut", "cut-stream"):
        (turn,) = store.turns(session_id=sid)
        assert turn.finish_reason == "length" and turn.tool_calls is None
        assert turn.response_text == "".join(tokens[:close])  # what was sampled, JSON complete
        assert json.loads(turn.response_text[len("<tool_call>"):])["name"] == "read"
    store.close()


@pytest.mark.parametrize("model", ["builtin:tiny-qwen3", "builtin:smollm2-135m"])
def test_logprob_bytes_of_split_characters(model):
    tok = load_tokenizer(model)
    byte_char = {b: c for c, b in gpt2_byte_decoder().items()}
    text = "café 😀"
    ids = tokenize(tok, "caf") + [tok.convert_tokens_to_ids(byte_char[b]) for b in "é 😀".encode()]
    events, reply = _assemble(tok, ids, "length", logprobs=True)
    entries = [e for ev in events for e in ev.logprobs]
    assert len(entries) == len(ids)
    assert [e["bytes"] for e in entries[-7:]] == [[195], [169], [32], [240], [159], [152], [128]]
    assert entries[-7]["token"] == "\ufffd"  # half a character has no text of its own
    assert b"".join(bytes(e["bytes"]) for e in entries).decode() == text
    assert "".join(e.text for e in events if e.kind == "content") == text


def test_logprob_bytes_join_to_the_reply_through_the_server(tiny_server):
    for stream in (False, True):
        body = {"messages": [{"role": "user", "content": "Écris « café » 😀"}], "max_tokens": 24,
                "temperature": 1.0, "seed": 3, "logprobs": True, "top_logprobs": 2, "stream": stream}
        r = httpx.post(tiny_server.base_url + "/chat/completions", json=body, timeout=300,
                       headers={**AUTH, "X-Session-Id": f"bytes-{stream}"})
        assert r.status_code == 200
        if stream:
            chunks = [json.loads(line[6:]) for line in r.text.splitlines()
                      if line.startswith("data: {")]
            entries = [e for c in chunks for ch in c["choices"] for e in ((ch.get("logprobs") or {}).get("content") or [])]
        else:
            entries = r.json()["choices"][0]["logprobs"]["content"]
        store = TrajectoryStore(tiny_server.buffer_dir)
        (turn,) = store.turns(session_id=f"bytes-{stream}")
        store.close()
        assert len(entries) == len(turn.response_ids)
        tok = load_tokenizer("builtin:tiny-qwen3")
        stops = {tok.convert_tokens_to_ids("<|im_end|>"), tok.convert_tokens_to_ids("<|endoftext|>")}
        joined = b"".join(bytes(e["bytes"]) for e, i in zip(entries, turn.response_ids) if i not in stops)
        assert joined.decode("utf-8") == turn.response_text
        assert all(len(e["top_logprobs"]) == 2 and all(isinstance(a["bytes"], list) for a in e["top_logprobs"])
                   for e in entries)


def test_tool_choice_is_enforced(tiny_server):
    client = _client(tiny_server)
    msgs = [{"role": "user", "content": "do something"}]
    for seed in range(2):
        r = client.chat.completions.create(model="m", messages=msgs, tools=TOOLS, tool_choice=FORCED,
                                           max_tokens=60, seed=seed)
        (call,) = r.choices[0].message.tool_calls
        assert r.choices[0].finish_reason == "tool_calls" and call.function.name == "read"
        assert json.loads(call.function.arguments)["path"] in FILES
        r = client.chat.completions.create(model="m", messages=msgs, tools=TOOLS, tool_choice="required",
                                           max_tokens=80, seed=seed)
        calls = r.choices[0].message.tool_calls or []
        assert calls, r.choices[0]
        for call in calls:  # a call cut by max_tokens is never returned as a call
            args = json.loads(call.function.arguments)
            if call.function.name == "ping":
                assert args == {}
            else:
                assert call.function.name == "read" and args["path"] in FILES
        r = client.chat.completions.create(model="m", messages=msgs, tools=TOOLS, tool_choice="required",
                                           parallel_tool_calls=False, max_tokens=80, seed=seed)
        assert r.choices[0].finish_reason == "tool_calls" and len(r.choices[0].message.tool_calls) == 1
    chunks = list(client.chat.completions.create(model="m", messages=msgs, tools=TOOLS, tool_choice=FORCED,
                                                 max_tokens=60, seed=5, stream=True))
    deltas = [d for c in chunks if c.choices for d in (c.choices[0].delta.tool_calls or [])]
    assert deltas[0].function.name == "read"
    assert json.loads("".join(d.function.arguments or "" for d in deltas))["path"] in FILES


def test_tool_choice_that_cannot_be_enforced_is_a_400(tiny_server):
    bad = [{"type": "function", "function": {"name": "grep", "parameters": {
        "type": "object", "properties": {"re": {"type": "string", "pattern": "("}}}}}]
    with pytest.raises(openai.BadRequestError, match="tool_choice cannot be enforced.*grep.*unclosed group"):
        _client(tiny_server).chat.completions.create(
            model="m", messages=[{"role": "user", "content": "x"}], tools=bad, tool_choice="required")


def test_history_tool_call_arguments(tiny_server):
    def history(arguments):
        return {"messages": [{"role": "user", "content": "ping it"},
                             {"role": "assistant", "content": None, "tool_calls": [
                                 {"id": "c1", "type": "function", "function": {"name": "ping", "arguments": arguments}}]},
                             {"role": "tool", "tool_call_id": "c1", "content": "pong"}],
                "tools": TOOLS, "max_tokens": 2}

    r = httpx.post(tiny_server.base_url + "/chat/completions", json=history(""), timeout=300,
                   headers={**AUTH, "X-Session-Id": "empty-args"})
    assert r.status_code == 200, r.text
    store = TrajectoryStore(tiny_server.buffer_dir)
    (turn,) = store.turns(session_id="empty-args")
    store.close()
    assert '{"name": "ping", "arguments": {}}\n</tool_call>' in turn.prompt_text
    for malformed in ("{", '{"a": 1', "not json"):
        r = httpx.post(tiny_server.base_url + "/chat/completions", json=history(malformed), timeout=60, headers=AUTH)
        assert r.status_code == 400
        err = r.json()["error"]
        assert err["param"] == "messages[1].tool_calls[0].function.arguments" and "not valid JSON" in err["message"]


def test_usage_is_null_on_chunks_before_the_usage_chunk(tiny_server):
    body = {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 4, "stream": True}
    for include in (True, False):
        r = httpx.post(tiny_server.base_url + "/chat/completions", headers=AUTH, timeout=300,
                       json={**body, "stream_options": {"include_usage": include}})
        chunks = [json.loads(line[6:]) for line in r.text.splitlines() if line.startswith("data: {")]
        if include:
            assert all("usage" in c and c["usage"] is None for c in chunks[:-1])
            assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["completion_tokens"] >= 1
        else:
            assert all("usage" not in c for c in chunks)
