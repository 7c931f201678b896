"""OutputParser: reasoning / content / tool calls, identical for every chunking of the text."""

from __future__ import annotations

import json
import random

import pytest

from openclaw_rl.server.tool_parser import OutputParser, parse_tool_call_json


def _run(chunks, **kw) -> tuple[list[tuple], OutputParser]:
    """Feed ``chunks`` then finish; return merged deltas ``[(kind, text | (index, name, args))]``."""
    parser = OutputParser(**kw)
    deltas = []
    for c in chunks:
        deltas += parser.feed(c)
    deltas += parser.finish()
    merged: list[tuple] = []
    for d in deltas:
        if d.kind == "tool_call":
            tc = d.tool_call
            assert tc.id.startswith("call_") and len(tc.id) == 29
            merged.append(("tool_call", (tc.index, tc.name, tc.arguments)))
        elif merged and merged[-1][0] == d.kind:
            merged[-1] = (d.kind, merged[-1][1] + d.text)
        else:
            assert d.text, "empty text delta"
            merged.append((d.kind, d.text))
    # the accumulated attributes agree with the deltas
    assert parser.content == "".join(t for k, t in merged if k == "content")
    assert parser.reasoning == "".join(t for k, t in merged if k == "reasoning")
    assert [(c.index, c.name, c.arguments) for c in parser.tool_calls] == [t for k, t in merged if k == "tool_call"]
    return merged, parser


def _random_chunkings(text: str, seed: int, n: int = 60):
    """Yield ``n`` random chunkings of ``text`` (empty chunks included), plus char-by-char."""
    rng = random.Random(seed)
    yield list(text)
    yield [""] + [c for ch in text for c in (ch, "")]
    for _ in range(n):
        chunks, i = [], 0
        while i < len(text):
            k = rng.choice([0, 1, 1, 2, 3, 5, 8, 13])
            chunks.append(text[i:i + k])
            i += k
        yield chunks


def _assert_chunking_invariant(text: str, seed: int, **kw) -> list[tuple]:
    whole, _ = _run([text], **kw)
    for chunks in _random_chunkings(text, seed):
        assert "".join(chunks) == text
        got, _ = _run(chunks, **kw)
        assert got == whole, chunks
    return whole


CALL_A = '<tool_call>\n{"name": "read", "arguments": {"path": "hello.txt"}}\n</tool_call>'
CALL_B = '<tool_call>{"name": "exec", "arguments": {"cmd": "ls -la"}}</tool_call>'


@pytest.mark.parametrize("text, expected", [
    ("Hello, world!", [("content", "Hello, world!")]),
    ("<think>\nLet me think.\n</think>\n\nThe answer is 4.",
     [("reasoning", "Let me think."), ("content", "The answer is 4.")]),
    ("  \n<think>r1\n\nr2</think>ok", [("reasoning", "r1\n\nr2"), ("content", "ok")]),
    ("I will read it.\n" + CALL_A,
     [("content", "I will read it."), ("tool_call", (0, "read", '{"path": "hello.txt"}'))]),
    ("<think>plan</think>\n" + CALL_A + "\n" + CALL_B + "\n",
     [("reasoning", "plan"), ("tool_call", (0, "read", '{"path": "hello.txt"}')),
      ("tool_call", (1, "exec", '{"cmd": "ls -la"}'))]),
    # a <think> that does not open the reply is plain content
    ("Sure. <think>x</think> done", [("content", "Sure. <think>x</think> done")]),
    # near-markers are content
    ("a <toolbox> b </tool c <", [("content", "a <toolbox> b </tool c <")]),
    ("<thinking>no</thinking>", [("content", "<thinking>no</thinking>")]),
])
def test_parse_examples_in_every_chunking(text, expected):
    assert _assert_chunking_invariant(text, seed=len(text)) == expected


def test_multiple_tool_calls_with_content_between():
    text = "First " + CALL_A + " then " + CALL_B + " end"
    got = _assert_chunking_invariant(text, seed=7)
    assert got == [("content", "First"), ("tool_call", (0, "read", '{"path": "hello.txt"}')),
                   ("content", " then"), ("tool_call", (1, "exec", '{"cmd": "ls -la"}')),
                   ("content", " end")]
    _, parser = _run([text])
    ids = [c.id for c in parser.tool_calls]
    assert len(set(ids)) == 2
    assert parser.tool_calls[1].to_openai() == {
        "id": ids[1], "type": "function", "function": {"name": "exec", "arguments": '{"cmd": "ls -la"}'}}


def test_tool_call_arguments_as_json_string_and_parameters_key():
    text = ('<tool_call>{"name": "a", "arguments": "{\\"x\\": 1}"}</tool_call>'
            '<tool_call>{"name": "b", "parameters": {"y": [1, 2]}}</tool_call>'
            '<tool_call>{"name": "c"}</tool_call>')
    got = _assert_chunking_invariant(text, seed=3)
    assert got == [("tool_call", (0, "a", '{"x": 1}')), ("tool_call", (1, "b", '{"y": [1, 2]}')),
                   ("tool_call", (2, "c", "{}"))]


@pytest.mark.parametrize("body", [
    '{"name": "read", "arguments": {"path": }',  # broken JSON
    '["read"]',  # not an object
    '{"arguments": {}}',  # no name
    '{"name": "", "arguments": {}}',  # empty name
    '{"name": "read", "arguments": "not json"}',  # arguments string is not JSON
])
def test_invalid_tool_call_kept_as_content_nothing_lost(body):
    text = f"Before <tool_call>{body}</tool_call> after"
    got = _assert_chunking_invariant(text, seed=11)
    assert got == [("content", text)]
    _, parser = _run([text])
    assert parser.tool_calls == []


def test_invalid_then_valid_tool_call():
    text = "<tool_call>{oops}</tool_call>" + CALL_B
    got = _assert_chunking_invariant(text, seed=5)
    assert got == [("content", "<tool_call>{oops}</tool_call>"), ("tool_call", (0, "exec", '{"cmd": "ls -la"}'))]


def test_unterminated_tool_call_at_finish():
    # valid JSON but no </tool_call>: resolved as a call at finish
    text = 'Calling.\n<tool_call>\n{"name": "read", "arguments": {"path": "x"}}\n'
    got = _assert_chunking_invariant(text, seed=13)
    assert got == [("content", "Calling."), ("tool_call", (0, "read", '{"path": "x"}'))]
    # cut off mid-JSON: the raw text comes back as content, trailing whitespace included
    text = 'Calling. <tool_call>{"name": "read", "argu \n'
    got = _assert_chunking_invariant(text, seed=17)
    assert got == [("content", text)]


def test_unterminated_reasoning_at_finish():
    text = "<think>\nstill thinking\n\n"
    assert _assert_chunking_invariant(text, seed=19) == [("reasoning", "still thinking")]


def test_partial_marker_at_end_is_flushed_as_content():
    for tail in ("<", "<tool", "<tool_call", "<tool_cal"):
        text = "value " + tail
        assert _assert_chunking_invariant(text, seed=23) == [("content", text)]
    # a lone "<thi" at the very start is not reasoning either
    assert _assert_chunking_invariant("<thi", seed=29) == [("content", "<thi")]


@pytest.mark.parametrize("split", ["<", "<t", "<tool", "<tool_call", "<tool_call>"])
def test_marker_prefix_at_chunk_boundary_is_held(split):
    text = "Hi " + CALL_B
    cut = len("Hi ") + len(split)
    parser = OutputParser()
    first = parser.feed(text[:cut])
    # nothing of the marker (nor the whitespace before it) has leaked as content
    assert [(d.kind, d.text) for d in first] == [("content", "Hi")]
    rest = parser.feed(text[cut:]) + parser.finish()
    assert [d.kind for d in rest] == ["tool_call"]
    assert parser.content == "Hi"


@pytest.mark.parametrize("split", ["</", "</think", "</thi"])
def test_think_close_prefix_at_chunk_boundary(split):
    text = "<think>abc" + split
    parser = OutputParser()
    out = parser.feed(text)
    assert "".join(d.text for d in out) == "abc"
    out = parser.feed("</think>"[len(split):] + "x") + parser.finish()
    assert [(d.kind, d.text) for d in out] == [("content", "x")]
    assert parser.reasoning == "abc"


def test_unicode_and_multibyte_text():
    text = ("<think>思考中… 🤔 naïve</think>\nΑπάντηση: 42 — ✓ 👩‍👩‍👧 "
            '<tool_call>{"name": "write", "arguments": {"text": "héllo 🌍 日本"}}</tool_call>')
    got = _assert_chunking_invariant(text, seed=31)
    assert got == [("reasoning", "思考中… 🤔 naïve"), ("content", "Απάντηση: 42 — ✓ 👩‍👩‍👧"),
                   ("tool_call", (0, "write", '{"text": "héllo 🌍 日本"}'))]
    # non-ASCII is kept verbatim in the arguments JSON (no \u escapes)
    assert json.loads(got[-1][1][2]) == {"text": "héllo 🌍 日本"}


def test_parse_tools_false_leaves_markup_as_content():
    text = "<think>r</think>x " + CALL_A + " y"
    got = _assert_chunking_invariant(text, seed=37, parse_tools=False)
    assert got == [("reasoning", "r"), ("content", "x " + CALL_A + " y")]
    got = _assert_chunking_invariant(text, seed=41, parse_tools=False, parse_reasoning=False)
    assert got == [("content", text)]


def test_random_documents_any_chunking():
    """Random mixes of pieces: the parse never depends on how the text was cut."""
    pieces = ["Hello", " ", "\n", "<", "tool", "<tool_call>", "</tool_call>", CALL_A, CALL_B,
              "é🙂", "<think>", "</think>", '{"name": "x"}', "NO_REPLY", "  \n\n"]
    rng = random.Random(1234)
    for doc in range(40):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(1, 12)))
        if rng.random() < 0.3:
            text = "<think>" + text
        whole, _ = _run([text])
        # nothing lost: every non-whitespace character of content/reasoning is in the text
        flat = "".join(t for k, t in whole if k != "tool_call")
        assert len(flat.replace(" ", "").replace("\n", "")) <= len(text)
        for chunks in _random_chunkings(text, seed=doc, n=15):
            assert _run(chunks)[0] == whole, (text, chunks)


def test_parse_tool_call_json_direct():
    assert parse_tool_call_json('{"name": "f", "arguments": {"a": "ü"}}') == ("f", '{"a": "ü"}')
    assert parse_tool_call_json('{"name": "f", "arguments": "{\\"a\\":1}"}') == ("f", '{"a":1}')
    assert parse_tool_call_json("{") is None
    assert parse_tool_call_json('{"name": 3}') is None
