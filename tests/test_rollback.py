"""Served weight versions and rollback: ``GET /admin/versions``, ``POST /admin/rollback`` and
``openclaw-rl rollback --to V`` on a real server under concurrent streaming traffic."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path

import httpx
import pytest
import torch

from openclaw_rl.models import load_model, load_tokenizer
from tests.support.ray_head import driver_env
from tests.support.server import running_server
from tests.support.traffic import streaming_traffic

AUTH = {"Authorization": "Bearer sk-test"}


def _greedy(base: str) -> str:
    r = httpx.post(base + "/v1/chat/completions", headers=AUTH, timeout=120,
                   json={"messages": [{"role": "user", "content": "same prompt"}], "max_tokens": 8,
                         "temperature": 0, "session_id": "greedy"})
    assert r.status_code == 200, r.text
    return r.json()["choices"][0]["message"]["content"]


def _perturbed(tmp_path, name: str, seed: int):
    model = load_model("builtin:tiny-qwen3")
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn(p.shape, generator=g) * 0.5)
    folder = tmp_path / name
    model.save_pretrained(folder)
    load_tokenizer("builtin:tiny-qwen3").save_pretrained(folder)
    return folder


def test_rollback_under_streaming_traffic_and_bad_input(tmp_path):
    v1, v2 = _perturbed(tmp_path, "v1", 1), _perturbed(tmp_path, "v2", 2)
    with running_server("builtin:tiny-qwen3", tmp_path / "rl_buffer") as server:
        base = server.base_url.rsplit("/v1", 1)[0]
        text0 = _greedy(base)
        for folder, version in ((v1, 1), (v2, 2)):
            r = httpx.post(base + "/admin/update_weights_from_disk", headers=AUTH, timeout=120,
                           json={"model_path": str(folder), "weight_version": version,
                                 "gate": {"gate/passed": 1.0, "gate/reference_nll_rise": 0.01}})
            assert r.status_code == 200, r.text
        text2 = _greedy(base)
        listed = httpx.get(base + "/admin/versions", headers=AUTH).json()
        assert listed["serving"] == 2
        assert [(v["version"], v["status"]) for v in listed["data"]] == [(2, "served"), (1, "superseded"),
                                                                          (0, "superseded")]
        assert listed["data"][0]["gate"]["gate/reference_nll_rise"] == 0.01
        assert listed["data"][-1]["turns_sampled"] == 1  # the first greedy request, on version 0

        with streaming_traffic(base + "/v1", AUTH) as statuses:
            cli = subprocess.run([sys.executable, "-m", "openclaw_rl.cli", "rollback", "--to", "1", "--url", base,
                                  "--admin-api-key", "sk-test"], capture_output=True, text=True, timeout=300)
            assert cli.returncode == 0, cli.stderr
            assert cli.stdout.strip() == "serving weight version 1"
            r = httpx.post(base + "/admin/rollback", headers=AUTH, json={"version": 0}, timeout=120)
            assert r.status_code == 200 and r.json()["weight_version"] == 0
            threading.Event().wait(1.0)
        assert statuses and all(s == 200 for s in statuses)
        assert httpx.get(base + "/healthz").json()["weight_version"] == 0
        assert _greedy(base) == text0 != text2  # the base weights answer again
        listed = httpx.get(base + "/admin/versions", headers=AUTH).json()
        assert {v["version"]: v["status"] for v in listed["data"]} == {0: "served", 1: "rolled_back",
                                                                       2: "rolled_back"}

        # bad input: clear 4xx, nothing changes
        for body, status, code in (({"version": 7}, 404, "version_not_found"), ({"version": "1"}, 400, None),
                                   ({}, 400, None), ({"version": -1}, 400, None)):
            r = httpx.post(base + "/admin/rollback", headers=AUTH, json=body, timeout=60)
            assert r.status_code == status, (body, r.text)
            assert r.json()["error"]["code"] == code
        import shutil
        shutil.rmtree(v2)
        r = httpx.post(base + "/admin/rollback", headers=AUTH, json={"version": 2}, timeout=60)
        assert r.status_code == 409 and r.json()["error"]["code"] == "version_pruned"
        cli = subprocess.run([sys.executable, "-m", "openclaw_rl.cli", "rollback", "--to", "9", "--url", base,
                              "--admin-api-key", "sk-test"], capture_output=True, text=True, timeout=300)
        assert cli.returncode == 2 and cli.stderr.count("\n") == 1 and "never served here" in cli.stderr
        assert httpx.get(base + "/healthz").json()["weight_version"] == 0


def test_a_server_killed_after_a_promotion_serves_that_version_again(tmp_path):
    """kill -9 after version 1 was promoted and while version 2's load was under way: the restart
    serves version 1 again (the last version recorded as served), the same weights, and the
    turns recorded before the kill are all there."""
    from tests.support.server import start_server, stop_server

    v1, v2 = _perturbed(tmp_path, "v1", 1), _perturbed(tmp_path, "v2", 2)
    server = start_server("builtin:tiny-qwen3", tmp_path / "rl_buffer")
    restarted = None
    try:
        base = server.base_url.rsplit("/v1", 1)[0]
        r = httpx.post(base + "/admin/update_weights_from_disk", headers=AUTH, timeout=120,
                       json={"model_path": str(v1), "weight_version": 1, "gate": {"gate/passed": 1.0}})
        assert r.status_code == 200
        text1 = _greedy(base)
        loading = threading.Thread(target=lambda: httpx.post(
            base + "/admin/update_weights_from_disk", headers=AUTH, timeout=120,
            json={"model_path": str(v2), "weight_version": 2}), daemon=True)
        loading.start()
        server.kill9()  # mid-promotion of version 2
        restarted = start_server("builtin:tiny-qwen3", tmp_path / "rl_buffer")
        base = restarted.base_url.rsplit("/v1", 1)[0]
        served = httpx.get(base + "/healthz").json()["weight_version"]
        listed = {v["version"]: v["status"] for v in httpx.get(base + "/admin/versions", headers=AUTH).json()["data"]}
        if served == 2:  # the kill came after version 2 was loaded and recorded: it is served again
            assert listed[2] == "served"
        else:
            assert served == 1 and listed[1] == "served" and 2 not in listed
            assert _greedy(base) == text1  # the same weights answer again
        from openclaw_rl.capture.store import TrajectoryStore
        store = TrajectoryStore(tmp_path / "rl_buffer")
        assert len(store.turns(session_id="greedy")) >= 1
        store.close()
    finally:
        stop_server(server)
        if restarted is not None:
            stop_server(restarted)


@pytest.mark.ray
@pytest.mark.slow
def test_a_live_run_follows_a_rollback_of_serving(ray_head, tmp_path):
    """A real run (slime/train.py on Ray, offline sessions, publishing to a real server) is held at
    the start of step 3's optimizer work while serving is rolled back from version 2 to 1
    (``POST /admin/rollback``). The step's weights grew from version 2: they are dropped, the
    trainer goes back to version 1's checkpoint (written at its promotion), and the next version
    it publishes is trained from there; the rollback is never overridden by step 3's weights."""
    from slime.orchestration.fault_points import FAULT_AT_ENV, FAULT_DIR_ENV, release, wait_reached

    repo = Path(__file__).resolve().parent.parent
    work, faults = tmp_path / "run", tmp_path / "faults"
    work.mkdir()
    faults.mkdir()
    (work / "sessions.jsonl").write_text("".join(json.dumps({"session_id": f"s{i}", "turns": [
        {"prompt": [{"role": "user", "content": f"question {i}"}], "response": f"answer {i}",
         "next_state": "thanks"}]}) + "\n" for i in range(8)))
    with running_server("builtin:tiny-qwen3", tmp_path / "served") as server:
        base = server.base_url.rsplit("/v1", 1)[0]
        # a driver of the shared head; SLIME_JOB_ENV carries the fault point into its actors
        env = driver_env(ray_head[0], "SLIME_CALLER_CWD", "DATA_PATH", OMP_NUM_THREADS="1",
                         SLIME_JOB_ENV=f"{FAULT_AT_ENV} {FAULT_DIR_ENV} OMP_NUM_THREADS",
                         **{FAULT_AT_ENV: "train_step@3", FAULT_DIR_ENV: str(faults)})
        run = subprocess.Popen(
            [sys.executable, str(repo / "slime" / "train.py"), "--model-path", "builtin:tiny-qwen3",
             "--data-path", "sessions.jsonl", "--server-url", base, "--api-key", "sk-test",
             "--custom-rm-path", "tests/plugins/low_ids_reward.py", "--rollout-batch-size", "2",
             "--num-rollout", "4", "--save", "./ckpt", "--save-interval", "100", "--log-dir", "./logs",
             "--gate-max-nll-rise", "100", "--gate-logprob-margin", "100"],
            cwd=work, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            wait_reached(faults, "train_step@3", timeout_s=600, proc=run)
            assert httpx.get(base + "/healthz").json()["weight_version"] == 2
            r = httpx.post(base + "/admin/rollback", headers=AUTH, json={"version": 1}, timeout=120)
            assert r.status_code == 200, r.text
            release(faults, "train_step@3")
            out, err = run.communicate(timeout=900)
        finally:
            if run.poll() is None:
                run.kill()
                run.wait()
        assert run.returncode == 0, out[-2000:] + err[-4000:]
        rows = {r["step"]: r for r in map(json.loads, next((work / "logs").rglob("metrics.jsonl")).read_text().splitlines())}
        assert rows[3]["rollback/to"] == 1 and rows[3]["rollback/followed"] == 1 and rows[3]["publish/dropped"] == 1
        assert rows[3]["publish/ok"] == 0 and rows[4]["publish/ok"] == 1
        assert "serving was rolled back from version 2 to 1" in err and "checkpoint-1" in err
        # step 3 went back to version 1's weights as version 4; step 4 trained them into version 5
        assert rows[4]["weight_version"] == 5
        assert httpx.get(base + "/healthz").json()["weight_version"] == 5
        listed = [v["version"] for v in httpx.get(base + "/admin/versions", headers=AUTH).json()["data"]]
        assert 3 not in listed and 4 not in listed and {1, 2, 5} <= set(listed), listed
