"""Structured outputs and schema-exact tool calls, enforced by constrained decoding: the real
``openai`` SDK's ``chat.completions.parse``, its streaming helper and ``responses.parse`` with a
pydantic output type against the real server on the tiny model; a schema that cannot be compiled
is a 400; a tool's arguments admit no key its schema does not declare.

The verdicts hold whatever the random model writes: the output type's fields are an ``enum`` and a
boolean, so every value the grammar allows is short and parses.
"""

from __future__ import annotations

import json
from typing import Literal

import openai
import pytest
from pydantic import BaseModel

from openclaw_rl.capture.store import TrajectoryStore
from openclaw_rl.engine.grammar import GrammarConstraint, grammar_tokenizer
from openclaw_rl.models import load_tokenizer
from openclaw_rl.server.json_schema import closed_schema
from openclaw_rl.server.prompt import tokenize
from openclaw_rl.server.tool_choice import json_rule, tool_call_grammar
from tests.support.grammar import grammar_accepts

MSGS = [{"role": "user", "content": "What is the weather in Paris?"}]


class Weather(BaseModel):
    """The output type."""

    city: Literal["Paris", "Oslo"]
    sunny: bool


def _client(server) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.base_url, api_key="sk-test", max_retries=0, timeout=300)


def test_chat_completions_parse_returns_the_output_type(tiny_server):
    """``parse`` (non-streamed) and the streaming helper both give a parsed ``Weather``; the
    turns are recorded as constrained, with the JSON the client got."""
    client = _client(tiny_server)
    done = client.chat.completions.parse(model="m", messages=MSGS, response_format=Weather, max_tokens=40, seed=1)
    parsed = done.choices[0].message.parsed
    assert isinstance(parsed, Weather) and done.choices[0].finish_reason == "stop"
    with client.chat.completions.stream(model="m", messages=MSGS, response_format=Weather, max_tokens=40,
                                        seed=2) as stream:
        final = stream.get_final_completion()
    assert isinstance(final.choices[0].message.parsed, Weather)
    store = TrajectoryStore(tiny_server.buffer_dir)
    turn = next(t for t in store.turns() if t.completion_id == done.id)
    store.close()
    assert turn.constrained and Weather.model_validate_json(turn.response_text) == parsed


def test_responses_parse_and_json_with_tools(tiny_server):
    """The Responses API's ``text_format`` is enforced too; with tools and ``tool_choice`` auto the
    reply is either JSON of the schema or calls whose arguments follow their schema."""
    client = _client(tiny_server)
    done = client.responses.parse(model="m", input=MSGS, text_format=Weather, max_output_tokens=40,
                                  extra_body={"seed": 3})
    assert isinstance(done.output_parsed, Weather) and done.status == "completed"
    tools = [{"type": "function", "function": {"name": "get_weather", "strict": True, "parameters": {
        "type": "object", "properties": {"city": {"type": "string", "enum": ["Paris", "Oslo"]}},
        "required": ["city"]}}}]
    for seed in range(3):
        r = client.chat.completions.parse(model="m", messages=MSGS, response_format=Weather, tools=tools,
                                          max_tokens=60, seed=seed)
        message = r.choices[0].message
        if message.tool_calls:
            assert all(json.loads(c.function.arguments)["city"] in ("Paris", "Oslo") for c in message.tool_calls)
            assert all(json.loads(c.function.arguments).keys() == {"city"} for c in message.tool_calls)
        else:
            assert isinstance(message.parsed, Weather)


def test_a_schema_that_cannot_be_compiled_is_a_400(tiny_server):
    client = _client(tiny_server)
    bad = {"type": "json_schema", "json_schema": {"name": "w", "schema": {
        "type": "object", "properties": {"city": {"type": "string", "pattern": "(?<=x)y"}}}}}
    with pytest.raises(openai.BadRequestError) as err:
        client.chat.completions.create(model="m", messages=MSGS, response_format=bad, max_tokens=4)
    assert err.value.body["param"] == "response_format.json_schema.schema"
    assert "look-around" in err.value.body["message"]
    with pytest.raises(openai.BadRequestError) as err:
        client.chat.completions.create(model="m", messages=MSGS, response_format={"type": "json_schema"}, max_tokens=4)
    assert "json_schema.schema" in err.value.body["message"]


def test_forced_call_arguments_admit_only_declared_keys():
    """A forced call's arguments follow the schema exactly: no undeclared key (the schema does not
    say ``additionalProperties: false``), required keys present, types right; a schema that allows
    other keys explicitly keeps them."""
    tok = load_tokenizer("builtin:tiny-qwen3")
    params = {"type": "object", "properties": {"destination": {"type": "string"}, "days": {"type": "integer"}},
              "required": ["destination"]}
    grammar = tool_call_grammar(tok, [{"name": "book", "parameters": params}], multiple=False)

    def call(args: str) -> str:
        return '<tool_call>\n{"name": "book", "arguments": ' + args + '}\n</tool_call>'

    assert grammar_accepts(tok, grammar, call('{"destination": "Paris"}'))
    assert grammar_accepts(tok, grammar, call('{"destination": "Paris", "days": 3}'))
    assert not grammar_accepts(tok, grammar, call('{"tz": "UTC", "destination": "Paris"}'))
    assert not grammar_accepts(tok, grammar, call('{"destination": "Paris", "tz": "UTC"}'))
    assert not grammar_accepts(tok, grammar, call('{"days": 3}'))
    assert not grammar_accepts(tok, grammar, call('{"destination": "Paris", "days": "3"}'))
    open_params = {**params, "additionalProperties": True}
    open_grammar = tool_call_grammar(tok, [{"name": "book", "parameters": open_params}], multiple=False)
    assert grammar_accepts(tok, open_grammar, call('{"destination": "Paris", "tz": "UTC"}'))


def test_closed_schema_closes_declared_objects_only():
    """Objects that declare ``properties`` are closed, at any depth (properties, items, ``$defs``,
    ``anyOf`` branches); an object that allows other keys or combines schemas is left as it is."""
    inner = {"type": "object", "properties": {"x": {"type": "integer"}}}
    schema = {"type": "object", "properties": {"a": inner, "b": {"type": "array", "items": inner},
                                               "c": {"anyOf": [inner, {"type": "null"}]}},
              "$defs": {"D": inner}}
    closed = closed_schema(schema)
    assert closed["additionalProperties"] is False
    for node in (closed["properties"]["a"], closed["properties"]["b"]["items"],
                 closed["properties"]["c"]["anyOf"][0], closed["$defs"]["D"]):
        assert node["additionalProperties"] is False
    assert schema["properties"]["a"] == inner and "additionalProperties" not in inner  # not changed in place
    for kept in ({**inner, "additionalProperties": True}, {**inner, "additionalProperties": {"type": "string"}},
                 {**inner, "patternProperties": {"^t": {}}}, {**inner, "allOf": [{"required": ["x"]}]},
                 {"type": "object"}, {"enum": [{"properties": 1}]}):
        assert closed_schema(kept) == kept


#: an output type the random model can fill without end: two free strings and a list of strings
PERSON = {"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"},
                                           "languages": {"type": "array", "items": {"type": "string"}}},
          "required": ["name", "age", "languages"]}


def test_a_constrained_reply_closes_within_max_tokens(tiny_server):
    """A schema whose strings and list the random model fills without end, with a ``max_tokens``
    too small for what it would write: every reply (streamed or not, ``response_format`` or a
    forced call) ends complete within ``max_tokens`` with finish ``stop`` and follows the schema,
    its last string or list cut short (budget-aware closing, :mod:`openclaw_rl.engine.closing`).
    Without the closing the model writes string content until ``max_tokens`` cuts the JSON."""
    jsonschema = pytest.importorskip("jsonschema")
    client = _client(tiny_server)
    fmt = {"type": "json_schema", "json_schema": {"name": "person", "schema": PERSON}}
    for seed in range(3):
        r = client.chat.completions.create(model="m", messages=MSGS, response_format=fmt, max_tokens=24, seed=seed)
        assert r.choices[0].finish_reason == "stop" and r.usage.completion_tokens <= 24
        jsonschema.validate(json.loads(r.choices[0].message.content), PERSON)
    chunks = list(client.chat.completions.create(model="m", messages=MSGS, response_format=fmt, max_tokens=20,
                                                 seed=5, stream=True))
    assert chunks[-1].choices[0].finish_reason == "stop"
    jsonschema.validate(json.loads("".join(c.choices[0].delta.content or "" for c in chunks if c.choices)), PERSON)
    tools = [{"type": "function", "function": {"name": "remember", "parameters": PERSON}}]
    forced = {"type": "function", "function": {"name": "remember"}}
    for seed in range(2):
        r = client.chat.completions.create(model="m", messages=MSGS, tools=tools, tool_choice=forced, max_tokens=40,
                                           seed=seed)
        (call,) = r.choices[0].message.tool_calls
        assert r.choices[0].finish_reason == "tool_calls" and r.usage.completion_tokens <= 40
        jsonschema.validate(json.loads(call.function.arguments), PERSON)


def test_the_closing_completes_the_grammar_from_any_state():
    """:func:`openclaw_rl.engine.closing.closing_tokens` from states inside a string, a number, a
    list, before required keys and inside a forced call: consumed, the closing completes the
    grammar (the stop token is then allowed), and the text is valid JSON of the schema; near the
    budget the mask narrows to the tokens that start the closing."""
    jsonschema = pytest.importorskip("jsonschema")
    tok = load_tokenizer("builtin:tiny-qwen3")
    stop = tok.convert_tokens_to_ids("<|im_end|>")
    answer = "start: answer\n" + json_rule("answer", PERSON)
    call = tool_call_grammar(tok, [{"name": "remember", "parameters": PERSON}], multiple=False)
    cases = [(answer, ""), (answer, '{"name": "Al'), (answer, '{"name": "Alice", "age": 3'),
             (answer, '{"name": "Alice", "age": 30, "languages": ['),
             (answer, '{"name": "Alice", "age": 30, "languages": ["French", "Eng'),
             (call, '<tool_call>\n{"name": "remember", "arguments": {"name": "Al')]
    for grammar, prefix in cases:
        constraint = GrammarConstraint(grammar_tokenizer(tok, len(tok), [stop]), grammar, len(tok))
        for token_id in tokenize(tok, prefix):
            constraint.consume(token_id)
        closing = constraint.closing(64)
        assert closing is not None and constraint.closing(len(closing)) is None  # it needs len + 1 (stop)
        assert bool((constraint.allowed_V(len(closing) + 2) == constraint.allowed_V()).all())  # free until then
        narrowed = constraint.allowed_V(len(closing) + 1)
        assert bool(narrowed[closing[0]]) and int(narrowed.sum()) <= 4
        for token_id in closing:
            constraint.consume(token_id)
        assert bool(constraint.allowed_V()[stop]) and bool(constraint.allowed_V(1)[stop])
        text = prefix + tok.decode(closing)
        if grammar is call:
            text = text.removeprefix('<tool_call>\n').removesuffix('\n</tool_call>')
            assert json.loads(text)["name"] == "remember"
            text = json.dumps(json.loads(text)["arguments"])
        jsonschema.validate(json.loads(text), PERSON)
