"""Bad input found by trying the server as a new user: each gets a 4xx OpenAI error, the
connection stays usable, and nothing recorded is touched."""

from __future__ import annotations

import json
import subprocess
import sys

import httpx
import openai
import pytest

from openclaw_rl.capture.store import TrajectoryStore

AUTH = {"Authorization": "Bearer sk-test"}
MSG = [{"role": "user", "content": "hi"}]


@pytest.mark.parametrize("body,headers,needle", [
    ({"messages": MSG, "seed": 2 ** 80}, {}, "seed"),
    ({"messages": MSG}, {"X-Turn-Type": "banana"}, "X-Turn-Type"),
    ({"messages": [{"role": "user", "content": "\ud800"}]}, {}, "Unicode"),
    ({"messages": MSG, "max_tokens": "4"}, {}, "max_tokens"),
    ({"messages": MSG, "stream": "yes"}, {}, "stream"),
    ({"messages": MSG, "tool_choice": "required"}, {}, "required"),
    ({"messages": MSG, "tools": [{"type": "function", "function": {"name": "a"}}],
      "tool_choice": {"type": "function", "function": {"name": "b"}}}, {}, "not in tools"),
])
def test_bad_requests_are_400_and_keep_the_connection(tiny_server, body, headers, needle):
    store = TrajectoryStore(tiny_server.buffer_dir)
    before = store.counts()
    with httpx.Client(base_url=tiny_server.base_url, headers=AUTH, timeout=60) as client:
        raw = json.dumps(body, ensure_ascii=True).encode()
        r = client.post("/chat/completions", content=raw, headers={**headers, "Content-Type": "application/json"})
        assert r.status_code == 400, r.text
        assert needle in r.json()["error"]["message"]
        ok = client.post("/chat/completions", json={"messages": MSG, "max_tokens": 2})  # same connection
        assert ok.status_code == 200
    after = store.counts()
    assert after.get("side", 0) == before.get("side", 0)
    store.close()


def test_deeply_nested_json(tiny_server):
    r = httpx.post(tiny_server.base_url + "/chat/completions", content=b"[" * 100000,
                   headers={**AUTH, "Content-Type": "application/json"}, timeout=60)
    assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_json"


def test_models_retrieve(tiny_server):
    client = openai.OpenAI(base_url=tiny_server.base_url, api_key="sk-test", max_retries=0)
    assert client.models.retrieve("builtin:tiny-qwen3").id == "builtin:tiny-qwen3"
    with pytest.raises(openai.NotFoundError):
        client.models.retrieve("gpt-9")


def test_user_key_keeps_separate_conversations_apart(tiny_server):
    client = openai.OpenAI(base_url=tiny_server.base_url, api_key="sk-test", max_retries=0)
    a = [{"role": "user", "content": "bob chat one"}]
    r = client.chat.completions.create(model="m", messages=a, user="bob-x", max_tokens=3, seed=1)
    client.chat.completions.create(model="m", messages=[{"role": "user", "content": "bob chat two"}],
                                   user="bob-x", max_tokens=3)
    a += [{"role": "assistant", "content": r.choices[0].message.content}, {"role": "user", "content": "more"}]
    client.chat.completions.create(model="m", messages=a, user="bob-x", max_tokens=3, seed=1)
    store = TrajectoryStore(tiny_server.buffer_dir)
    sessions = {}
    for t in store.turns():
        if t.session_id.startswith("bob-x:"):
            sessions.setdefault(t.session_id, []).append(t)
    assert sorted(len(v) for v in sessions.values()) == [1, 2]
    two = next(v for v in sessions.values() if len(v) == 2)
    assert two[0].next_state == "more"
    one = next(v for v in sessions.values() if len(v) == 1)
    assert one[0].next_state is None  # conversation two never became one's next state
    store.close()


def _cli(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "openclaw_rl.cli", *args], capture_output=True, text=True)


def test_import_validates_before_writing(tmp_path):
    bad_rows = [
        {"session_id": "s", "turns": [{"prompt": "p", "response": "r", "prompt_ids": "x"}]},
        {"session_id": "s", "turns": [{"prompt": "p", "response": "r", "prompt_ids": [1],
                                       "response_ids": [2], "response_logprobs": [1e400]}]},
        {"session_id": "s", "turns": [{"prompt": "p", "response": "r", "messages": "x"}]},
        {"session_id": "s", "turns": [{"prompt": "p", "response": "r", "weight_version": "v1"}]},
    ]
    for i, row in enumerate(bad_rows):
        f = tmp_path / f"bad{i}.jsonl"
        f.write_text(json.dumps(row).replace("1e+400", "1e400") + "\n")
        r = _cli("import", str(f), "--rl-buffer-dir", str(tmp_path / f"buf{i}"))
        assert r.returncode == 2 and r.stderr.count("\n") == 1 and "error:" in r.stderr, r.stderr
        assert not (tmp_path / f"buf{i}").exists()
    good = tmp_path / "good.jsonl"
    good.write_text("\ufeff" + json.dumps({"session_id": "g", "turns": [{"prompt": "p", "response": "r"}]}) + "\n")
    assert _cli("import", str(good), "--rl-buffer-dir", str(tmp_path / "ok")).returncode == 0
    again = _cli("import", str(good), "--rl-buffer-dir", str(tmp_path / "ok"))
    assert again.returncode == 0 and "skipped 1 session" in again.stderr
    store = TrajectoryStore(tmp_path / "ok")
    assert len(store.turns()) == 1
    store.close()


def test_corrupt_store_is_a_one_line_error(tmp_path):
    (tmp_path / "trajectories.sqlite").write_bytes(b"garbage" * 100)
    r = _cli("export", "--rl-buffer-dir", str(tmp_path))
    assert r.returncode == 2 and r.stderr.strip().count("\n") == 0 and "error" in r.stderr
    assert (tmp_path / "trajectories.sqlite").read_bytes() == b"garbage" * 100
