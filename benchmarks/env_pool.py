"""Environment pool overhead: per-call latency and episode throughput, direct and through the router.

    python benchmarks/env_pool.py [--episodes 64] [--steps 8] [--concurrency 1,8,32] [--client-shards 8] [--json OUT]

Starts two real pool workers (``python -m openclaw_rl.agentic.pool_server``, 127.0.0.1, each
``--max-envs`` = the largest concurrency) with the trivial ``echo`` family defined here, and a
router in front of both. For each concurrency C it runs ``--episodes`` episodes (allocate, reset,
``--steps`` exec_tool calls, evaluate, close) with C at once through :class:`PoolClient`, first
against one worker directly, then through the router, and prints p50/p95 latency of each call kind
and episodes/s. The environment does no work, so the numbers are the pool's own cost (HTTP, JSON,
thread hand-off, locks); the client and servers share the machine's cores.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from openclaw_rl.agentic.pool_client import PoolClient  # noqa: E402
from openclaw_rl.server.launcher import free_port  # noqa: E402


class EchoEnv:
    """Returns its tool call's arguments; scores 1.0."""

    def __init__(self, task_key: str, task: dict):
        self.task_key = task_key

    def reset(self) -> dict:
        return {"observation": f"task {self.task_key}", "tools": []}

    def exec_tool(self, tool_call: dict) -> str:
        return json.dumps(tool_call.get("arguments"))

    def evaluate(self) -> float:
        return 1.0

    def close(self) -> None:
        pass


def make_echo_env(task_key: str, task: dict) -> EchoEnv:
    """The factory the workers load (``--env echo=benchmarks/env_pool.py:make_echo_env``)."""
    return EchoEnv(task_key, task)


def start(module: str, *args: str, env: dict | None = None) -> tuple[subprocess.Popen, str]:
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", module, "--port", str(port), "--log-level", "error", *args],
                            cwd=REPO, env={**os.environ, **(env or {})})
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + 30
    while time.time() < deadline:
        try:
            if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                return proc, url
        except httpx.HTTPError:
            time.sleep(0.1)
    proc.kill()
    raise RuntimeError(f"{module} did not start")


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


async def run(url: str, episodes: int, steps: int, concurrency: int, shards: int = 8) -> dict:
    times: dict[str, list[float]] = {k: [] for k in ("allocate", "reset", "exec_tool", "evaluate", "close")}
    sem = asyncio.Semaphore(concurrency)

    async def timed(kind, coro):
        t0 = time.perf_counter()
        out = await coro
        times[kind].append((time.perf_counter() - t0) * 1000)
        return out

    async with PoolClient([url], heartbeat_interval=None, shards=shards) as client:
        async def episode(i: int):
            async with sem:
                env = await timed("allocate", client.allocate(f"t{i}", env_type="echo"))
                await timed("reset", env.reset())
                for k in range(steps):
                    await timed("exec_tool", env.exec_tool({"name": "echo", "arguments": {"k": k}}))
                assert await timed("evaluate", env.evaluate()) == 1.0
                await timed("close", env.close())

        t0 = time.perf_counter()
        await asyncio.gather(*(episode(i) for i in range(episodes)))
        wall = time.perf_counter() - t0
    return {"concurrency": concurrency, "episodes_per_s": round(episodes / wall, 1),
            **{f"{k}_p50_ms": round(statistics.median(v), 2) for k, v in times.items()},
            **{f"{k}_p95_ms": round(pct(v, 0.95), 2) for k, v in times.items()}}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--episodes", type=int, default=64)
    p.add_argument("--steps", type=int, default=8)
    p.add_argument("--concurrency", default="1,8,32")
    p.add_argument("--client-shards", type=int, default=8, help="PoolClient(shards=...)")
    p.add_argument("--json", default=None)
    args = p.parse_args()
    levels = [int(c) for c in args.concurrency.split(",")]
    spec = ["--env", "echo=benchmarks/env_pool.py:make_echo_env", "--max-envs", str(max(levels))]
    procs = []
    try:
        w1, u1 = start("openclaw_rl.agentic.pool_server", *spec)
        w2, u2 = start("openclaw_rl.agentic.pool_server", *spec)
        procs += [w1, w2]
        router, ur = start("openclaw_rl.agentic.router", env={"WORKER_URLS": f"{u1},{u2}"})
        procs.append(router)
        rows = []
        for target, url in (("worker", u1), ("router", ur)):
            for c in levels:
                row = {"target": target, "client_shards": args.client_shards,
                       **asyncio.run(run(url, args.episodes, args.steps, c, args.client_shards))}
                rows.append(row)
                print(json.dumps(row))
        if args.json:
            Path(args.json).write_text(json.dumps(rows, indent=1))
    finally:
        for proc in procs:
            proc.send_signal(signal.SIGTERM)
        for proc in procs:
            proc.wait(15)
    return 0


if __name__ == "__main__":
    sys.exit(main())
