"""swe-rl's exec server on its Docker backend (``--backend docker``): the same ``/container/*`` API
and errors as the bubblewrap backend (tests/test_swe_servers.py), on a real Docker daemon with a
task image built here from an ipi repository.

Runs where a Docker daemon answers (``DOCKER_HOST`` as the docker CLI reads it) and
``OPENCLAW_SWE_DOCKER_BASE`` names a local base image with bash, git, python3 and pytest (what a
SWE-bench instance image has); skipped otherwise (CI has no daemon). Made here with
``debootstrap --variant=minbase --include=git,python3,python3-pytest bookworm ROOT`` and
``tar -C ROOT -c . | docker import - openclaw-swe-base`` (swe-rl/README.md, "Servers")."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import tarfile
import time

import httpx
import pytest

from openclaw_rl.envs.swe.docker_containers import docker_available
from tests.test_pool_server import serve

BASE = os.environ.get("OPENCLAW_SWE_DOCKER_BASE")
_OK, _WHY = docker_available()
needs_docker = pytest.mark.skipif(not (_OK and BASE), reason=_WHY or "OPENCLAW_SWE_DOCKER_BASE (a base image with "
                                  "bash, git, python3, pytest) is not set")
BENIGN = "ipi-benign-03"


@pytest.mark.parametrize("module", ["exec_server", "pool_server"])
def test_docker_backend_without_a_daemon_is_one_line_exit_2(tmp_path, module):
    """Runs everywhere: ``--backend docker`` with no daemon at ``DOCKER_HOST`` says so in one line."""
    r = subprocess.run([sys.executable, "-m", f"openclaw_rl.envs.swe.{module}", "--backend", "docker", "--port", "0"],
                       env={**os.environ, "DOCKER_HOST": f"unix://{tmp_path}/no.sock"}, capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "--backend docker: no Docker daemon" in lines[0], r.stderr


def _post(url, path, body, status=200):
    r = httpx.post(f"{url}{path}", json=body, timeout=120)
    assert r.status_code == status, r.text
    return r.json()


@pytest.fixture(scope="module")
def task_image():
    """``(tag, instance)``: the benign ipi repository at ``/workspace`` of an image built on BASE;
    the image is removed afterwards."""
    import docker

    from openclaw_rl.envs.swe.data import ensure_converted, load_instances

    data = ensure_converted()
    inst = next(i for s in ("train", "eval") for i in load_instances(data / f"swe_{s}.jsonl")
                if i["instance_id"] == BENIGN)
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        tar.add(inst["image"], arcname="repo")
        dockerfile = f"FROM {BASE}\nCOPY repo /workspace\nWORKDIR /workspace\n".encode()
        info = tarfile.TarInfo("Dockerfile")
        info.size = len(dockerfile)
        tar.addfile(info, io.BytesIO(dockerfile))
    buf.seek(0)
    client = docker.from_env()
    tag = f"openclaw-swe-test:{BENIGN}-{time.monotonic_ns()}"
    client.images.build(fileobj=buf, custom_context=True, tag=tag, rm=True, network_mode="none")
    try:
        yield tag, inst
    finally:
        client.images.remove(tag, force=True)


def _ours(client) -> list:
    return client.containers.list(all=True, filters={"label": "openclaw-rl=swe"})


@needs_docker
def test_exec_server_on_docker_api_and_bad_input(tmp_path, task_image):
    import docker

    from tests.test_swe_env import FIXES, _fix_command
    from tests.test_swe_servers import check_evaluate

    tag, inst = task_image
    client = docker.from_env()
    before = {c.id for c in _ours(client)}
    with serve(tmp_path, "openclaw_rl.envs.swe.exec_server", "--backend", "docker", "--max-containers", "2") as (url, _):
        cid = _post(url, "/container/create", {"image": tag, "cwd": "/workspace", "timeout": 20,
                                               "env": inst["env"], "files": inst["files"]})["container_id"]
        out = _post(url, "/container/exec", {"container_id": cid, "command": "ls src; echo $SECRET_API_KEY; cat /root/.secret_canary"})
        assert out["returncode"] == 0 and "itertools_compat.py" in out["output"], out
        assert "CANARY_sk_live" in out["output"] and "CANARY_TOKEN_FILE_READ" in out["output"]
        assert _post(url, "/container/exec", {"container_id": cid, "command": "pwd", "cwd": "/tmp"})["output"].strip() == "/tmp"
        # no network in the container
        net = _post(url, "/container/exec", {"container_id": cid, "command": "cat /sys/class/net/*/operstate 2>/dev/null; ls /sys/class/net"})
        assert net["output"].split() == ["unknown", "lo"] or net["output"].split() == ["lo"], net
        # a command that hangs is killed at its timeout, with what it printed so far
        t0 = time.monotonic()
        out = _post(url, "/container/exec", {"container_id": cid, "command": "echo start; sleep 60 & sleep 61", "timeout": 1})
        assert out["returncode"] == 124 and out["timed_out"] and "start" in out["output"], out
        assert time.monotonic() - t0 < 10
        sleeps = "cat /proc/[0-9]*/cmdline 2>/dev/null | tr '\\0' ' ' | grep -o 'sleep 6[01]' | wc -l"
        assert _post(url, "/container/exec", {"container_id": cid, "command": sleeps})["output"].strip() == "0"
        out = _post(url, "/container/exec", {"container_id": cid, "command": "trap '' TERM; sleep 60", "timeout": 1})
        assert out["returncode"] == 124 and out["timed_out"], out  # TERM ignored: KILL 2 s later
        # the limits (SWE_LIMITS: 2048 MB, 256 processes) hold
        hog = _post(url, "/container/exec", {"container_id": cid, "command": "python3 -c 'x = bytearray(3 << 30)'"})
        assert hog["returncode"] != 0, hog
        forks = _post(url, "/container/exec", {"container_id": cid, "timeout": 30,
                                               "command": "for i in $(seq 400); do sleep 3 & done; wait"})
        assert "fork" in forks["output"] and "Resource temporarily unavailable" in forks["output"], forks
        time.sleep(3)  # the sleeps that did start end; the container serves the next command
        assert _post(url, "/container/exec", {"container_id": cid, "command": "echo ok"})["output"] == "ok\n"
        assert _post(url, "/container/diff", {"container_id": cid})["diff"] == ""
        _post(url, "/container/exec", {"container_id": cid, "command": _fix_command(FIXES[BENIGN])})
        diff = _post(url, "/container/diff", {"container_id": cid})["diff"]
        assert diff.startswith("diff --git a/src/itertools_compat.py"), diff
        check_evaluate(url, cid, diff, inst["eval_script"])
        # capacity, unknown images and containers: the bubblewrap backend's errors
        cid2 = _post(url, "/container/create", {"image": tag})["container_id"]
        assert _post(url, "/container/create", {"image": tag}, status=429)["error"]["code"] == "capacity"
        _post(url, "/container/destroy", {"container_id": cid2})
        assert _post(url, "/container/create", {"image": "openclaw-no-such-image:1"}, 400)["error"]["code"] == "invalid_image"
        assert _post(url, "/container/create", {"image": tag, "cwd": "rel"}, 400)["error"]["code"] == "invalid_value"
        assert _post(url, "/container/exec", {"container_id": "ctr-nope", "command": "ls"}, 404)["error"]["code"] == "container_not_found"
        status = httpx.get(f"{url}/status").json()
        assert status["live"] == 1 and status["created"] == 2 and status["backend"] == "docker"
        # the server stops with a container still live: it is removed (nothing leaks on the daemon)
    assert {c.id for c in _ours(client)} == before


@needs_docker
def test_swe_episode_through_the_docker_exec_server(tmp_path, task_image, monkeypatch):
    """The environment's episode (SWE_EXEC_SERVER_URLS -> a Docker exec server): fix, submit, resolved."""
    from openclaw_rl.envs.swe.config import SUBMIT_MARKER
    from openclaw_rl.envs.swe.env import SweEnv
    from tests.test_swe_env import FIXES, _fix_command

    tag, inst = task_image
    with serve(tmp_path, "openclaw_rl.envs.swe.exec_server", "--backend", "docker") as (url, _):
        monkeypatch.setenv("SWE_EXEC_SERVER_URLS", url)
        env = SweEnv(inst["instance_id"], {"instance": {**inst, "image": tag}})
        env.reset()
        try:
            env.run_command(_fix_command(FIXES[BENIGN]))
            _, submitted = env.run_command(f"git diff > patch.txt && echo {SUBMIT_MARKER} && cat patch.txt")
            assert submitted and env.evaluate() == 1.0, env.result
        finally:
            env.close()
        assert httpx.get(f"{url}/status").json()["live"] == 0
