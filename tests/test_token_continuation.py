"""Token in, token out across turns: a request that continues a recorded reply is fed that
turn's exact ids, and only the new suffix is tokenized (openclaw_rl.server.continuation).

The rule is checked on both built-in chat templates with constructed turns whose sampled ids are
*not* what re-tokenizing their text gives (so re-rendering would break the prefix), with tool
calls, with a <think> block the client drops, and with a template that re-renders earlier
assistant turns differently; then through the real server with the openai SDK.
"""

from __future__ import annotations

import copy

import openai
import pytest

from openclaw_rl.capture.sessions import reply_fingerprint
from openclaw_rl.capture.store import TrajectoryStore, TurnRecord
from openclaw_rl.models import load_tokenizer
from openclaw_rl.server.continuation import ContinuationBuilder
from openclaw_rl.server.prompt import render_text, tokenize
from openclaw_rl.server.token_bytes import gpt2_byte_decoder

MODELS = ["builtin:tiny-qwen3", "builtin:smollm2-135m"]
TOOLS = [{"type": "function", "function": {"name": "read", "parameters": {
    "type": "object", "properties": {"path": {"type": "string", "enum": ["a.txt", "b.txt"]}},
    "required": ["path"], "additionalProperties": False}}}]


@pytest.fixture(scope="module", params=MODELS)
def tok(request):
    return load_tokenizer(request.param)


def stop_ids(tok) -> set[int]:
    return {i for i in (tok.eos_token_id, tok.convert_tokens_to_ids("<|im_end|>"),
                        tok.convert_tokens_to_ids("<|endoftext|>")) if isinstance(i, int)}


def char_ids(tok, text: str) -> list[int]:
    """One token per byte: a valid but non-canonical tokenization of ``text``."""
    byte_char = {b: c for c, b in gpt2_byte_decoder().items()}
    ids = [tok.convert_tokens_to_ids(byte_char[b]) for b in text.encode()]
    assert tok.decode(ids) == text and ids != tokenize(tok, text)
    return ids


def recorded(tok, messages, response_ids, response_text, tools=None, finish="stop", turn_id=1) -> TurnRecord:
    text = render_text(tok, messages, tools)
    return TurnRecord(session_id="s", turn_type="main", messages=messages, tools=tools, prompt_text=text,
                      prompt_ids=tokenize(tok, text), response_ids=response_ids,
                      response_logprobs=[0.0] * len(response_ids), response_text=response_text,
                      finish_reason=finish, weight_version=0, id=turn_id, turn_uid="s:0")


def build(tok, turn, messages, tools=None, reply_at=None):
    builder = ContinuationBuilder(tok, stop_ids(tok))
    full = render_text(tok, messages, tools)
    reply_at = len(turn.messages) if reply_at is None else reply_at
    return builder.build(messages, tools, full, turn, reply_at), full


@pytest.mark.parametrize("ended", [True, False], ids=["eos", "cut"])
def test_plain_reply_ids_are_reused(tok, ended):
    first = [{"role": "user", "content": "Say hello."}]
    eot = tok.convert_tokens_to_ids("<|im_end|>")
    ids = char_ids(tok, "Hello there") + ([eot] if ended else [])
    turn = recorded(tok, first, ids, "Hello there", finish="stop" if ended else "length")
    msgs = first + [{"role": "assistant", "content": "Hello there"}, {"role": "user", "content": "And then?"}]
    spliced, full = build(tok, turn, msgs)
    assert spliced is not None and spliced.turn_id == 1
    base = turn.prompt_ids + ids
    assert spliced.ids[:len(base)] == base
    # the end-of-turn token is appended to a cut reply, then the rest is the template's own ids
    assert spliced.ids[len(base):] == ([] if ended else [eot]) + tokenize(tok, "\n<|im_start|>user\nAnd then?"
                                                                          "<|im_end|>\n<|im_start|>assistant\n")
    assert tok.decode(spliced.ids) == full  # same text as rendering, other (the sampled) ids
    assert spliced.ids != tokenize(tok, full)


def test_tool_call_reply_and_tool_results(tok):
    first = [{"role": "user", "content": "Read a.txt"}]
    raw = '<tool_call>\n{"name": "read", "arguments": {"path": "a.txt"}}\n</tool_call>'
    ids = tokenize(tok, raw) + [tok.convert_tokens_to_ids("<|im_end|>")]
    turn = recorded(tok, first, ids, raw, tools=TOOLS)
    call = {"id": "call_1", "type": "function", "function": {"name": "read", "arguments": '{"path":"a.txt"}'}}
    msgs = first + [{"role": "assistant", "content": "", "tool_calls": [call]},
                    {"role": "tool", "content": "hello from a", "tool_call_id": "call_1"}]
    spliced, full = build(tok, turn, msgs, TOOLS)
    assert spliced is not None, "arguments equal as JSON are the same call"
    assert spliced.ids[:len(turn.prompt_ids) + len(ids)] == turn.prompt_ids + ids
    suffix = tok.decode(spliced.ids[len(turn.prompt_ids) + len(ids):])
    assert suffix == "\n<|im_start|>user\n<tool_response>\nhello from a\n</tool_response><|im_end|>\n<|im_start|>assistant\n"
    assert full.endswith(suffix)
    other = copy.deepcopy(msgs)
    other[1]["tool_calls"][0]["function"]["arguments"] = '{"path": "b.txt"}'
    assert build(tok, turn, other, TOOLS)[0] is None, "a call with other arguments is an edit"


def test_think_block_kept_when_the_client_drops_it(tok):
    first = [{"role": "user", "content": "Think, then answer."}]
    raw = "<think>\nplan it\n</think>\n\nThe answer."
    ids = tokenize(tok, raw) + [tok.convert_tokens_to_ids("<|im_end|>")]
    turn = recorded(tok, first, ids, raw)
    for assistant in ({"role": "assistant", "content": "The answer."},
                      {"role": "assistant", "content": "The answer.", "reasoning_content": "plan it"}):
        msgs = first + [assistant, {"role": "user", "content": "ok"}]
        spliced, full = build(tok, turn, msgs)
        assert spliced is not None
        assert "<think>\nplan it\n</think>" in tok.decode(spliced.ids)
        assert spliced.ids[:len(turn.prompt_ids) + len(ids)] == turn.prompt_ids + ids
        assert full.endswith(tok.decode(spliced.ids[len(turn.prompt_ids) + len(ids):]))
    edited = first + [{"role": "assistant", "content": "The answer.", "reasoning_content": "other"},
                      {"role": "user", "content": "ok"}]
    assert build(tok, turn, edited)[0] is None


def test_template_that_rerenders_history_differently(tok):
    """A template that writes reasoning only for the last message (Qwen3 strips <think> from
    earlier turns): the split is found by counting end-of-turn tokens, not by text prefix."""
    strip = copy.copy(tok)
    strip.chat_template = tok.chat_template.replace("{%- if message.reasoning_content %}",
                                                    "{%- if message.reasoning_content and loop.last %}")
    assert strip.chat_template != tok.chat_template
    first = [{"role": "user", "content": "Q"}]
    raw = "<think>\nr\n</think>\n\nA"
    ids = tokenize(strip, raw) + [strip.convert_tokens_to_ids("<|im_end|>")]
    turn = recorded(strip, first, ids, raw)
    msgs = first + [{"role": "assistant", "content": "A", "reasoning_content": "r"}, {"role": "user", "content": "Q2"}]
    closed = render_text(strip, msgs[:2], None, add_generation_prompt=False)
    full = render_text(strip, msgs, None)
    assert not full.startswith(closed), "the template renders the history differently"
    spliced, _ = build(strip, turn, msgs)
    assert spliced is not None
    assert strip.decode(spliced.ids[len(turn.prompt_ids) + len(ids):]) == \
        "\n<|im_start|>user\nQ2<|im_end|>\n<|im_start|>assistant\n"


def test_edited_history_falls_back(tok):
    first = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}]
    ids = char_ids(tok, "Hey") + [tok.convert_tokens_to_ids("<|im_end|>")]
    turn = recorded(tok, first, ids, "Hey")
    ok = first + [{"role": "assistant", "content": "Hey"}, {"role": "user", "content": "x"}]
    assert build(tok, turn, ok)[0] is not None
    for edit in ({"role": "assistant", "content": "Hey!"}, {"role": "assistant", "content": " Hey"}):
        assert build(tok, turn, first + [edit, {"role": "user", "content": "x"}])[0] is None
    other_system = [{"role": "system", "content": "Be long."}] + ok[1:]
    assert build(tok, turn, other_system)[0] is None
    assert build(tok, turn, ok, tools=TOOLS)[0] is None, "another tool list renders another prompt"


# ---------------------------------------------------------------------- through the server
def _client(server) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.base_url, api_key="sk-test", max_retries=0, timeout=300)


def _assert_all_extend(store, session_id, n):
    turns = store.turns(session_id=session_id)
    assert len(turns) == n
    for prev, cur in zip(turns, turns[1:]):
        assert cur.prefix_ok is True and cur.prefix_break_at is None
        assert cur.prompt_ids[:len(prev.prompt_ids) + len(prev.response_ids)] == prev.prompt_ids + prev.response_ids
    return turns


def test_sampled_conversations_extend_exactly(tiny_server):
    """Three-turn conversations at temperature 0.7 with 24-token replies echoed as text: every
    next prompt starts with the previous prompt + sampled ids, whatever was sampled."""
    client = _client(tiny_server)
    store = TrajectoryStore(tiny_server.buffer_dir)
    for c in range(3):
        msgs = [{"role": "user", "content": f"Conversation {c}: tell me a story."}]
        for t in range(3):
            r = client.chat.completions.create(model="m", messages=msgs, max_tokens=24, temperature=0.7,
                                               seed=100 * c + t, extra_headers={"X-Session-Id": f"exact-{c}"})
            msgs += [{"role": "assistant", "content": r.choices[0].message.content},
                     {"role": "user", "content": f"go on ({t})"}]
        _assert_all_extend(store, f"exact-{c}", 3)
    store.close()


def test_recorded_non_canonical_ids_are_fed_back(tiny_server):
    """A recorded reply whose ids are not the canonical tokenization of its text (constructed
    here): the follow-up's prompt holds exactly those ids."""
    tok = load_tokenizer("builtin:tiny-qwen3")
    first = [{"role": "user", "content": "constructed turn"}]
    ids = char_ids(tok, "Fine, thanks") + [tok.convert_tokens_to_ids("<|im_end|>")]
    store = TrajectoryStore(tiny_server.buffer_dir)
    store.touch_session("constructed", "header")
    rec = recorded(tok, first, ids, "Fine, thanks")
    rec.session_id, rec.id, rec.turn_uid = "constructed", None, ""
    rec = store.add_turn(rec, fingerprint=reply_fingerprint(
        first, {"role": "assistant", "content": "Fine, thanks", "tool_calls": []}))
    msgs = first + [{"role": "assistant", "content": "Fine, thanks"}, {"role": "user", "content": "good"}]
    _client(tiny_server).chat.completions.create(model="m", messages=msgs, max_tokens=3,
                                                 extra_headers={"X-Session-Id": "constructed"})
    prev, cur = _assert_all_extend(store, "constructed", 2)
    assert prev.id == rec.id and cur.prompt_ids[len(prev.prompt_ids):len(prev.prompt_ids) + len(ids)] == ids
    # the client trims the reply: an edit, rendered and recorded as a break
    msgs[1]["content"] = "Fine"
    _client(tiny_server).chat.completions.create(model="m", messages=msgs, max_tokens=3,
                                                 extra_headers={"X-Session-Id": "constructed"})
    last = store.turns(session_id="constructed")[-1]
    assert last.prefix_ok is False and last.prefix_break_at == len(prev.prompt_ids)
    store.close()


def test_tool_call_turns_extend_exactly(tiny_server):
    """A forced call (tool_choice names the function), its tool result, the next reply."""
    client = _client(tiny_server)
    msgs = [{"role": "user", "content": "read a file"}]
    forced = {"type": "function", "function": {"name": "read"}}
    for t in range(2):
        r = client.chat.completions.create(model="m", messages=msgs, tools=TOOLS, tool_choice=forced,
                                           max_tokens=40, seed=t, extra_headers={"X-Session-Id": "tools-exact"})
        m = r.choices[0].message
        assert r.choices[0].finish_reason == "tool_calls" and m.tool_calls[0].function.name == "read"
        msgs.append({"role": "assistant", "content": m.content,
                     "tool_calls": [c.model_dump() for c in m.tool_calls]})
        msgs += [{"role": "tool", "tool_call_id": c.id, "content": f"contents {t}"} for c in m.tool_calls]
    client.chat.completions.create(model="m", messages=msgs, tools=TOOLS, max_tokens=5,
                                   extra_headers={"X-Session-Id": "tools-exact"})
    store = TrajectoryStore(tiny_server.buffer_dir)
    _assert_all_extend(store, "tools-exact", 3)
    store.close()


def test_smollm2_server_text_and_forced_call_turns_extend_exactly(tmp_path):
    """The other built-in template through its own server: a sampled reply, a call forced with
    tool_choice (markers are plain text in SmolLM2's vocabulary), its result, the next reply."""
    from tests.support.server import running_server

    with running_server("builtin:smollm2-135m", tmp_path / "rl_buffer") as server:
        client = _client(server)
        msgs = [{"role": "user", "content": "Tell me about tide pools."}]
        r = client.chat.completions.create(model="m", messages=msgs, tools=TOOLS, max_tokens=12,
                                           temperature=0.7, seed=1, extra_headers={"X-Session-Id": "smol"})
        m = r.choices[0].message  # the same tool list on every turn: another list is another prompt
        msgs += [{"role": "assistant", "content": m.content,
                  "tool_calls": [c.model_dump() for c in m.tool_calls or []]},
                 {"role": "user", "content": "Now read a file."}]
        r = client.chat.completions.create(model="m", messages=msgs, tools=TOOLS, max_tokens=40, seed=2,
                                           tool_choice={"type": "function", "function": {"name": "read"}},
                                           extra_headers={"X-Session-Id": "smol"})
        (call,) = r.choices[0].message.tool_calls
        msgs += [{"role": "assistant", "content": r.choices[0].message.content, "tool_calls": [call.model_dump()]},
                 {"role": "tool", "tool_call_id": call.id, "content": "tide pools are rocky"}]
        client.chat.completions.create(model="m", messages=msgs, tools=TOOLS, max_tokens=6, seed=3,
                                       extra_headers={"X-Session-Id": "smol"})
        store = TrajectoryStore(server.buffer_dir)
        turns = _assert_all_extend(store, "smol", 3)
        assert turns[1].tool_calls[0]["function"]["name"] == "read"
        store.close()
