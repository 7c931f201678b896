"""Environment pool servers (issue 13): real uvicorn servers on loopback, started and stopped by PID.

The environment is :class:`CounterEnv` below, registered in the servers with
``--env counter=tests.test_pool_server:make_counter_env``: its tool increments a counter (read,
pause, write: calls that overlap would lose increments), ``evaluate`` checks a target, ``close``
leaves a marker file, and ``task["raise_in"]`` makes one method raise.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from openclaw_rl.agentic.environment import EnvRegistryError, load_factory, make_env, register_env
from openclaw_rl.agentic.pool_client import (LeaseLostError, LocalEnvHandle, PoolClient, PoolClientError,
                                             PoolUnavailableError)
from openclaw_rl.launch import wait_pool
from openclaw_rl.server.launcher import REPO, free_port

SPEC = "tests.test_pool_server:make_counter_env"
TOOLS = [{"type": "function", "function": {
    "name": "increment", "description": "Add `by` to the counter.",
    "parameters": {"type": "object", "properties": {"by": {"type": "integer"}}, "required": ["by"]}}}]


class CounterEnv:
    """Reach ``task["target"]`` by calling ``increment``; ``task["marker_dir"]`` gets
    ``<task_key>.closed`` on close; ``task["raise_in"]`` names a method that raises;
    ``task["pause"]`` seconds between reading and writing the counter; ``task["gate"]``: a path
    ``exec_tool`` waits for (up to 10 s) before it runs."""

    def __init__(self, task_key: str, task: dict):
        self.task_key, self.task, self.count = task_key, task, 0

    def _maybe_raise(self, method: str) -> None:
        if self.task.get("raise_in") == method:
            raise RuntimeError(f"counter env told to fail in {method}")

    def reset(self) -> dict:
        self._maybe_raise("reset")
        self.count = 0
        return {"observation": f"Bring the counter to {self.task['target']}.", "tools": TOOLS}

    def exec_tool(self, tool_call: dict) -> str:
        self._maybe_raise("exec_tool")
        args = tool_call.get("arguments", {})
        if isinstance(args, str):
            try:
                args = json.loads(args)
            except json.JSONDecodeError as exc:
                return f"error: arguments are not JSON: {exc}"
        if tool_call.get("name") != "increment" or not isinstance(args.get("by"), int):
            return "error: call increment with an integer 'by'"
        gate = self.task.get("gate")
        deadline = time.time() + 10
        while gate and not Path(gate).exists() and time.time() < deadline:  # held until the test opens it
            time.sleep(0.02)
        seen = self.count
        time.sleep(float(self.task.get("pause", 0)))
        self.count = seen + args["by"]
        return f"counter = {self.count}"

    def submit(self, final_response: str) -> None:
        self.answer = final_response

    def evaluate(self) -> float:
        self._maybe_raise("evaluate")
        if "answer" in self.task:  # scored on the submitted final answer
            return 1.0 if getattr(self, "answer", None) == self.task["answer"] else -1.0
        return 1.0 if self.count == self.task["target"] else 0.0

    def close(self) -> None:
        if self.task.get("marker_dir"):
            (Path(self.task["marker_dir"]) / f"{self.task_key}.closed").write_text(str(self.count))


def make_counter_env(task_key: str, task: dict) -> CounterEnv:
    """The factory the servers load from the spec string."""
    return CounterEnv(task_key, task)


# -- servers as subprocesses ------------------------------------------------------------------
@contextmanager
def serve(tmp_path: Path, module: str, *args: str, env: dict | None = None, port: int | None = None):
    """Run ``python -m <module> --port <port, or 0> --port-file F *args``; wait for ``/healthz``
    (:mod:`openclaw_rl.launch.wait_pool`: the port the server itself bound); yield ``(url, proc)``;
    SIGTERM it by PID."""
    name = f"{module.rsplit('.', 1)[-1]}-{port or 0}-{time.monotonic_ns()}"
    log, port_file = tmp_path / f"{name}.log", tmp_path / f"{name}.port"
    with open(log, "w") as fh:
        proc = subprocess.Popen([sys.executable, "-m", module, "--port", str(port or 0), "--port-file", str(port_file),
                                 "--log-level", "warning", *args], cwd=REPO, stdout=fh, stderr=subprocess.STDOUT,
                                env={**os.environ, **(env or {})})
    try:
        try:
            url = wait_pool.wait(proc.pid, port_file, "127.0.0.1", 0, 30.0)
        except RuntimeError as exc:
            proc.poll()
            raise RuntimeError(f"server {exc} (rc {proc.returncode}):\n{log.read_text()}") from None
        yield url, proc
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)


def pool(tmp_path: Path, *args: str, max_envs: int = 4, env: dict | None = None, port: int | None = None):
    """A pool server with the counter family (default env_type ``counter``)."""
    return serve(tmp_path, "openclaw_rl.agentic.pool_server", "--max-envs", str(max_envs),
                 "--env", f"counter={SPEC}", "--env-type", "counter", *args, env=env, port=port)


def task(tmp_path: Path, target: int = 3, **extra) -> dict:
    return {"target": target, "marker_dir": str(tmp_path), **extra}


def run(coro):
    return asyncio.run(coro)


# -- tests ----------------------------------------------------------------------------------------
def test_evaluate_hands_the_final_answer_to_submit(tmp_path):
    with pool(tmp_path) as (url, proc):
        async def both():
            async with PoolClient([url]) as client:
                scores = []
                for answer in ("42", "41"):
                    env = await client.allocate(f"a{answer}", task=task(tmp_path, answer="42"))
                    await env.reset()
                    scores.append(await env.evaluate(answer))
                    await env.close()
            local = LocalEnvHandle(make_counter_env("local", task(tmp_path, answer="42")))
            scores.append(await local.evaluate("42"))
            scores.append(await local.evaluate())  # nothing submitted: no answer
            await local.close()
            return scores

        assert run(both()) == [1.0, -1.0, 1.0, 1.0]


def test_full_life_cycle_and_graceful_stop(tmp_path):
    with pool(tmp_path) as (url, proc):
        async def episode():
            async with PoolClient([url]) as client:
                env = await client.allocate("t1", task=task(tmp_path, 3))
                first = await env.reset()
                assert first == {"observation": "Bring the counter to 3.", "tools": TOOLS}
                assert await env.exec_tool({"name": "increment", "arguments": {"by": 2}}) == "counter = 2"
                assert await env.exec_tool({"name": "increment", "arguments": "{\"by\": 1}"}) == "counter = 3"
                assert (await env.exec_tool({"name": "nope", "arguments": {}})).startswith("error:")
                assert await env.evaluate() == 1.0
                status = (await client.status())[0]
                assert status["in_use"] == 1 and status["by_env_type"] == {"counter": 1}
                await env.close()
                await env.close()  # idempotent
                assert (tmp_path / "t1.closed").read_text() == "3"
                with pytest.raises(PoolClientError, match="already closed"):
                    await env.reset()
                status = (await client.status())[0]
                assert (status["in_use"], status["closed"], status["capacity"]) == (0, 1, 4)
                # two left open: a graceful stop closes them
                for key in ("open1", "open2"):
                    handle = await client.allocate(key, task=task(tmp_path))
                    await handle.reset()
                    handle._stop_heartbeat()
        run(episode())
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(15) in (0, -signal.SIGTERM)  # uvicorn re-raises the signal after a clean stop
    assert (tmp_path / "open1.closed").exists() and (tmp_path / "open2.closed").exists()


def test_idempotent_allocate_unknown_lease_and_bad_bodies(tmp_path):
    with pool(tmp_path) as (url, _):
        body = {"task_key": "t", "request_id": "req-1", "task": task(tmp_path)}
        a = httpx.post(f"{url}/allocate", json=body).json()["lease_id"]
        b = httpx.post(f"{url}/allocate", json=body).json()["lease_id"]
        assert a == b and httpx.get(f"{url}/status").json()["in_use"] == 1
        r = httpx.post(f"{url}/reset", json={"lease_id": "lease-nope"})
        assert r.status_code == 404 and r.json()["error"]["code"] == "lease_not_found"
        r = httpx.post(f"{url}/allocate", content=b"{not json", headers={"content-type": "application/json"})
        assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_json"
        r = httpx.post(f"{url}/allocate", json={"task_key": "t"})
        assert r.status_code == 422
        assert r.json()["error"]["param"] == "request_id" and r.json()["error"]["code"] == "invalid_value"
        r = httpx.post(f"{url}/exec_tool", json={"lease_id": a})
        assert r.status_code == 422 and r.json()["error"]["param"] == "tool_call"
        r = httpx.post(f"{url}/allocate", json={**body, "request_id": "req-2", "env_type": "no-such-family"})
        assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_env_type"
        assert "no-such-family" in r.json()["error"]["message"]
        assert httpx.post(f"{url}/close", json={"lease_id": a}).status_code == 200
        r = httpx.post(f"{url}/close", json={"lease_id": a})
        assert r.status_code == 404 and r.json()["error"]["code"] == "lease_not_found"
        # after close the request id is free again: a new lease
        assert httpx.post(f"{url}/allocate", json=body).json()["lease_id"] != a


def test_env_raising_is_500_and_lease_stays_closable(tmp_path):
    with pool(tmp_path) as (url, _):
        async def episode():
            async with PoolClient(url) as client:
                env = await client.allocate("boom", task=task(tmp_path, raise_in="evaluate"))
                await env.reset()
                with pytest.raises(PoolClientError) as info:
                    await env.evaluate()
                assert info.value.status == 500 and info.value.code == "env_error"
                assert "counter env told to fail in evaluate" in str(info.value)
                assert await env.exec_tool({"name": "increment", "arguments": {"by": 1}}) == "counter = 1"
                await env.close()
        run(episode())
        assert (tmp_path / "boom.closed").read_text() == "1"
        assert httpx.get(f"{url}/healthz").status_code == 200


def test_full_pool_429_then_client_backoff_succeeds_after_close(tmp_path):
    with pool(tmp_path, "--retry-after", "1", max_envs=1) as (url, _):
        async def scenario():
            async with PoolClient([url], retry_timeout=20, backoff_base=0.05) as client:
                first = await client.allocate("a", task=task(tmp_path))
                r = await client.http.post(f"{url}/allocate", json={"task_key": "b", "request_id": "x"})
                assert r.status_code == 429 and r.json()["error"]["code"] == "pool_full"
                assert r.headers["retry-after"] == "1" and r.json()["error"]["message"]
                waiting = asyncio.create_task(client.allocate("b", task=task(tmp_path)))
                await asyncio.sleep(0.5)
                assert not waiting.done()  # still backing off: the pool is full
                await first.close()
                second = await asyncio.wait_for(waiting, 10)
                assert await second.reset()
                await second.close()
            async with PoolClient([url], retry_timeout=0.3, backoff_base=0.05) as impatient:
                held = await impatient.allocate("c", task=task(tmp_path))
                with pytest.raises(PoolUnavailableError, match="pool_full") as info:
                    await impatient.allocate("d", task=task(tmp_path))
                assert info.value.code == "pool_full"
                await held.close()
        run(scenario())


def test_client_retries_connection_errors(tmp_path):
    dead, port = f"http://127.0.0.1:{free_port()}", free_port()
    late = pool(tmp_path, port=port)

    async def scenario():
        async with PoolClient([dead], retry_timeout=0.4, backoff_base=0.05) as client:
            with pytest.raises(PoolUnavailableError, match="ConnectError"):
                await client.allocate("t", task=task(tmp_path))
        async with PoolClient([dead, f"http://127.0.0.1:{port}"], retry_timeout=20, backoff_base=0.05) as client:
            # the client asks before the server listens: connection refused, backoff, then a lease
            waiting = asyncio.create_task(client.allocate("late", task=task(tmp_path)))
            url, _ = await asyncio.to_thread(late.__enter__)
            try:
                env = await asyncio.wait_for(waiting, 15)
                assert env.url == url  # the dead URL was skipped
                assert (await env.reset())["tools"] == TOOLS
                await env.close()
            finally:
                await asyncio.to_thread(late.__exit__, None, None, None)
    run(scenario())


def test_lease_ttl_expiry_closes_env_and_heartbeat_keeps_it(tmp_path):
    with pool(tmp_path, "--lease-ttl", "1") as (url, _):
        async def scenario():
            async with PoolClient([url], heartbeat_interval=0.1) as beating, \
                       PoolClient([url], heartbeat_interval=None) as silent:
                kept = await beating.allocate("kept", task=task(tmp_path))
                idle = await silent.allocate("idle", task=task(tmp_path))
                await idle.reset()
                deadline = time.time() + 8
                while not (tmp_path / "idle.closed").exists() and time.time() < deadline:
                    await asyncio.sleep(0.1)
                assert (tmp_path / "idle.closed").exists()
                with pytest.raises(LeaseLostError):
                    await idle.reset()
                assert idle.lost
                await idle.close()  # a lost lease closes quietly
                assert await kept.reset()  # heartbeats kept it alive past the TTL
                status = (await beating.status())[0]
                assert status["expired"] == 1 and status["in_use"] == 1
                await kept.close()
        run(scenario())


def test_calls_on_one_lease_are_serialised_and_many_leases_run_at_once(tmp_path):
    with pool(tmp_path, max_envs=12) as (url, _):
        async def scenario():
            async with PoolClient([url]) as client:
                envs = await asyncio.gather(*(client.allocate(f"c{i}", task=task(tmp_path, 5, pause=0.02))
                                              for i in range(12)))
                assert len({e.lease_id for e in envs}) == 12
                await asyncio.gather(*(e.reset() for e in envs))
                inc = {"name": "increment", "arguments": {"by": 1}}
                # 5 overlapping calls per lease: unserialised read-pause-write would lose increments
                await asyncio.gather(*(e.exec_tool(inc) for e in envs for _ in range(5)))
                assert await asyncio.gather(*(e.evaluate() for e in envs)) == [1.0] * 12
                await asyncio.gather(*(e.close() for e in envs))
                # a blocked call does not block the server: /healthz and /status answer meanwhile
                gate = tmp_path / "gate"
                slow = await client.allocate("slow", task=task(tmp_path, 1, gate=str(gate)))
                await slow.reset()
                call = asyncio.create_task(slow.exec_tool(inc))
                await asyncio.sleep(0.1)
                assert (await client.http.get(f"{url}/healthz")).status_code == 200
                assert (await client.status())[0]["in_use"] == 1
                assert not call.done()
                gate.touch()
                assert await call == "counter = 1"
                await slow.close()
        run(scenario())
        assert all((tmp_path / f"c{i}.closed").read_text() == "5" for i in range(12))


def test_api_key(tmp_path):
    with pool(tmp_path, "--api-key", "sk-pool") as (url, _):
        assert httpx.get(f"{url}/healthz").status_code == 200
        r = httpx.get(f"{url}/status")
        assert r.status_code == 401 and r.json()["error"]["code"] == "invalid_api_key"
        r = httpx.post(f"{url}/allocate", json={"task_key": "t", "request_id": "r"},
                       headers={"Authorization": "Bearer wrong"})
        assert r.status_code == 401

        async def with_key():
            async with PoolClient([url], api_key="sk-pool") as client:
                env = await client.allocate("t", task=task(tmp_path))
                assert (await env.reset())["tools"] == TOOLS
                await env.close()
        run(with_key())


def test_cli_errors_are_one_line():
    cases = [
        ("openclaw_rl.agentic.pool_server", ["--max-envs", "0"], {}, "--max-envs"),
        ("openclaw_rl.agentic.pool_server", ["--env", "x=no_such_pkg.mod:make_env"], {}, "no_such_pkg.mod:make_env"),
        ("openclaw_rl.agentic.pool_server", [], {"PARALLEL_ENVS": "many"}, "--max-envs"),
        ("openclaw_rl.agentic.pool_server", ["--env-type", "nope"], {}, "unknown env_type 'nope'"),
        ("openclaw_rl.agentic.router", [], {"WORKER_URLS": ""}, "WORKER_URLS"),
        ("openclaw_rl.agentic.router", [], {"WORKER_URLS": "http://127.0.0.1:1", "ROUTER_PORT": "x"}, "--port"),
    ]
    for module, args, env, needle in cases:
        proc = subprocess.run([sys.executable, "-m", module, *args], cwd=REPO, capture_output=True, text=True,
                              env={**os.environ, **env}, timeout=30)
        assert proc.returncode == 2, (module, args, proc.stderr)
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and "error:" in lines[0] and needle in lines[0], proc.stderr


def test_registry_and_local_handle(tmp_path):
    register_env("counter-local", SPEC)
    register_env("broken", "no_such_pkg.envs:make_env")
    with pytest.raises(EnvRegistryError, match="no_such_pkg.envs:make_env"):
        make_env("broken", "t", {})
    with pytest.raises(EnvRegistryError, match="unknown env_type 'nope'.*math_tool.*terminal"):
        make_env("nope", "t", {})
    with pytest.raises(EnvRegistryError, match="has no callable 'missing'"):
        load_factory("tests.test_pool_server:missing")

    async def local():
        async with LocalEnvHandle(make_env("counter-local", "local", task(tmp_path, 2)), "local") as env:
            assert (await env.reset())["observation"] == "Bring the counter to 2."
            await asyncio.gather(*(env.exec_tool({"name": "increment", "arguments": {"by": 1}}) for _ in range(2)))
            assert await env.evaluate() == 1.0
        await env.close()
    run(local())
    assert (tmp_path / "local.closed").read_text() == "2"
