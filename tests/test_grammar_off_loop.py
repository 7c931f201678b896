"""Constrained decoding (forced tool calls) never runs its expensive setup on the event loop or
in the engine's decode loop, where it would stall every other request (issue 16: "tokenization
and rendering never block other requests"). The first grammar of a process costs seconds
(llguidance's tokenizer tables and first mask); the server builds them on a thread at start."""

from __future__ import annotations

import asyncio
import threading

import pytest

import openclaw_rl.engine.grammar as grammar_mod
import openclaw_rl.engine.transformers_engine as engine_mod
import openclaw_rl.server.chat as chat_mod
from openclaw_rl.engine import SamplingParams, create_engine
from openclaw_rl.server import build_server, parse_server_args
from openclaw_rl.server.tool_choice import tool_call_grammar

FUNCS = [{"name": "write", "parameters": {"type": "object", "properties": {"text": {"type": "string"}},
                                          "required": ["text"]}}]


def _record_threads(monkeypatch, module, name: str) -> list[threading.Thread]:
    """Wrap ``module.name`` so that each call appends the thread it ran on to the returned list."""
    threads, real = [], getattr(module, name)

    def recording(*args, **kwargs):
        threads.append(threading.current_thread())
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, recording)
    return threads


@pytest.fixture(scope="module")
def engine():
    eng = create_engine("transformers", "builtin:tiny-qwen3")
    yield eng
    asyncio.run(eng.aclose())


def test_the_engine_builds_a_requests_matcher_off_the_loop_and_decode_thread(engine, monkeypatch):
    built_on = _record_threads(monkeypatch, engine_mod, "GrammarConstraint")
    grammar = tool_call_grammar(engine.tokenizer, FUNCS, multiple=False)

    async def go():
        loop_thread = threading.current_thread()
        out = await engine.generate([1, 2, 3], SamplingParams(max_new_tokens=4, grammar=grammar, seed=0))
        return loop_thread, out

    loop_thread, out = asyncio.run(go())
    assert len(out.token_ids) == 4
    assert len(built_on) == 1
    assert built_on[0] is not loop_thread and built_on[0] is not engine._worker


def test_the_server_renders_the_tool_choice_grammar_off_the_loop(monkeypatch):
    """The chat service calls ``request_grammar`` (tool_choice, response_format) through a worker thread."""
    called_on = _record_threads(monkeypatch, chat_mod, "request_grammar")
    config = parse_server_args(["--model-path", "builtin:tiny-qwen3", "--no-grammar-warmup"])
    app, engine, _ = build_server(config)
    from openclaw_rl.server.protocol import ChatCompletionRequest

    req = ChatCompletionRequest.model_validate({
        "messages": [{"role": "user", "content": "go"}], "max_tokens": 3, "seed": 0,
        "tools": [{"type": "function", "function": FUNCS[0]}], "tool_choice": "required"})

    async def go():
        events = [e async for e in app.state.service.run(req, {})]
        await engine.aclose()
        return threading.current_thread(), events

    loop_thread, events = asyncio.run(go())
    assert events and len(called_on) == 1 and called_on[0] is not loop_thread


def test_the_server_warms_the_grammar_tables_at_start_unless_told_not_to(monkeypatch):
    monkeypatch.setattr(grammar_mod, "_TOKENIZERS", {})
    for flag, warmed in (("--no-grammar-warmup", False), ("--grammar-warmup", True)):
        _, engine, _ = build_server(parse_server_args(["--model-path", "builtin:tiny-qwen3", flag]))
        for t in threading.enumerate():
            if t.name == "grammar-warmup":
                t.join(timeout=120)
        assert bool(grammar_mod._TOKENIZERS) is warmed, flag
        asyncio.run(engine.aclose())
