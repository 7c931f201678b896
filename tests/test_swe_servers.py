"""swe-rl servers: the exec server (``/container/*``) and the SWE pool server in front of it, real
uvicorn processes on loopback started and stopped by PID, real sandboxed containers."""

from __future__ import annotations

import json
import time
from pathlib import Path

import httpx
import pytest

from openclaw_rl.agentic.sandbox import sandbox_available
from openclaw_rl.envs.swe.config import SUBMIT_MARKER
from tests.test_pool_server import serve
from tests.test_swe_env import FIXES, _fix_command

_OK, _WHY = sandbox_available()
try:
    from openclaw_rl.envs.swe.data import ensure_converted, load_instances

    DATA = ensure_converted()
    INSTANCES = {i["instance_id"]: i for s in ("train", "eval") for i in load_instances(DATA / f"swe_{s}.jsonl")}
except FileNotFoundError as exc:
    DATA, INSTANCES, _WHY = None, {}, f"{_WHY}; {exc}"
pytestmark = pytest.mark.skipif(not (_OK and INSTANCES), reason=f"no sandbox or no data: {_WHY}")
BENIGN = "ipi-benign-03"


def _exec_server(tmp_path, *args):
    return serve(tmp_path, "openclaw_rl.envs.swe.exec_server", "--image-root", str(DATA), *args)


def _post(url, path, body, status=200):
    r = httpx.post(f"{url}{path}", json=body, timeout=120)
    assert r.status_code == status, r.text
    return r.json()


def check_evaluate(url: str, cid: str, diff: str, eval_script: str) -> None:
    """``/container/evaluate`` of the benign instance's fix: it resolves, the unchanged repository
    does not, a patch that does not apply is unresolved with git's reason, an eval script past its
    timeout is 124 (both backends)."""
    ok = _post(url, "/container/evaluate", {"container_id": cid, "patch": diff, "eval_script": eval_script})
    assert ok["resolved"] and ok["applied"] and ok["returncode"] == 0, ok
    none = _post(url, "/container/evaluate", {"container_id": cid, "patch": "", "eval_script": eval_script})
    assert not none["resolved"] and none["applied"]
    bad = _post(url, "/container/evaluate", {"container_id": cid, "patch": diff.replace("fillvalue=0", "fillvalue=7"),
                                             "eval_script": eval_script})
    assert not bad["resolved"] and not bad["applied"] and "patch does not apply" in bad["output"]
    slow = _post(url, "/container/evaluate", {"container_id": cid, "patch": "", "eval_script": "sleep 60", "timeout": 1})
    assert not slow["resolved"] and slow["returncode"] == 124


def test_exec_server_api_and_bad_input(tmp_path):
    inst = INSTANCES[BENIGN]
    with _exec_server(tmp_path, "--max-containers", "2") as (url, _):
        cid = _post(url, "/container/create", {"image": inst["image"], "cwd": "/workspace", "timeout": 20,
                                               "env": inst["env"], "files": inst["files"]})["container_id"]
        out = _post(url, "/container/exec", {"container_id": cid, "command": "ls src; echo $SECRET_API_KEY; cat /root/.secret_canary"})
        assert out["returncode"] == 0 and "itertools_compat.py" in out["output"]
        assert "CANARY_sk_live" in out["output"] and "CANARY_TOKEN_FILE_READ" in out["output"]
        out = _post(url, "/container/exec", {"container_id": cid, "command": "pwd", "cwd": "/tmp", "env": {"A": "b"}})
        assert out["output"].strip() == "/tmp"
        # a command that hangs is killed at its timeout, with what it printed so far
        t0 = time.monotonic()
        out = _post(url, "/container/exec", {"container_id": cid, "command": "echo start; sleep 60", "timeout": 1})
        assert out["returncode"] == 124 and out["timed_out"] and "start" in out["output"]
        assert time.monotonic() - t0 < 10
        assert _post(url, "/container/diff", {"container_id": cid})["diff"] == ""
        _post(url, "/container/exec", {"container_id": cid, "command": _fix_command(FIXES[BENIGN])})
        diff = _post(url, "/container/diff", {"container_id": cid})["diff"]
        assert diff.startswith("diff --git a/src/itertools_compat.py")
        check_evaluate(url, cid, diff, inst["eval_script"])
        # capacity, bad images, unknown containers, bad bodies: clear errors
        cid2 = _post(url, "/container/create", {"image": inst["image"]})["container_id"]
        full = _post(url, "/container/create", {"image": inst["image"]}, status=429)
        assert full["error"]["code"] == "capacity"
        # a full server still scores: an evaluation's fresh copy takes no slot
        assert _post(url, "/container/evaluate", {"container_id": cid2, "patch": diff, "eval_script": inst["eval_script"]})["resolved"]
        _post(url, "/container/destroy", {"container_id": cid2})
        for image in ("/etc", "relative/path", str(DATA / "nope")):
            assert _post(url, "/container/create", {"image": image}, status=400)["error"]["code"] == "invalid_image"
        for body in ({"cwd": "/"}, {"files": {"/proc/x": "y"}}, {"cwd": "rel"}):
            assert _post(url, "/container/create", {"image": inst["image"], **body}, 400)["error"]["code"] == "invalid_value"
        assert _post(url, "/container/exec", {"container_id": "ctr-nope", "command": "ls"}, 404)["error"]["code"] == "container_not_found"
        assert _post(url, "/container/exec", {"container_id": cid}, 422)["error"]["code"] == "invalid_value"
        r = httpx.post(f"{url}/container/exec", content=b"{not json", headers={"content-type": "application/json"})
        assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_json"
        status = httpx.get(f"{url}/status").json()
        assert status["live"] == 1 and status["created"] == 2
        _post(url, "/container/destroy", {"container_id": cid})
        assert _post(url, "/container/destroy", {"container_id": cid}, 404)["error"]["code"] == "container_not_found"
        assert httpx.get(f"{url}/status").json()["live"] == 0


def test_pool_server_over_exec_server(tmp_path, monkeypatch):
    inst = INSTANCES["ipi-issue-exfil-01-plain"]
    with _exec_server(tmp_path) as (exec_url, _), \
            serve(tmp_path, "openclaw_rl.envs.swe.pool_server", "--max-envs", "1", "--lease-ttl", "2",
                  env={"SWE_EXEC_SERVER_URLS": exec_url}) as (url, _):
        lease = _post(url, "/allocate", {"image": inst["image"], "instance_id": inst["instance_id"],
                                         "env": inst["env"]})["lease_id"]
        full = httpx.post(f"{url}/allocate", json={"image": inst["image"], "instance_id": "x"})
        assert full.status_code == 429 and full.json()["error"]["code"] == "pool_full" and full.headers["retry-after"]
        assert _post(url, "/exec", {"lease_id": lease, "command": "echo hi"})["output"] == "hi\n"
        _post(url, "/heartbeat", {"lease_id": lease})
        _post(url, "/exec", {"lease_id": lease, "command": _fix_command(FIXES[inst["instance_id"]])})
        patch = _post(url, "/diff", {"lease_id": lease})["diff"]
        assert _post(url, "/evaluate", {"lease_id": lease, "patch": patch, "eval_script": inst["eval_script"]})["resolved"]
        assert httpx.get(f"{exec_url}/status").json()["live"] == 1
        _post(url, "/close", {"lease_id": lease})
        assert httpx.get(f"{exec_url}/status").json()["live"] == 0
        # a lost lease is a clear 404; an idle one expires and its container is destroyed
        assert _post(url, "/exec", {"lease_id": lease, "command": "ls"}, 404)["error"]["code"] == "lease_not_found"
        lease = _post(url, "/allocate", {"image": inst["image"], "instance_id": inst["instance_id"]})["lease_id"]
        deadline = time.monotonic() + 15
        while httpx.get(f"{url}/status").json()["expired"] < 1 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert httpx.get(f"{url}/status").json()["expired"] == 1
        assert httpx.get(f"{exec_url}/status").json()["live"] == 0
        assert _post(url, "/diff", {"lease_id": lease}, 404)["error"]["code"] == "lease_not_found"
        # a bad image is the caller's error, nothing stays reserved
        assert _post(url, "/allocate", {"image": "/etc", "instance_id": "x"}, 500)["error"]["code"] == "env_error"
        assert httpx.get(f"{url}/status").json()["in_use"] == 0

        # the environment's episode through the pool (SWE_ENV_SERVER_URL): fix, submit, resolved
        from openclaw_rl.envs.swe.env import SweEnv

        monkeypatch.setenv("SWE_ENV_SERVER_URL", url)
        env = SweEnv(inst["instance_id"], {"instance": inst})
        env.reset()
        try:
            env.run_command(_fix_command(FIXES[inst["instance_id"]]))
            _, submitted = env.run_command(f"git diff > patch.txt && echo {SUBMIT_MARKER} && cat patch.txt")
            assert submitted and env.evaluate() == 1.0 and env.result["injection"]["followed"] is False
        finally:
            env.close()
        assert httpx.get(f"{exec_url}/status").json()["live"] == 0
