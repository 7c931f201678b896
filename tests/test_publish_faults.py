"""The weight-publish target disappearing mid-update (issue 16).

* The folder vanishes while the server reads it (in-process: the real engine's config check is
  wrapped to delete the folder, or its weight file, right after it read the config): 400, the old
  weights keep serving (same version, same greedy reply), and a later good folder swaps in.
* The server is gone (restarting): :func:`openclaw_rl.rollout.publish.post_weights` retries with
  backoff and succeeds once the real server is back on its port; past ``retry_s`` it gives up with
  :class:`slime.errors.PublishFailed` (one line), never another exception.
* A whole training run (real Ray, real server, real publish path) whose step-2 folder is deleted
  between the trainer's export and the server's load (:mod:`slime.orchestration.fault_points` ``publish@2``):
  the run does not crash, counts ``publish/failures``, and the server ends on version 3, never
  having served version 2.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
import torch

from openclaw_rl.models import load_model
from openclaw_rl.rollout.publish import post_weights
from slime.errors import PublishFailed
from slime.orchestration.fault_points import FAULT_AT_ENV, FAULT_DIR_ENV, release, wait_reached
from tests.support.ray_head import driver_env
from tests.support.server import free_port, running_server, start_server, stop_server

REPO = Path(__file__).resolve().parent.parent
AUTH = {"Authorization": "Bearer sk-test"}
ADMIN_AUTH = {"Authorization": "Bearer sk-admin"}  # the in-process client is not a loopback address
ADMIN = "/admin/update_weights_from_disk"


def _new_weights(folder: Path, seed: int = 0) -> Path:
    """tiny-qwen3 with every weight perturbed, saved as a model folder."""
    torch.manual_seed(seed)
    model = load_model("builtin:tiny-qwen3")
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.5)
    model.save_pretrained(folder)
    return folder


def _greedy(client) -> str:
    r = client.post("/v1/chat/completions", headers=AUTH, json={
        "messages": [{"role": "user", "content": "same prompt"}], "max_tokens": 8, "temperature": 0})
    assert r.status_code == 200, r.text
    return r.json()["choices"][0]["message"]["content"]


def test_a_folder_vanishing_while_the_server_reads_it_is_a_400_and_the_old_weights_serve(tmp_path, monkeypatch):
    from fastapi.testclient import TestClient

    import openclaw_rl.engine.weight_check as weight_check
    from openclaw_rl.server import build_server
    from openclaw_rl.server.config import parse_server_args

    app, engine, store = build_server(parse_server_args([
        "--model-path", "builtin:tiny-qwen3", "--api-key", "sk-test", "--admin-api-key", "sk-admin",
        "--torch-threads", "1",
        "--enable-rl-intercept", "--rl-buffer-dir", str(tmp_path / "rl_buffer")]))
    real_check = weight_check.check_config
    pull_away = {}  # folder -> what to delete once the server has read its config

    def check_then_vanish(served_config, folder):
        real_check(served_config, folder)
        what = pull_away.pop(Path(folder), None)
        if what == "folder":
            shutil.rmtree(folder)
        elif what == "weights":
            (Path(folder) / "model.safetensors").unlink()

    monkeypatch.setattr(weight_check, "check_config", check_then_vanish)
    with TestClient(app) as client:
        before = _greedy(client)
        for what, version in (("folder", 1), ("weights", 2)):
            folder = _new_weights(tmp_path / f"version-{version}", seed=version)
            pull_away[folder] = what
            r = client.post(ADMIN, headers=ADMIN_AUTH, json={"model_path": str(folder), "weight_version": version})
            assert r.status_code == 400, (what, r.status_code, r.text)
            assert r.json()["error"]["code"] == "invalid_weights", r.text
            assert not pull_away  # the server did start reading this folder
            assert client.get("/healthz").json()["weight_version"] == 0
            assert _greedy(client) == before  # nothing was swapped: the old weights serve
        good = _new_weights(tmp_path / "version-3", seed=3)
        r = client.post(ADMIN, headers=ADMIN_AUTH, json={"model_path": str(good), "weight_version": 3})
        assert r.status_code == 200 and r.json()["weight_version"] == 3
        assert _greedy(client) != before
    if store is not None:
        store.close()


@pytest.mark.slow
def test_publish_retries_a_restarting_server_then_gives_up_within_its_bound(tmp_path):
    weights = _new_weights(tmp_path / "published" / "version-1")
    port = free_port()
    server = start_server("builtin:tiny-qwen3", tmp_path / "rl_buffer", "--torch-threads", "1", port=port)
    url = f"http://127.0.0.1:{port}"
    restarted = []
    try:
        server.kill9()  # gone, as in a crash; it comes back on the same port while the publisher retries

        def restart(attempt: int, reason: str) -> None:
            if not restarted:
                assert "ConnectError" in reason, reason
                restarted.append(start_server("builtin:tiny-qwen3", tmp_path / "rl_buffer", "--torch-threads", "1",
                                              port=port))

        assert post_weights(url, str(weights), 1, AUTH, retry_s=300, on_retry=restart) == 1
        assert restarted and httpx.get(url + "/healthz").json()["weight_version"] == 1

        restarted[0].kill9()  # gone for good: a bounded wait, then one PublishFailed
        attempts = []
        with pytest.raises(PublishFailed, match=r"unreachable for 2 s \(\d+ attempt\(s\); last: ConnectError"):
            post_weights(url, str(weights), 2, AUTH, retry_s=2, on_retry=lambda a, r: attempts.append(a))
        assert len(attempts) >= 2  # it did retry, with backoff
        restarted.append(start_server("builtin:tiny-qwen3", tmp_path / "rl_buffer", "--torch-threads", "1", port=port))
        with pytest.raises(PublishFailed, match=r"refused weight version 3 \(400\).*is not a folder"):
            post_weights(url, str(tmp_path / "gone"), 3, AUTH, retry_s=300)  # a refusal is not retried
    finally:
        for handle in [server, *restarted]:
            stop_server(handle)  # already-killed ones are skipped


@pytest.mark.ray
@pytest.mark.slow
def test_a_training_run_survives_its_publish_folder_vanishing(ray_head, tmp_path):
    work = tmp_path / "run"
    (work / "faults").mkdir(parents=True)
    work.joinpath("sessions.jsonl").write_text("".join(json.dumps({"session_id": f"s{i}", "turns": [
        {"prompt": [{"role": "user", "content": f"question {i}"}], "response": f"answer {i}",
         "next_state": "thanks"}]}) + "\n" for i in range(6)))
    with running_server("builtin:tiny-qwen3", tmp_path / "rl_buffer", "--torch-threads", "1") as server:
        root = server.base_url.rsplit("/v1", 1)[0]
        # a driver of the shared head; SLIME_JOB_ENV carries the fault point into its actors
        env = driver_env(ray_head[0], "SLIME_CALLER_CWD", "DATA_PATH", OMP_NUM_THREADS="1",
                         SLIME_JOB_ENV=f"{FAULT_AT_ENV} {FAULT_DIR_ENV} OMP_NUM_THREADS",
                         **{FAULT_AT_ENV: "publish@2", FAULT_DIR_ENV: str(work / "faults")})
        run = subprocess.Popen(
            [sys.executable, str(REPO / "slime" / "train.py"), "--model-path", "builtin:tiny-qwen3",
             "--data-path", "sessions.jsonl", "--server-url", root, "--api-key", "sk-test",
             "--custom-rm-path", "tests/plugins/low_ids_reward.py", "--rollout-batch-size", "2",
             "--num-rollout", "3", "--save", "./ckpt", "--log-dir", "./logs"],
            cwd=work, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            wait_reached(work / "faults", "publish@2", timeout_s=600, proc=run)
            # version 2 is exported, the server has not been asked yet: the folder disappears
            assert httpx.get(root + "/healthz").json()["weight_version"] == 1
            shutil.rmtree(work / "ckpt" / "published" / "version-2")
            release(work / "faults", "publish@2")
            out, err = run.communicate(timeout=600)
        finally:
            if run.poll() is None:
                run.kill()
                run.wait()
        assert run.returncode == 0, out[-2000:] + err[-4000:]
        summary = json.loads(out[out.index("{"):])
        assert summary["steps"] == 3 and summary["versions_published"] == 2 and summary["publish_failures"] == 1
        warnings = [line for line in err.splitlines() if "publish of weight version 2 failed" in line]
        assert len(warnings) == 1 and "refused weight version 2 (400)" in warnings[0], err[-3000:]
        assert "Traceback" not in err
        rows = [json.loads(line) for p in sorted((work / "logs").glob("run-*/metrics.jsonl"))
                for line in p.read_text().splitlines()]
        seen = [(r["step"], r["publish/ok"], r["publish/failures"], r["weight_version"]) for r in rows]
        assert seen == [(1, 1, 0, 1), (2, 0, 1, 1), (3, 1, 1, 3)], seen
        assert httpx.get(root + "/healthz").json()["weight_version"] == 3  # 0 -> 1 -> 3: 2 never served
