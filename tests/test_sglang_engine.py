"""``--backend sglang`` without SGLang: SGLang has no CPU build, so these tests check the adapter
(:mod:`openclaw_rl.engine.sglang_engine`) against SGLang's documented HTTP shapes only, served by
a stand-in written here (``/generate`` streaming ``meta_info`` with ``output_token_logprobs``,
cumulative by default or incremental, ``/update_weights_from_disk``, ``/v1/models``,
``/get_weight_version``). The stand-in samples nothing: it answers fixed tokens, so what is
checked is that the intercept server sends SGLang the exact prompt ids and records exactly the
ids, logprobs and weight version SGLang reports. The real test needs a GPU with SGLang.
"""

from __future__ import annotations

import asyncio
import json
import threading

import httpx
import pytest
import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import StreamingResponse

from openclaw_rl.capture.store import TrajectoryStore
from openclaw_rl.engine.base import EngineError, GenerationOutput, SamplingParams
from openclaw_rl.engine.remote import StreamState
from openclaw_rl.engine.replicas import Replica
from openclaw_rl.engine.sglang_engine import SGLangEngine
from openclaw_rl.server.launcher import free_port
from tests.support.server import running_server
from tests.support.vllm_model import vllm_tiny_model

#: what the stand-in "samples": "Hi there" then <|im_end|>, with top-2 alternatives
REPLY = [(13048, -0.25), (1052, -1.5), (151645, -0.125)]


class StandIn:
    """An HTTP server in SGLang's shapes on a free port, in a thread of the test process."""

    def __init__(self, incremental: bool):
        self.incremental = incremental
        self.version = "default"
        self.generate_bodies: list[dict] = []
        self.updates: list[dict] = []
        app = FastAPI()

        @app.get("/health")
        async def health():
            return {}

        @app.get("/v1/models")
        async def models():
            return {"object": "list", "data": [{"id": "engine", "object": "model", "max_model_len": 2048}]}

        @app.get("/get_weight_version")
        async def get_weight_version():
            return {"weight_version": self.version}

        @app.post("/update_weight_version")
        async def update_weight_version(request: Request):
            self.version = (await request.json())["new_version"]
            return {"success": True, "message": ""}

        @app.post("/update_weights_from_disk")
        async def update_weights(request: Request):
            body = await request.json()
            self.updates.append(body)
            self.version = body["weight_version"]
            return {"success": True, "message": "Succeeded to update model weights.", "num_paused_requests": 0}

        @app.post("/generate")
        async def generate(request: Request):
            body = await request.json()
            self.generate_bodies.append(body)
            return StreamingResponse(self._events(body), media_type="text/event-stream")

        self.port = free_port()
        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning"))
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    async def _events(self, body: dict):
        k = body["top_logprobs_num"]
        for n in range(1, len(REPLY) + 1):
            start = n - 1 if self.incremental else 0
            done = n == len(REPLY)
            meta = {"id": "r", "prompt_tokens": len(body["input_ids"]), "completion_tokens": n,
                    "weight_version": self.version,
                    "finish_reason": {"type": "stop", "matched": 151645} if done else None,
                    "output_token_logprobs": [[lp, tid, None] for tid, lp in REPLY[start:n]],
                    "output_top_logprobs": [[[lp, tid, None], [lp - 3.0, 0, None]][:k] for tid, lp in REPLY[start:n]]}
            yield f"data: {json.dumps({'text': '', 'output_ids': [t for t, _ in REPLY[start:n]], 'meta_info': meta})}\n\n"
            await asyncio.sleep(0)
        yield "data: [DONE]\n\n"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self):
        self.thread.start()
        while not self.server.started:
            threading.Event().wait(0.02)
        return self

    def __exit__(self, *exc):
        self.server.should_exit = True
        self.thread.join(10)


@pytest.mark.parametrize("incremental", [False, True])
def test_engine_reads_exactly_what_sglang_reports(incremental):
    with StandIn(incremental) as sglang:
        engine = SGLangEngine([sglang.url], vllm_tiny_model())
        assert engine.max_context == 2048 and sglang.version == "0" and engine.weight_version == 0
        out = asyncio.run(engine.generate([1, 2, 3], SamplingParams(max_new_tokens=8, temperature=0.7, top_p=0.9,
                                                                    seed=5, top_logprobs=2)))
        body = sglang.generate_bodies[-1]
        assert body["input_ids"] == [1, 2, 3] and body["return_logprob"] and body["stream"]
        assert body["sampling_params"]["stop_token_ids"] == sorted(engine.eos_token_ids)
        assert body["sampling_params"]["max_new_tokens"] == 8 and body["sampling_params"]["sampling_seed"] == 5
        assert out.token_ids == [t for t, _ in REPLY] and out.logprobs == [lp for _, lp in REPLY]
        assert out.top_logprobs[0] == [(REPLY[0][0], REPLY[0][1]), (0, REPLY[0][1] - 3.0)]
        assert out.finish_reason == "stop" and out.weight_version == 0
        assert engine.load_weights(str(vllm_tiny_model()), 4) == 4
        assert sglang.updates == [{"model_path": str(vllm_tiny_model()), "weight_version": "4", "flush_cache": True}]
        assert asyncio.run(engine.generate([1], SamplingParams())).weight_version == 4
        asyncio.run(engine.aclose())


def test_a_completion_spanning_two_weight_versions_is_refused():
    """SGLang labels each event with the version serving it; two labels in one completion (an
    update that did not wait for it) must not be recorded as one version."""
    engine = SGLangEngine.__new__(SGLangEngine)  # the event reader needs no server
    state = StreamState()
    meta = {"completion_tokens": 1, "weight_version": "1", "finish_reason": None,
            "output_token_logprobs": [[-0.5, 7, None]]}
    engine._events({"meta_info": meta}, state)
    engine._events({"meta_info": {**meta, "completion_tokens": 2, "weight_version": "2",
                                  "output_token_logprobs": [[-0.5, 7, None], [-0.1, 8, None]]}}, state)
    with pytest.raises(EngineError, match="weight versions"):
        engine._check_versions(state, Replica("http://x", version=1), GenerationOutput(prompt_ids=[1]))
    with pytest.raises(EngineError, match="completion_tokens"):
        engine._events({"text": "no meta"}, StreamState())


@pytest.mark.slow  # an intercept server start: ~30 s on 2 busy cores
def test_intercept_server_on_sglang_records_what_sglang_sampled(tmp_path):
    with StandIn(incremental=False) as sglang, \
            running_server(str(vllm_tiny_model()), tmp_path / "rl_buffer", "--backend", "sglang",
                           "--engine-url", sglang.url) as server:
        auth = {"Authorization": "Bearer sk-test", "X-Session-Id": "sg"}
        r = httpx.post(server.base_url + "/chat/completions", headers=auth, timeout=60,
                       json={"messages": [{"role": "user", "content": "hello"}], "max_tokens": 8})
        assert r.status_code == 200, r.text
        assert r.json()["choices"][0]["finish_reason"] == "stop"
        root = server.base_url.rsplit("/v1", 1)[0]
        u = httpx.post(root + "/admin/update_weights_from_disk", headers=auth, timeout=60,
                       json={"model_path": str(vllm_tiny_model()), "weight_version": 1})
        assert u.status_code == 200 and u.json() == {"success": True, "weight_version": 1}
        r2 = httpx.post(server.base_url + "/chat/completions", headers=auth, timeout=60,
                        json={"messages": [{"role": "user", "content": "hello"}, r.json()["choices"][0]["message"],
                                           {"role": "user", "content": "again"}], "max_tokens": 8})
        assert r2.status_code == 200, r2.text
        health = httpx.get(root + "/healthz").json()
        assert health["engine"]["backend"] == "sglang" and health["engine"]["replicas"][0]["weight_version"] == 1
    turns = TrajectoryStore(tmp_path / "rl_buffer").turns("sg")
    assert [t.prompt_ids for t in turns] == [b["input_ids"] for b in sglang.generate_bodies]
    assert all(t.response_ids == [tid for tid, _ in REPLY] for t in turns)
    assert all(t.response_logprobs == [lp for _, lp in REPLY] for t in turns)
    assert [t.weight_version for t in turns] == [0, 1]
