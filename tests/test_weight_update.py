"""Publishing new weights to a running server: outputs change, versions advance, and no request
fails or waits while the swap happens."""

from __future__ import annotations

import threading

import httpx
import torch

from openclaw_rl.capture.store import TrajectoryStore
from openclaw_rl.models import load_model, load_tokenizer
from tests.support.server import running_server

AUTH = {"Authorization": "Bearer sk-test"}


def _greedy(server, text: str) -> dict:
    r = httpx.post(server.base_url + "/chat/completions", headers=AUTH, timeout=120,
                   json={"messages": [{"role": "user", "content": text}], "max_tokens": 8,
                         "temperature": 0, "session_id": "weights"})
    assert r.status_code == 200, r.text
    return r.json()


def test_update_weights_while_serving(tmp_path):
    with running_server("builtin:tiny-qwen3", tmp_path / "rl_buffer") as server:
        _check_update(server, tmp_path)


def _check_update(tiny_server, tmp_path):
    before = _greedy(tiny_server, "same prompt")["choices"][0]["message"]["content"]
    model = load_model("builtin:tiny-qwen3")
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.5, alpha=1.0)
    ckpt = tmp_path / "checkpoint-1"
    model.save_pretrained(ckpt)
    load_tokenizer("builtin:tiny-qwen3").save_pretrained(ckpt)

    statuses: list[int] = []
    stop = threading.Event()

    def traffic():
        while not stop.is_set():
            r = httpx.post(tiny_server.base_url + "/chat/completions", headers=AUTH, timeout=120,
                           json={"messages": [{"role": "user", "content": "keep talking"}],
                                 "max_tokens": 6, "stream": True, "session_id": "traffic"})
            statuses.append(r.status_code if r.text.rstrip().endswith("[DONE]") else -1)

    threads = [threading.Thread(target=traffic) for _ in range(2)]
    for t in threads:
        t.start()
    try:
        r = httpx.post(tiny_server.base_url.replace("/v1", "") + "/admin/update_weights_from_disk",
                       headers=AUTH, json={"model_path": str(ckpt), "weight_version": 1}, timeout=120)
        assert r.status_code == 200 and r.json() == {"success": True, "weight_version": 1}
        # keep the traffic going across the swap for a moment
        threading.Event().wait(1.0)
    finally:
        stop.set()
        for t in threads:
            t.join(120)
    assert statuses and all(s == 200 for s in statuses)
    assert httpx.get(tiny_server.base_url.replace("/v1", "/healthz")).json()["weight_version"] == 1
    after = _greedy(tiny_server, "same prompt")["choices"][0]["message"]["content"]
    assert after != before
    store = TrajectoryStore(tiny_server.buffer_dir)
    versions = [t.weight_version for t in store.turns(session_id="weights")]
    assert versions[0] == 0 and versions[-1] == 1
    store.close()
    # a bad update is a 400 and changes nothing
    bad = httpx.post(tiny_server.base_url.replace("/v1", "") + "/admin/update_weights_from_disk",
                     headers=AUTH, json={"model_path": str(tmp_path / "nope")}, timeout=60)
    assert bad.status_code == 400 and "could not load weights" in bad.json()["error"]["message"]
    back = httpx.post(tiny_server.base_url.replace("/v1", "") + "/admin/update_weights_from_disk",
                      headers=AUTH, json={"model_path": str(ckpt), "weight_version": 0}, timeout=60)
    assert back.status_code == 400  # versions never go backwards
    assert httpx.get(tiny_server.base_url.replace("/v1", "/healthz")).json()["weight_version"] == 1
