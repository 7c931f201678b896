"""Engines side by side: the embedded transformers engine, ``--backend vllm`` through our server,
and vLLM's own OpenAI server, in one run.

Run from the repository root (after ``make vllm``)::

    python benchmarks/engines.py [--model-path builtin:smollm2-135m] [--clients 1,16]
                                 [--max-tokens 64] [--repeats 2] [--json OUT]

One vLLM engine server is started exactly as ``openclaw-rl serve --backend vllm`` starts it
(:func:`openclaw_rl.engine.engine_servers.start_engine_servers`: the same command line and, on a
CPU, the same KV-cache and thread budget), with ``--engine-args`` (default ``--dtype float32``,
the embedded engine's dtype). Three targets are measured against it and beside it:

* **vllm** -- vLLM's own OpenAI server: ``/v1/chat/completions`` of that engine server directly
  (vLLM renders the chat template, tokenizes and detokenizes itself);
* **ours+vllm** -- our intercept server with capture on, ``--backend vllm --engine-url`` that same
  engine server (we render, tokenize, stream-detokenize, parse and record; vLLM samples);
* **embedded** -- our intercept server with capture on and the embedded transformers engine
  (continuous batching, ``--torch-threads`` = the vLLM engine's OpenMP threads).

At each client count (default 1 and 16), ``clients`` concurrent streaming clients share
``max(--requests, 2 x clients)`` greedy chat requests of distinct prompts; the targets take turns
(the order rotates every repeat) so all see the same background load, and each target gets its
own prompts (no target profits from another's prefix cache). Reported per target: completion
tokens/s (all requests' completion tokens over the summed wall time), p50 time to first content
chunk, p50 latency; and the ratios **ours+vllm / vllm** (what our server costs in front of
vLLM; the issue's goal: at least 0.90, i.e. at most 10 % proxy cost) and **embedded / vllm**
(the engines themselves). Numbers on a shared CPU are noisy: compare ratios within one run.
The same two ratios are also given by CPU cost: the CPU seconds that every process serving the
target spent (psutil; our intercept server, the vLLM engine tree, the embedded server) per
completion token. On cores shared with other jobs, tokens/s follows how much CPU the others
leave, CPU seconds per token much less; on dedicated cores the two agree.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shlex
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # `python benchmarks/engines.py` finds openclaw_rl and tests.support

import psutil  # noqa: E402
from openai import AsyncOpenAI  # noqa: E402

from openclaw_rl.engine.cpu_budget import omp_threads  # noqa: E402
from openclaw_rl.engine.engine_servers import (resolve_engine_python, start_engine_servers,  # noqa: E402
                                               stop_engine_servers)
from openclaw_rl.models import resolve_model_path  # noqa: E402
from tests.support.server import start_server, stop_server  # noqa: E402

TOPICS = ("tide pools", "bread baking", "binary search", "volcanoes", "chess openings",
          "bicycle repair", "prime numbers", "jazz harmony", "rain forests", "compilers")
TARGETS = ("vllm", "ours+vllm", "embedded")


def prompt_text(i: int) -> str:
    """A distinct user message of similar length for request index ``i``."""
    return f"Request {i}: write a detailed note about {TOPICS[i % len(TOPICS)]}, in several paragraphs."


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` and all its descendants so far."""
    try:
        root = psutil.Process(pid)
        procs = [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return 0.0
    total = 0.0
    for proc in procs:
        try:
            t = proc.cpu_times()
            total += t.user + t.system
        except psutil.NoSuchProcess:
            pass
    return total


def median(values: list[float]) -> float:
    """The median (``nan`` for none)."""
    xs = sorted(values)
    if not xs:
        return float("nan")
    mid = len(xs) // 2
    return xs[mid] if len(xs) % 2 else (xs[mid - 1] + xs[mid]) / 2


async def stream_one(client: AsyncOpenAI, model: str, i: int, max_tokens: int) -> tuple[float, float, int]:
    """One greedy streamed chat; returns ``(ttft_s, total_s, completion_tokens)`` (usage as
    reported by the server)."""
    t0 = time.perf_counter()
    ttft, tokens = None, 0
    stream = await client.chat.completions.create(
        model=model, messages=[{"role": "user", "content": prompt_text(i)}], max_tokens=max_tokens,
        temperature=0, stream=True, stream_options={"include_usage": True})
    async for chunk in stream:
        if chunk.usage:
            tokens = chunk.usage.completion_tokens
        if ttft is None and chunk.choices and chunk.choices[0].delta.content:
            ttft = time.perf_counter() - t0
    total = time.perf_counter() - t0
    return (total if ttft is None else ttft), total, tokens


async def level(client: AsyncOpenAI, model: str, clients: int, indices: list[int], max_tokens: int) -> dict:
    """``clients`` concurrent clients share the requests ``indices``; wall time, tokens, TTFTs."""
    pending = iter(indices)
    ttft, latency, tokens = [], [], []

    async def worker():
        for i in pending:  # one shared iterator: each request is sent once
            first, total, n = await stream_one(client, model, i, max_tokens)
            ttft.append(first)
            latency.append(total)
            tokens.append(n)

    t0 = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(clients)))
    return {"wall_s": time.perf_counter() - t0, "tokens": sum(tokens), "requests": len(indices),
            "ttft_s": ttft, "latency_s": latency}


async def measure(clients_by_target: dict, pids: dict, args) -> list[dict]:
    """Every client count, every repeat, the targets in rotated order; one row per (count, target).

    ``pids``: ``{target: (intercept server pid or None, vLLM engine tree pid or None)}``; the CPU
    seconds each spent while the target was measured are recorded too (``server_cpu_s``,
    ``engine_cpu_s``): on a shared CPU, throughput follows the other jobs, but CPU
    seconds per token do not."""
    rows = []
    for c in args.clients:
        n = max(args.requests, 2 * c)
        runs: dict[str, list[dict]] = {t: [] for t in TARGETS}
        for r in range(args.repeats):
            order = TARGETS[r % 3:] + TARGETS[:r % 3]
            for t in order:
                client, model = clients_by_target[t]
                base = 100_000 * (1 + TARGETS.index(t)) + 1000 * c + n * r  # own prompts per target
                server_pid, engine_pid = pids[t]
                cpu0 = [cpu_seconds(p) if p else 0.0 for p in (server_pid, engine_pid)]
                runs[t].append(await level(client, model, c, list(range(base, base + n)), args.max_tokens))
                cpu1 = [cpu_seconds(p) if p else 0.0 for p in (server_pid, engine_pid)]
                runs[t][-1]["server_cpu_s"], runs[t][-1]["engine_cpu_s"] = cpu1[0] - cpu0[0], cpu1[1] - cpu0[1]
                print(f"  clients {c:>2} repeat {r + 1} {t:<10} {runs[t][-1]['tokens'] / runs[t][-1]['wall_s']:7.1f} "
                      f"tokens/s", flush=True)
        for t in TARGETS:
            wall = sum(x["wall_s"] for x in runs[t])
            rows.append({"clients": c, "target": t, "requests": sum(x["requests"] for x in runs[t]),
                         "tokens": sum(x["tokens"] for x in runs[t]), "wall_s": wall,
                         "tokens_per_s": sum(x["tokens"] for x in runs[t]) / wall,
                         "ttft_p50_ms": 1000 * median([v for x in runs[t] for v in x["ttft_s"]]),
                         "latency_p50_ms": 1000 * median([v for x in runs[t] for v in x["latency_s"]]),
                         "server_cpu_s": sum(x["server_cpu_s"] for x in runs[t]),
                         "engine_cpu_s": sum(x["engine_cpu_s"] for x in runs[t])})
    return rows


async def warm(client: AsyncOpenAI, model: str, max_tokens: int) -> None:
    """First requests (allocator, HTTP connection, the engine's first batches)."""
    for i in range(2):
        await stream_one(client, model, 900 + i, max_tokens)


async def run(args) -> dict:
    folder = resolve_model_path(args.model_path)
    python = resolve_engine_python("vllm", args.engine_python)
    threads = omp_threads()
    with tempfile.TemporaryDirectory(prefix="bench-engines-") as tmp:
        tmp = Path(tmp)
        engines, servers = [], []
        try:
            engines = start_engine_servers("vllm", folder, python, [[]], None, shlex.split(args.engine_args),
                                           tmp / "engine-logs", 900.0)
            engine_url = engines[0].url
            ours = start_server(str(folder), tmp / "buf-vllm", "--backend", "vllm", "--engine-url", engine_url,
                                "--torch-threads", "1", api_key="sk-bench", timeout=300)
            servers.append(ours)
            embedded = start_server(str(folder), tmp / "buf-embedded", "--torch-threads", str(threads),
                                    api_key="sk-bench", timeout=300)
            servers.append(embedded)
            clients = {}
            for target, url, key in (("vllm", f"{engine_url}/v1", "none"), ("ours+vllm", ours.base_url, "sk-bench"),
                                     ("embedded", embedded.base_url, "sk-bench")):
                client = AsyncOpenAI(base_url=url, api_key=key, max_retries=0, timeout=900)
                clients[target] = (client, (await client.models.list()).data[0].id)
            for client, model in clients.values():
                await warm(client, model, args.max_tokens)
            load_start = os.getloadavg()
            engine_pid = engines[0].proc.pid
            pids = {"vllm": (None, engine_pid), "ours+vllm": (ours.proc.pid, engine_pid),
                    "embedded": (embedded.proc.pid, None)}
            rows = await measure(clients, pids, args)
            for client, _ in clients.values():
                await client.close()
        finally:
            for s in servers:
                stop_server(s)
            stop_engine_servers(engines)
    return {"model_path": args.model_path, "max_tokens": args.max_tokens, "engine_args": args.engine_args,
            "omp_threads": threads, "repeats": args.repeats, "rows": rows,
            "load_average_start": load_start, "load_average_end": os.getloadavg()}


def cpu_ms_per_token(row: dict) -> float:
    """CPU milliseconds (intercept server + vLLM engine tree) per completion token of a row."""
    return 1000 * (row["server_cpu_s"] + row["engine_cpu_s"]) / max(1, row["tokens"])


def ratios(rows: list[dict]) -> list[dict]:
    """Per client count: ``ours_over_vllm`` and ``embedded_over_vllm`` (tokens/s ratios), and the
    same by CPU cost, ``ours_over_vllm_cpu`` = vLLM's CPU ms per token / ours (all processes that
    serve a token: what throughput would be on cores nobody else uses)."""
    out = []
    for c in sorted({r["clients"] for r in rows}):
        by = {r["target"]: r for r in rows if r["clients"] == c}
        out.append({"clients": c, "ours_over_vllm": by["ours+vllm"]["tokens_per_s"] / by["vllm"]["tokens_per_s"],
                    "embedded_over_vllm": by["embedded"]["tokens_per_s"] / by["vllm"]["tokens_per_s"],
                    "ours_over_vllm_cpu": cpu_ms_per_token(by["vllm"]) / cpu_ms_per_token(by["ours+vllm"]),
                    "embedded_over_vllm_cpu": cpu_ms_per_token(by["vllm"]) / cpu_ms_per_token(by["embedded"])})
    return out


def report(res: dict) -> None:
    print(f"\nmodel {res['model_path']}, greedy, max_tokens {res['max_tokens']}, vLLM --engine-args "
          f"{res['engine_args']!r}, OpenMP/torch threads {res['omp_threads']}, {res['repeats']} repeats; "
          f"load average {res['load_average_start'][0]:.1f} at start, {res['load_average_end'][0]:.1f} at end\n")
    print(f"{'clients':>7}  {'target':<10}{'requests':>9}{'tokens':>8}{'tokens/s':>10}{'ttft_p50_ms':>13}"
          f"{'latency_p50_ms':>16}{'server_cpu_s':>14}{'vllm_cpu_s':>12}{'cpu_ms/token':>14}")
    for r in res["rows"]:
        print(f"{r['clients']:>7}  {r['target']:<10}{r['requests']:>9}{r['tokens']:>8}{r['tokens_per_s']:>10.1f}"
              f"{r['ttft_p50_ms']:>13.0f}{r['latency_p50_ms']:>16.0f}{r['server_cpu_s']:>14.1f}"
              f"{r['engine_cpu_s']:>12.1f}{cpu_ms_per_token(r):>14.1f}")
    print(f"\n{'':>7}{'--- by tokens/s ---':^36}{'--- by CPU per token ---':^36}")
    print(f"{'clients':>7}{'ours/vllm':>11}{'proxy cost':>12}{'embedded/vllm':>15}"
          f"{'ours/vllm':>11}{'proxy cost':>12}{'embedded/vllm':>15}")
    for q in res["ratios"]:
        print(f"{q['clients']:>7}{q['ours_over_vllm']:>11.3f}{1 - q['ours_over_vllm']:>12.1%}"
              f"{q['embedded_over_vllm']:>15.3f}{q['ours_over_vllm_cpu']:>11.3f}"
              f"{1 - q['ours_over_vllm_cpu']:>12.1%}{q['embedded_over_vllm_cpu']:>15.3f}")
    worst = max(1 - q["ours_over_vllm"] for q in res["ratios"])
    print(f"\ngoal: proxy cost at most 10 % at every client count (tokens/s): {'met' if worst <= 0.10 else 'NOT met'} "
          f"(worst {worst:.1%})")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model-path", default="builtin:smollm2-135m", help="builtin: name or HF folder")
    p.add_argument("--clients", type=lambda v: tuple(int(x) for x in v.split(",")), default=(1, 16),
                   help="comma-separated concurrent client counts (default 1,16)")
    p.add_argument("--requests", type=int, default=6, help="requests per target per repeat at least "
                   "(and at least 2 per client)")
    p.add_argument("--max-tokens", type=int, default=64, help="completion budget per request")
    p.add_argument("--repeats", type=int, default=2, help="rounds over the three targets per client count")
    p.add_argument("--engine-args", default="--dtype float32", help="flags of the vLLM engine server")
    p.add_argument("--engine-python", default=None, help="vLLM's interpreter (default .venv-vllm/bin/python)")
    p.add_argument("--json", type=Path, default=None, help="also write the numbers here")
    args = p.parse_args(argv)
    if args.requests < 1 or args.max_tokens < 1 or args.repeats < 1 or not args.clients or min(args.clients) < 1:
        p.error("--requests, --max-tokens, --repeats and --clients must be positive")
    try:
        resolve_engine_python("vllm", args.engine_python)
    except ValueError as exc:
        p.error(str(exc))
    t0 = time.perf_counter()
    res = asyncio.run(run(args))
    res["ratios"] = ratios(res["rows"])
    res["benchmark_wall_s"] = time.perf_counter() - t0
    report(res)
    print(f"\nbenchmark wall time {res['benchmark_wall_s']:.0f} s")
    if args.json:
        args.json.write_text(json.dumps(res, indent=2) + "\n")
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
