"""A forced tool call ends: ``tool_choice`` ``"required"`` (or a named function) gives one call
and then the end of the turn, by construction of the grammar, unless the request says
``parallel_tool_calls: true``; a forced reply cut by ``max_tokens`` returns no template markup as
content, and the store records what the client saw.

The grammar checks drive llguidance with real token ids of constructed replies; the server checks
drive the real ``openai`` SDK against the real server on the tiny model with fixed seeds (its
random weights would otherwise go on calling until ``max_tokens``).
"""

from __future__ import annotations

import json
import uuid

import openai

from openclaw_rl.models import load_tokenizer
from openclaw_rl.server.protocol import ChatCompletionRequest
from openclaw_rl.server.response_format import request_grammar
from tests.support.grammar import grammar_accepts
from tests.support.sessions import turns_by_completion_id

CITIES = ["Paris", "Oslo"]
TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string", "enum": CITIES}}, "required": ["city"]}}}]
MSGS = [{"role": "user", "content": "What is the weather in Paris and in Oslo?"}]
CALL = '<tool_call>\n{{"name": "get_weather", "arguments": {{"city": "{}"}}}}\n</tool_call>'


def _client(server) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.base_url, api_key="sk-test", max_retries=0, timeout=300)


def test_a_constrained_reply_holds_one_call_unless_parallel_calls_are_asked_for():
    """``required`` without ``parallel_tool_calls`` (or with false), a named function, and tools
    beside a ``response_format``: one call, then only the stop token; ``parallel_tool_calls: true``
    allows a second call."""
    tok = load_tokenizer("builtin:tiny-qwen3")
    one, two = CALL.format("Paris"), CALL.format("Paris") + "\n" + CALL.format("Oslo")
    answer = {"type": "json_schema", "json_schema": {"name": "w", "schema": {"type": "object"}}}
    for extra in ({"tool_choice": "required"}, {"tool_choice": "required", "parallel_tool_calls": False},
                  {"tool_choice": {"type": "function", "function": {"name": "get_weather"}},
                   "parallel_tool_calls": True},
                  {"response_format": answer}):
        grammar = request_grammar(ChatCompletionRequest(messages=MSGS, tools=TOOLS, **extra), tok)
        assert grammar_accepts(tok, grammar, one), extra
        assert not grammar_accepts(tok, grammar, two), extra
        assert not grammar_accepts(tok, grammar, one + "\n"), extra
    for extra in ({"tool_choice": "required"}, {"response_format": answer}):
        grammar = request_grammar(ChatCompletionRequest(messages=MSGS, tools=TOOLS, parallel_tool_calls=True,
                                                        **extra), tok)
        assert grammar_accepts(tok, grammar, one) and grammar_accepts(tok, grammar, two), extra


def test_required_ends_after_one_call(tiny_server):
    """On fixed seeds, ``required`` replies with one call and ends (``tool_calls``, never
    ``length``), non-streamed and through the SDK's streaming helper (which raises
    ``LengthFinishReasonError`` on a reply cut by ``max_tokens``)."""
    client = _client(tiny_server)
    for seed in range(4):
        r = client.chat.completions.create(model="m", messages=MSGS, tools=TOOLS, tool_choice="required",
                                           max_tokens=200, seed=seed)
        choice = r.choices[0]
        assert choice.finish_reason == "tool_calls", (seed, choice)
        (call,) = choice.message.tool_calls
        assert json.loads(call.function.arguments)["city"] in CITIES
        assert r.usage.completion_tokens < 40  # one call and the end of turn, not a run to max_tokens
    with client.chat.completions.stream(model="m", messages=MSGS, tools=TOOLS, tool_choice="required",
                                        max_tokens=200, seed=7) as stream:
        final = stream.get_final_completion()
    assert final.choices[0].finish_reason == "tool_calls" and len(final.choices[0].message.tool_calls) == 1


def test_a_forced_call_cut_by_max_tokens_leaks_no_markup(tiny_server):
    """A forced call cut by ``max_tokens`` is no call and no content (not ``<tool_call>`` text),
    streamed or not; the store records finish ``length`` and the empty reply the client saw, and
    the conversation's next request, which sends that reply back, continues the same session and
    gives the cut turn its next state."""
    client = _client(tiny_server)
    forced = {"type": "function", "function": {"name": "get_weather"}}
    asked = [{"role": "user", "content": f"What is the weather in Paris? ({uuid.uuid4().hex})"}]
    r = client.chat.completions.create(model="m", messages=asked, tools=TOOLS, tool_choice=forced, max_tokens=5,
                                       seed=1)
    choice = r.choices[0]
    assert choice.finish_reason == "length" and not choice.message.tool_calls
    assert not choice.message.content, choice.message.content
    chunks = list(client.chat.completions.create(model="m", messages=MSGS, tools=TOOLS, tool_choice=forced,
                                                 max_tokens=5, seed=2, stream=True))
    streamed = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert streamed == "" and chunks[-1].choices[0].finish_reason == "length"
    assert not any(c.choices[0].delta.tool_calls for c in chunks if c.choices)

    history = asked + [{"role": "assistant", "content": choice.message.content or ""},
                       {"role": "user", "content": "Please try again."}]
    nxt = client.chat.completions.create(model="m", messages=history, tools=TOOLS, max_tokens=3, seed=3)
    cut, then = turns_by_completion_id(tiny_server, [r.id, nxt.id])
    assert cut.finish_reason == "length" and cut.constrained and "<tool_call>" in cut.response_text
    assert not cut.tool_calls
    assert then.session_id == cut.session_id and cut.turn_type == "main"
    assert (cut.next_state_role, cut.next_state) == ("user", "Please try again.")
