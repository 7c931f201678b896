"""The engine raising mid-generation: the real server (in this process, uvicorn on a free port)
on the real transformers engine, whose decode raises at step N for requests with one seed
(:mod:`tests.support.faulty_engine`). That request gets an error (streaming: an in-band error
event then ``[DONE]``; non-streaming: a 500 OpenAI-style error), nothing of it is recorded, its
admission slot is released, and requests running alongside complete and are recorded."""

from __future__ import annotations

import json
import threading
import time

import openai
import pytest
import uvicorn

from openclaw_rl.server import build_server, parse_server_args
from tests.support.faulty_engine import FailingStepEngine
from tests.support.metrics import metric, wait_metric, write_tool
from tests.support.server import free_port

MODEL = "builtin:tiny-qwen3"
FAULT_SEED, FAULT_STEP = 4242, 5
LONG_TOOL = write_tool(3000)






@pytest.fixture(params=["model", "step"])
def faulty_server(tmp_path, request):
    """``(root_url, engine, store)`` of an in-process server on the fault-injected engine (the
    model call raises, or the engine's step itself)."""
    port = free_port()
    config = parse_server_args(["--model-path", MODEL, "--port", str(port), "--enable-rl-intercept",
                                "--rl-buffer-dir", str(tmp_path / "rl_buffer"), "--api-key", "sk-test"])
    engine = FailingStepEngine(MODEL, fault_seed=FAULT_SEED, fault_step=FAULT_STEP, where=request.param)
    app, engine, store = build_server(config, engine=engine)
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.time() + 60
    while not server.started:
        assert time.time() < deadline and thread.is_alive(), "server did not start"
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}", engine, store
    finally:
        server.should_exit = True
        thread.join(60)


def test_engine_fault_mid_generation_fails_only_that_request(faulty_server):
    root, engine, store = faulty_server
    # a request the engine forgets would hang: the timeout turns that into a failure
    sdk = openai.OpenAI(base_url=f"{root}/v1", api_key="sk-test", max_retries=0, timeout=120)
    results: dict = {}

    def long_call():  # runs alongside the faults: a forced call that cannot end before 200 tokens
        r = sdk.chat.completions.create(model="m", messages=[{"role": "user", "content": "write"}], max_tokens=200,
                                         tools=[LONG_TOOL], tool_choice={"type": "function", "function": {"name": "write"}},
                                         seed=1, extra_headers={"X-Session-Id": "ok-long"})
        results["long"] = (r.choices[0].finish_reason, r.usage.completion_tokens)

    long = threading.Thread(target=long_call, daemon=True)
    long.start()
    wait_metric(root, "openclaw_requests_running", 1.0)
    deadline = time.time() + 60  # the long request is decoding: the faulty ones join its batch
    while not engine.batch_stats()["running"]:
        assert time.time() < deadline, "the long request never started decoding"
        time.sleep(0.01)

    body = {"model": "m", "messages": [{"role": "user", "content": "tell me a story"}], "max_tokens": 50,
            "seed": FAULT_SEED}
    # streaming, through the SDK: content first, then the error event (the SDK raises APIError)
    got = []
    with pytest.raises(openai.APIError) as info:
        for chunk in sdk.chat.completions.create(stream=True, extra_headers={"X-Session-Id": "fault-stream"}, **body):
            got.append(chunk)
    assert not isinstance(info.value, openai.APITimeoutError), "the failed request hung"
    assert info.value.body["code"] == "generation_failed" and info.value.body["type"] == "server_error"
    assert f"after {FAULT_STEP} tokens" in info.value.message and "injected fault" in info.value.message
    assert any(c.choices and c.choices[0].delta.content for c in got)  # it failed mid-stream
    assert all(not c.choices or c.choices[0].finish_reason is None for c in got)
    # the same on the wire: the error event, then [DONE]
    with sdk.chat.completions.with_streaming_response.create(
            stream=True, extra_headers={"X-Session-Id": "fault-raw"}, **body) as raw:
        lines = [x for x in raw.iter_lines() if x]
    assert lines[-1] == "data: [DONE]"
    assert json.loads(lines[-2][6:])["error"]["code"] == "generation_failed"
    # non-streaming: a 500 with the OpenAI error body
    with pytest.raises(openai.InternalServerError) as info:
        sdk.chat.completions.create(extra_headers={"X-Session-Id": "fault-json"}, **body)
    assert info.value.status_code == 500 and info.value.code == "generation_failed"
    assert engine.faults == 3
    if engine.where == "model":  # the failing forward pass held the long request too, which went on
        assert max(engine.fault_batch_rows) >= 2

    # a request after the faults is served normally, the one running alongside completes
    ok = sdk.chat.completions.create(model="m", messages=[{"role": "user", "content": "hello"}], max_tokens=4, seed=2,
                                     extra_headers={"X-Session-Id": "ok-after"})
    assert ok.choices[0].finish_reason in ("length", "stop")
    long.join(300)
    finish, used = results["long"]
    assert (finish, used) == ("length", 200) or (finish == "tool_calls" and used < 200)
    # every slot released, nothing of the failed requests recorded
    wait_metric(root, "openclaw_requests_running", 0.0)
    assert metric(root, "openclaw_requests_queued") == 0.0
    assert metric(root, "openclaw_requests_admitted_total") == 5.0
    assert {t.session_id for t in store.turns()} == {"ok-long", "ok-after"}
    (turn,) = store.turns(session_id="ok-long")
    assert len(turn.response_ids) == len(turn.response_logprobs) == used
