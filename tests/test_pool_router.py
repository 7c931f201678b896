"""The router in front of pool workers (real uvicorn servers on 127.0.0.1, stopped by PID): it
spreads leases over the workers, answers 429 when all are full, and forwards every lease call
with its whole body (the agent's final answer to /evaluate included)."""

from __future__ import annotations

import httpx
import pytest

from openclaw_rl.agentic.pool_client import LeaseLostError, PoolClient, PoolUnavailableError
from tests.test_pool_server import pool, run, serve, task


def test_router_spreads_over_workers_and_429_when_all_full(tmp_path):
    key = {"POOL_API_KEY": "sk-pool"}  # workers and router read it; the router sends it on
    auth = {"Authorization": "Bearer sk-pool"}
    with pool(tmp_path, max_envs=2, env=key) as (w1, _), pool(tmp_path, max_envs=2, env=key) as (w2, _), \
            serve(tmp_path, "openclaw_rl.agentic.router", env={"WORKER_URLS": f"{w1},{w2}", **key}) as (router, _):
        assert httpx.get(f"{router}/status").status_code == 401

        def in_use():
            return [httpx.get(f"{w}/status", headers=auth).json()["in_use"] for w in (w1, w2)]

        async def scenario():
            async with PoolClient([router], api_key="sk-pool", retry_timeout=0.3, backoff_base=0.05) as client:
                a = await client.allocate("r1", task=task(tmp_path, 1), request_id="same")
                assert (await client.allocate("r1", request_id="same")).lease_id == a.lease_id  # idempotent
                b = await client.allocate("r2", task=task(tmp_path, 1))
                assert in_use() == [1, 1]  # least loaded first
                c = await client.allocate("r3", task=task(tmp_path, 1))
                d = await client.allocate("r4", task=task(tmp_path, 1))
                with pytest.raises(PoolUnavailableError, match="pool_full"):
                    await client.allocate("r5", task=task(tmp_path, 1))
                status = (await client.status())[0]
                assert (status["capacity"], status["in_use"], len(status["workers"])) == (4, 4, 2)
                for env in (a, b, c, d):  # calls are forwarded to the lease's worker
                    await env.reset()
                    assert await env.exec_tool({"name": "increment", "arguments": {"by": 1}}) == "counter = 1"
                    assert await env.evaluate() == 1.0
                await b.close()
                e = await client.allocate("r6", task=task(tmp_path, 1))
                await e.reset()
                for env in (a, c, d, e):
                    await env.close()
                with pytest.raises(LeaseLostError):
                    await client.post(router, "reset", {"lease_id": a.lease_id})
                assert in_use() == [0, 0]
        run(scenario())


def test_router_forwards_the_final_answer(tmp_path):
    with pool(tmp_path) as (worker, _), \
            serve(tmp_path, "openclaw_rl.agentic.router", env={"WORKER_URLS": worker}) as (router, _):
        async def both():
            async with PoolClient([router]) as client:
                scores = []
                for answer in ("42", "41"):
                    env = await client.allocate(f"a{answer}", task=task(tmp_path, answer="42"))
                    await env.reset()
                    scores.append(await env.evaluate(answer))
                    await env.close()
                return scores

        assert run(both()) == [1.0, -1.0]
