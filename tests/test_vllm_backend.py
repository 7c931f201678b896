"""``--backend vllm`` for real, on vLLM's CPU build (``make vllm``): the intercept server in front
of vLLM servers records exactly what vLLM consumed and sampled, a weight update under load never
fails a request and every turn carries the version that produced it, and sessions stay on their
replica.

One module, two vLLM servers (each ~1 GB and about a minute to start on a small CPU): server A
starts its own engine (the ``--backend vllm`` path a user takes), the test starts a second one,
and server B fronts both (``--engine-url`` twice).
"""

from __future__ import annotations

import contextlib
import json
import shlex
import subprocess
import sys
import threading
import time

import httpx
import pytest

from openclaw_rl.capture.store import TrajectoryStore
from openclaw_rl.engine.engine_servers import start_engine_servers, stop_engine_servers
from openclaw_rl.engine.replicas import affinity_score
from openclaw_rl.models import load_tokenizer, resolve_model_path
from openclaw_rl.server.tool_choice import tool_call_grammar
from openclaw_rl.server.launcher import free_port
from tests.support.server import start_server, stop_server
from tests.support.vllm import ENGINE_ARGS, VLLM_PYTHON, needs_vllm, vllm_generate, vllm_requests
from tests.support.vllm_model import second_version, vllm_tiny_model

pytestmark = [pytest.mark.slow, pytest.mark.vllm, needs_vllm]

AUTH = {"Authorization": "Bearer sk-test"}
START_TIMEOUT = 900


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    """``(server A, server B, A's engine URL, the second engine's URL)``; all stopped by PID after."""
    tmp = tmp_path_factory.mktemp("vllm")
    model = vllm_tiny_model()
    extra: list = []
    errors: list = []

    def second_engine():
        try:
            extra.extend(start_engine_servers("vllm", model, str(VLLM_PYTHON), [[]], None, shlex.split(ENGINE_ARGS),
                                              tmp / "logs-extra", START_TIMEOUT))
        except Exception as exc:  # reported by the fixture below
            errors.append(exc)

    servers: list = []
    starter = threading.Thread(target=second_engine)
    starter.start()
    try:
        try:
            servers.append(start_server(str(model), tmp / "a" / "rl_buffer", "--backend", "vllm",
                                        "--engine-args", ENGINE_ARGS,
                                        "--default-max-tokens", "16", "--torch-threads", "1",
                                        timeout=START_TIMEOUT))
        finally:
            starter.join()
        if errors:
            raise errors[0]
        a = servers[0]
        engine_a = httpx.get(f"http://127.0.0.1:{a.port}/healthz").json()["engine"]["replicas"][0]["url"]
        servers.append(start_server(str(model), tmp / "b" / "rl_buffer", "--backend", "vllm",
                                    "--engine-url", engine_a, "--engine-url", extra[0].url,
                                    "--torch-threads", "1", timeout=START_TIMEOUT))
        yield a, servers[1], engine_a, extra[0].url
    finally:
        for server in reversed(servers):
            stop_server(server)
        stop_engine_servers(extra)


def test_an_engine_that_cannot_start_says_why_in_one_line(tmp_path):
    """``openclaw-rl serve --backend vllm`` asking vLLM for more KV cache than the machine has: the
    server exits 2 with one line that quotes vLLM's own reason, and the engine's log is in the
    server's buffer folder (the default ``--engine-log-dir``), not the current directory."""
    cmd = [sys.executable, "-m", "openclaw_rl.server", "--model-path", str(vllm_tiny_model()), "--backend", "vllm",
           "--engine-args", ENGINE_ARGS, "--engine-kv-cache-gib", "100000", "--port", str(free_port()),
           "--rl-buffer-dir", str(tmp_path / "buf")]
    proc = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=START_TIMEOUT)
    assert proc.returncode == 2, proc.stderr[-3000:]
    error = proc.stderr.strip().splitlines()[-1]
    assert error.startswith("openclaw-rl serve: error: vllm server exited with"), proc.stderr[-3000:]
    assert "less than requested memory for kv" in error, error  # vLLM's ValueError, quoted
    log = tmp_path / "buf" / "logs" / "engine-vllm-0.log"
    assert f"(log: {log})" in error and log.is_file()
    assert not (tmp_path / "logs").exists()  # the current directory


def _chat(server, messages, session: str, **body) -> dict:
    r = httpx.post(server.base_url + "/chat/completions", headers={**AUTH, "X-Session-Id": session}, timeout=300,
                   json={"messages": messages, **body})
    assert r.status_code == 200, r.text
    return r.json()


def _stream(server, messages, session: str, **body) -> list[dict]:
    """The SSE chunks of one streamed completion (asserts it ended with ``[DONE]``)."""
    import json

    with httpx.stream("POST", server.base_url + "/chat/completions", timeout=300,
                      headers={**AUTH, "X-Session-Id": session},
                      json={"messages": messages, "stream": True, **body}) as r:
        assert r.status_code == 200, r.read()
        lines = [line[6:] for line in r.iter_lines() if line.startswith("data: ")]
    assert lines[-1] == "[DONE]", lines[-3:]
    return [json.loads(line) for line in lines[:-1]]


@contextlib.contextmanager
def _traffic(server, messages, sessions: list[str], new_session_each: bool, max_tokens: int):
    """Greedy streamed chats in one thread per session until the block ends; yields the status
    list (200 per answered chat, -1 per failed one). ``new_session_each``: every chat opens a new
    session ``<session>-<n>`` instead of continuing one."""
    statuses: list[int] = []
    stop = threading.Event()

    def loop(session: str):
        n = 0
        while not stop.is_set():
            try:
                _stream(server, messages, f"{session}-{n}" if new_session_each else session,
                        max_tokens=max_tokens, temperature=0)
                statuses.append(200)
            except AssertionError:
                statuses.append(-1)
            n += 1

    threads = [threading.Thread(target=loop, args=(s,)) for s in sessions]
    for t in threads:
        t.start()
    try:
        yield statuses
    finally:
        stop.set()
        for t in threads:
            t.join()


def _turns(server, session: str):
    store = TrajectoryStore(server.buffer_dir)
    try:
        return store.turns(session)
    finally:
        store.close()


def _assert_same_as_vllm(turn, answer: dict) -> None:
    """The recorded turn holds exactly vLLM's own ids, and its logprobs (to float32 rounding:
    vLLM recomputes the prompt, or reuses a cached prefix, in another batch)."""
    assert turn.response_ids == answer["token_ids"]
    vllm_logprobs = [e["logprob"] for e in answer["logprobs"]["content"]]
    assert turn.response_logprobs == pytest.approx(vllm_logprobs, abs=1e-4)


def test_conversation_is_recorded_token_exactly(stack):
    a, _b, engine_a, _ = stack
    assert (a.buffer_dir / "logs" / "engine-vllm-0.log").is_file()  # the default --engine-log-dir
    messages = [{"role": "user", "content": "Hello there, who are you?"}]
    first = _chat(a, messages, "exact", max_tokens=12, temperature=0)
    messages += [first["choices"][0]["message"], {"role": "user", "content": "Tell me more."}]
    chunks = _stream(a, messages, "exact", max_tokens=12, temperature=1.0, seed=7, logprobs=True, top_logprobs=2)
    streamed = [lp for c in chunks for lp in ((c["choices"][0].get("logprobs") or {}).get("content") or [])]
    text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks)
    messages += [{"role": "assistant", "content": text}, {"role": "user", "content": "Thanks!"}]
    _chat(a, messages, "exact", max_tokens=12, temperature=0)

    turns = _turns(a, "exact")
    assert [t.weight_version for t in turns] == [0, 0, 0]
    eos = [151645, 151643]
    for turn, (temperature, seed) in zip(turns, [(0.0, None), (1.0, 7), (0.0, None)]):
        answer = vllm_generate(engine_a, turn.prompt_ids, len(turn.response_ids), temperature, seed, eos)
        _assert_same_as_vllm(turn, answer)
    # what the client saw is what was recorded
    assert [lp["logprob"] for lp in streamed] == turns[1].response_logprobs
    assert all(len(lp["top_logprobs"]) == 2 for lp in streamed)
    for lp in streamed:  # best first, and the sampled token is no better than the best
        best = [alt["logprob"] for alt in lp["top_logprobs"]]
        assert best == sorted(best, reverse=True) and lp["logprob"] <= best[0] + 1e-6


def test_forced_tool_call_is_constrained_by_vllm(stack):
    """``tool_choice`` naming a function: vLLM's llguidance backend enforces the same grammar the
    transformers engine uses, the reply is a call, and the record is vLLM's own constrained answer."""
    a, _b, engine_a, _ = stack
    read = {"type": "function", "function": {"name": "read", "parameters": {
        "type": "object", "properties": {"path": {"enum": ["a.txt", "b.txt"]}}, "required": ["path"]}}}
    reply = _chat(a, [{"role": "user", "content": "open a file"}], "forced", max_tokens=40, temperature=0,
                  tools=[read], tool_choice={"type": "function", "function": {"name": "read"}})
    choice = reply["choices"][0]
    assert choice["finish_reason"] == "tool_calls", choice
    call = choice["message"]["tool_calls"][0]["function"]
    assert call["name"] == "read" and json.loads(call["arguments"])["path"] in ("a.txt", "b.txt")
    (turn,) = _turns(a, "forced")
    assert turn.constrained and turn.response_ids[-1] == 151645
    grammar = tool_call_grammar(load_tokenizer(vllm_tiny_model()), [read["function"]], multiple=False)
    answer = vllm_generate(engine_a, turn.prompt_ids, len(turn.response_ids), stop_token_ids=[151645, 151643],
                           grammar=grammar)
    _assert_same_as_vllm(turn, answer)


def test_weight_update_under_load(stack, tmp_path):
    a, _b, engine_a, _ = stack
    root = f"http://127.0.0.1:{a.port}"
    prompt = [{"role": "user", "content": "Count with me: one, two"}]
    eos = [151645, 151643]
    with _traffic(a, prompt, [f"load-{i}" for i in range(3)], new_session_each=True, max_tokens=10) as statuses:
        time.sleep(3)
        # a folder of another shape (builtin:tiny-qwen3: hidden size 64) is refused before vLLM
        # sees it; serving goes on
        bad = httpx.post(f"{root}/admin/update_weights_from_disk", headers=AUTH, timeout=300,
                         json={"model_path": str(resolve_model_path("builtin:tiny-qwen3")), "weight_version": 1})
        assert bad.status_code == 400 and bad.json()["error"]["code"] == "invalid_weights", bad.text
        r = httpx.post(f"{root}/admin/update_weights_from_disk", headers=AUTH, timeout=300,
                       json={"model_path": str(second_version(tmp_path / "v1")), "weight_version": 1})
        assert r.status_code == 200 and r.json() == {"success": True, "weight_version": 1}, r.text
        time.sleep(3)
    assert statuses and set(statuses) == {200}
    health = httpx.get(f"{root}/healthz").json()
    assert health["weight_version"] == 1 and health["engine"]["replicas"][0]["weight_version"] == 1

    turns = [t for s in TrajectoryStore(a.buffer_dir).session_ids() if s.startswith("load-") for t in _turns(a, s)]
    by_version = {v: [t for t in turns if t.weight_version == v] for v in (0, 1)}
    assert by_version[0] and by_version[1], {v: len(ts) for v, ts in by_version.items()}
    # every turn is exactly what its version gives: version 1's answer from vLLM now ...
    new = vllm_generate(engine_a, by_version[1][0].prompt_ids, 10, stop_token_ids=eos)
    for turn in by_version[1]:
        _assert_same_as_vllm(turn, new)
    # ... and version 0's differs from it, the same for every version-0 turn
    old = by_version[0][0]
    assert old.response_ids != new["token_ids"]
    assert all(t.response_ids == old.response_ids for t in by_version[0])
    assert all(t.response_logprobs == pytest.approx(old.response_logprobs, abs=1e-4) for t in by_version[0])


def test_sessions_keep_their_replica(stack):
    _a, b, engine_a, engine_2 = stack
    urls = [engine_a, engine_2]
    # sessions whose rendezvous choice covers both replicas (the choice is a pure function)
    sessions = {}
    for i in range(100):
        key = f"affinity-{i}"
        best = max(urls, key=lambda u: affinity_score(key, u))
        sessions.setdefault(best, []).append(key)
    chosen = [(u, k) for u in urls for k in sessions[u][:2]]
    for url, key in chosen:
        messages = [{"role": "user", "content": f"hi from {key}"}]
        for _turn in range(2):
            before = [vllm_requests(u) for u in urls]
            reply = _chat(b, messages, key, max_tokens=4, temperature=0)
            deadline = time.time() + 10
            while True:
                delta = [vllm_requests(u) - n for u, n in zip(urls, before)]
                if sum(delta) >= 1 or time.time() > deadline:
                    break
                time.sleep(0.1)
            assert delta == [1 if u == url else 0 for u in urls], (key, delta)
            messages += [reply["choices"][0]["message"], {"role": "user", "content": "and again"}]


def test_rolling_update_over_two_replicas(stack):
    """Server B updates its two replicas one at a time while sessions on both keep talking: no
    request fails, and afterwards both serve the new version."""
    _a, b, engine_a, engine_2 = stack
    root = f"http://127.0.0.1:{b.port}"
    keys = {}
    for i in range(100):
        best = max((engine_a, engine_2), key=lambda u: affinity_score(f"roll-{i}", u))
        keys.setdefault(best, f"roll-{i}")
    with _traffic(b, [{"role": "user", "content": "still there?"}], list(keys.values()),
                  new_session_each=False, max_tokens=6) as statuses:
        time.sleep(2)
        r = httpx.post(f"{root}/admin/update_weights_from_disk", headers=AUTH, timeout=300,
                       json={"model_path": str(vllm_tiny_model()), "weight_version": 2})
        assert r.status_code == 200 and r.json() == {"success": True, "weight_version": 2}, r.text
        time.sleep(2)
    assert len(keys) == 2 and statuses and set(statuses) == {200}
    replicas = httpx.get(f"{root}/healthz").json()["engine"]["replicas"]
    assert [r["weight_version"] for r in replicas] == [2, 2]
    last = [_turns(b, k)[-1] for k in keys.values()]
    assert [t.weight_version for t in last] == [2, 2]
