"""Recorded sessions: made for offline training tests (``DATA_PATH``), and checked for the client
suite (one session of linked main turns)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import httpx

from openclaw_rl.capture.store import TrajectoryStore
from openclaw_rl.tls import tls_context


def _chat_turn(server, sid: str, history: list[dict]) -> dict:
    """One chat completions turn; returns the assistant message."""
    r = httpx.post(server.base_url + "/chat/completions", timeout=120, verify=tls_context(),
                   headers={"Authorization": f"Bearer {server.api_key}", "X-Session-Id": sid},
                   json={"messages": history, "max_tokens": 6})
    r.raise_for_status()
    return r.json()["choices"][0]["message"]


def _responses_turn(server, sid: str, history: list[dict]) -> dict:
    """One Responses API turn (``input`` items: the conversation so far); returns the reply as
    an assistant item (its output text)."""
    r = httpx.post(server.base_url + "/responses", timeout=120, verify=tls_context(),
                   headers={"Authorization": f"Bearer {server.api_key}", "X-Session-Id": sid},
                   json={"input": history, "max_output_tokens": 6})
    r.raise_for_status()
    text = "".join(p["text"] for item in r.json()["output"] if item["type"] == "message" for p in item["content"])
    return {"role": "assistant", "content": text}


def _messages_turn(server, sid: str, history: list[dict]) -> dict:
    """One Anthropic Messages API turn; returns the reply as an assistant message (its text)."""
    r = httpx.post(server.base_url + "/messages", timeout=120, verify=tls_context(),
                   headers={"x-api-key": server.api_key, "X-Session-Id": sid},
                   json={"messages": history, "max_tokens": 6})
    r.raise_for_status()
    text = "".join(b["text"] for b in r.json()["content"] if b["type"] == "text")
    return {"role": "assistant", "content": text}


#: how each API sends one turn
_TURN = {"chat": _chat_turn, "responses": _responses_turn, "messages": _messages_turn}


def record_sessions(server, out: Path, sessions=("s1", "s2", "s3"), turns: int = 2,
                    reply: str = "thanks {i}", apis: tuple[str, ...] = ("chat",)) -> Path:
    """Talk to ``server`` (sessions of ``turns`` turns; after each reply the user answers ``reply``,
    formatted with the turn index ``i``) and export these sessions of the store (the server is
    shared by tests) to ``out`` (``openclaw-rl export`` format); returns ``out``.

    ``apis``: the API each session talks through (``chat``, ``responses``, ``messages``), cycled
    over the sessions."""
    for n, sid in enumerate(sessions):
        turn = _TURN[apis[n % len(apis)]]
        messages = [{"role": "user", "content": f"hello {sid}"}]
        for i in range(turns):
            messages += [turn(server, sid, messages), {"role": "user", "content": reply.format(i=i)}]
    subprocess.run([sys.executable, "-m", "openclaw_rl.cli", "export", "--rl-buffer-dir",
                    str(server.buffer_dir), "--out", str(out)], check=True)
    lines = [line for line in out.read_text().splitlines() if json.loads(line)["session_id"] in sessions]
    out.write_text("".join(line + "\n" for line in lines))
    return out


def turns_by_completion_id(server, ids: list[str]) -> list:
    """The turns ``server`` recorded for the response ids ``ids`` (``chatcmpl-``, ``resp_``,
    ``msg_``), in that order. Raises ``KeyError`` for an id with no recorded turn."""
    store = TrajectoryStore(server.buffer_dir)
    try:
        by_id = {t.completion_id: t for t in store.turns() if t.completion_id in ids}
    finally:
        store.close()
    return [by_id[i] for i in ids]


def one_session(server, system: str, n: int) -> list:
    """The ``n`` recorded turns whose system message is ``system``, oldest first, checked to be
    one session of main turns, each linked to the next one (next state recorded; the next prompt
    extends this turn's prompt and sampled ids, or, where the client changed the tools and so the
    system prompt, the break is detected: ``prefix_ok`` false). Raises ``AssertionError`` otherwise."""
    store = TrajectoryStore(server.buffer_dir)
    try:
        turns = [t for t in store.turns() if t.messages[0].get("content") == system]
    finally:
        store.close()
    turns.sort(key=lambda t: t.id)
    assert len(turns) == n, [(t.id, t.response_text) for t in turns]
    assert len({t.session_id for t in turns}) == 1
    assert all(t.turn_type == "main" and t.trainable for t in turns)
    for prev, nxt in zip(turns, turns[1:]):
        assert prev.next_state is not None and prev.status != "awaiting_next", prev
        extends = nxt.prompt_ids[:len(prev.prompt_ids) + len(prev.response_ids)] == prev.prompt_ids + prev.response_ids
        assert nxt.prefix_ok is extends is (nxt.tools == prev.tools), (prev.tools, nxt.tools)
    return turns
