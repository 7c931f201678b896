"""Serving benchmark: what the intercept server costs on top of the bare engine.

Run from the repository root::

    python benchmarks/serving.py [--model-path builtin:tiny-qwen3] [--requests 20]
                                 [--max-tokens 32] [--torch-threads N] [--json OUT]

One run measures, against the real server (``python -m openclaw_rl.server`` started by
``tests.support.server.start_server`` with capture on, recording into a temporary folder):

1. **Server vs engine latency.** The same non-streaming chat requests (same prompts, same
   ``max_tokens``, temperature 1 with a fixed seed per request, so both paths sample the same ids) sent (a) over HTTP with the ``openai`` SDK and (b) straight
   to an in-process ``TransformersEngine`` (chat template + tokenize + ``engine.generate`` +
   decode). The two are interleaved request by request so both see the same background load.
   Every pair must report the same prompt and completion token counts (a random model rarely
   samples EOS, so ``max_tokens`` fixes the work; greedy decoding of tiny-qwen3 gives only
   newlines, which the output parser holds back, so it would hide the streaming TTFT). ``overhead`` is
   server p50 / engine p50: everything the server adds (HTTP, JSON, validation, per-token
   detokenizing and parsing, capture to SQLite). Goal: <= 1.05.
2. **Streaming.** Time to first content chunk (TTFT) vs total time of SSE replies, p50.
3. **Throughput, batched vs today's engine.** 1, 4, 16 and 64 concurrent clients (asyncio),
   streaming, at least ``--rounds`` (2) requests per client, against two servers running side by side: this tree's
   (continuous batching, default ``--max-batch-size``) and *today's engine*, the same server at
   ``--baseline-ref`` (default: the commit before batching, whose engine interleaved requests token
   by token, one forward pass per request per token), exported with ``git archive`` into a
   temporary folder and started from there. Levels alternate between the two so both see the same
   background load. Aggregate completion tokens/s, p95 time to first content chunk, and the
   batched / today ratios; the goal: >= 3x tokens/s at 16 clients with p95 TTFT not worse.

``--baseline-ref none`` skips today's engine (then 3. has one server).

Both server and benchmark client share the machine's CPU cores, and other jobs may be running:
numbers are noisy, compare ratios taken in the same run rather than absolute values across runs.
``--torch-threads N`` sets torch's intra-op threads in this process and (``--torch-threads``) in
the servers (default: torch's own, one per core); on a loaded CPU, 1 thread is much faster for
these small models (two threads wait on each other when the other is descheduled).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # `python benchmarks/serving.py` finds openclaw_rl and tests.support

from openai import AsyncOpenAI  # noqa: E402

from openclaw_rl.engine import SamplingParams, create_engine  # noqa: E402
from openclaw_rl.models import load_tokenizer  # noqa: E402
from tests.support.server import start_server, stop_server  # noqa: E402

TOPICS = ("tide pools", "bread baking", "binary search", "volcanoes", "chess openings",
          "bicycle repair", "prime numbers", "jazz harmony", "rain forests", "compilers")
CONCURRENCY_LEVELS = (1, 4, 16, 64)
#: today's engine: the last commit before continuous batching (token-by-token interleaving)
BASELINE_REF = "d0edb42"
TEMPERATURE = 1.0  # with a fixed seed per request: reproducible, and realistic varied text


def prompt_text(i: int) -> str:
    """Distinct user message of similar length per request index (distinct sessions)."""
    return f"Request {i}: write a short note about {TOPICS[i % len(TOPICS)]}."


def percentile(values: list[float], q: float) -> float:
    """Linear-interpolated percentile, ``q`` in [0, 1]."""
    xs = sorted(values)
    k = (len(xs) - 1) * q
    lo, hi = math.floor(k), math.ceil(k)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


class DirectEngine:
    """The engine in this process, driven the way the server drives it (same prompt ids)."""

    def __init__(self, model_path: str):
        self.engine = create_engine("transformers", model_path)
        self.tokenizer = load_tokenizer(model_path)

    async def complete(self, i: int, max_tokens: int) -> tuple[float, int, int]:
        """Returns ``(latency_ms, prompt_tokens, completion_tokens)``."""
        t0 = time.perf_counter()
        text = self.tokenizer.apply_chat_template([{"role": "user", "content": prompt_text(i)}],
                                                  add_generation_prompt=True, tokenize=False)
        ids = self.tokenizer(text, add_special_tokens=False)["input_ids"]
        out = await self.engine.generate(ids, SamplingParams(max_new_tokens=max_tokens,
                                                             temperature=TEMPERATURE, seed=1000 + i))
        self.tokenizer.decode(out.token_ids, skip_special_tokens=True)
        return 1000 * (time.perf_counter() - t0), len(ids), len(out.token_ids)


async def server_complete(client: AsyncOpenAI, model: str, i: int,
                          max_tokens: int) -> tuple[float, int, int]:
    """One non-streaming request; returns ``(latency_ms, prompt_tokens, completion_tokens)``."""
    t0 = time.perf_counter()
    r = await client.chat.completions.create(
        model=model, messages=[{"role": "user", "content": prompt_text(i)}],
        max_tokens=max_tokens, temperature=TEMPERATURE, seed=1000 + i)
    return 1000 * (time.perf_counter() - t0), r.usage.prompt_tokens, r.usage.completion_tokens


async def server_stream(client: AsyncOpenAI, model: str, i: int,
                        max_tokens: int) -> tuple[float, float, int]:
    """One SSE request; returns ``(ttft_ms, total_ms, completion_tokens)``."""
    t0 = time.perf_counter()
    ttft_ms, completion_tokens = None, 0
    stream = await client.chat.completions.create(
        model=model, messages=[{"role": "user", "content": prompt_text(i)}], max_tokens=max_tokens,
        temperature=TEMPERATURE, seed=1000 + i, stream=True, stream_options={"include_usage": True})
    async for chunk in stream:
        if chunk.usage:
            completion_tokens = chunk.usage.completion_tokens
        if ttft_ms is None and chunk.choices:
            delta = chunk.choices[0].delta
            if delta.content or delta.tool_calls or getattr(delta, "reasoning_content", None):
                ttft_ms = 1000 * (time.perf_counter() - t0)
    total_ms = 1000 * (time.perf_counter() - t0)
    return (total_ms if ttft_ms is None else ttft_ms), total_ms, completion_tokens


async def bench_latency(client, model, direct: DirectEngine, n: int, max_tokens: int) -> dict:
    server_ms, engine_ms, engine_tokens, mismatches = [], [], [], 0
    for i in range(n):  # interleaved so both paths see the same background load
        s_ms, s_prompt, s_completion = await server_complete(client, model, i, max_tokens)
        e_ms, e_prompt, e_completion = await direct.complete(i, max_tokens)
        server_ms.append(s_ms)
        engine_ms.append(e_ms)
        engine_tokens.append(e_completion)
        mismatches += (s_prompt, s_completion) != (e_prompt, e_completion)
    return {"requests": n, "token_count_mismatches": mismatches,
            "completion_tokens_min": min(engine_tokens), "completion_tokens_max": max(engine_tokens),
            "server_p50_ms": percentile(server_ms, 0.5), "server_p95_ms": percentile(server_ms, 0.95),
            "engine_p50_ms": percentile(engine_ms, 0.5), "engine_p95_ms": percentile(engine_ms, 0.95),
            "engine_tokens_per_s": 1000 * sum(engine_tokens) / sum(engine_ms)}


async def bench_stream(client, model, n: int, max_tokens: int) -> dict:
    results = [await server_stream(client, model, 100 + i, max_tokens) for i in range(n)]
    return {"requests": n, "ttft_p50_ms": percentile([r[0] for r in results], 0.5),
            "total_p50_ms": percentile([r[1] for r in results], 0.5),
            "completion_tokens_p50": percentile([r[2] for r in results], 0.5)}


async def bench_throughput(client, model, clients: int, n: int, max_tokens: int) -> dict:
    """``clients`` concurrent streaming clients share ``n`` requests; aggregate tokens/s, TTFT."""
    pending = iter(range(1000 + 100 * clients, 1000 + 100 * clients + n))
    ttft_ms, latency_ms, tokens = [], [], []

    async def worker():
        for i in pending:  # shared iterator: each index is taken by exactly one worker
            first, total, completion = await server_stream(client, model, i, max_tokens)
            ttft_ms.append(first)
            latency_ms.append(total)
            tokens.append(completion)

    t0 = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(clients)))
    wall_s = time.perf_counter() - t0
    return {"clients": clients, "requests": n, "wall_s": wall_s, "requests_per_s": n / wall_s,
            "tokens_per_s": sum(tokens) / wall_s, "ttft_p50_ms": percentile(ttft_ms, 0.5),
            "ttft_p95_ms": percentile(ttft_ms, 0.95), "latency_p50_ms": percentile(latency_ms, 0.5)}


def export_tree(ref: str, dest: Path) -> Path:
    """``git archive`` of ``ref`` (this repository) unpacked into ``dest``; returns ``dest``.

    Raises:
        SystemExit: ``ref`` is not a commit of this repository (one-line message).
    """
    try:
        blob = subprocess.run(["git", "-C", str(REPO), "archive", "--format=tar", ref], check=True,
                              capture_output=True).stdout
    except (OSError, subprocess.CalledProcessError) as exc:
        err = getattr(exc, "stderr", b"") or b""
        raise SystemExit(f"serving.py: error: cannot export --baseline-ref {ref!r}: "
                         f"{err.decode(errors='replace').strip() or exc}") from None
    import io
    with tarfile.open(fileobj=io.BytesIO(blob)) as tar:
        tar.extractall(dest, filter="data")
    return dest


async def warm(client, model, max_tokens: int) -> None:
    """First forward passes, allocator, HTTP connection."""
    for i in range(3):
        await server_complete(client, model, 900 + i, max_tokens)
    await server_stream(client, model, 990, max_tokens)


async def run(args) -> dict:
    flags = ("--torch-threads", str(args.torch_threads)) if args.torch_threads else ()
    if args.torch_threads:  # same intra-op thread count in this process and the servers
        import torch
        torch.set_num_threads(args.torch_threads)
    direct = DirectEngine(args.model_path)
    with tempfile.TemporaryDirectory(prefix="bench-serving-") as tmp:
        tmp = Path(tmp)
        handle = base = None
        try:
            handle = start_server(args.model_path, tmp / "buffer", *flags, api_key="sk-bench")
            client = AsyncOpenAI(base_url=handle.base_url, api_key="sk-bench", max_retries=0, timeout=600)
            model = (await client.models.list()).data[0].id
            await warm(client, model, args.max_tokens)
            for i in range(3):
                await direct.complete(900 + i, args.max_tokens)
            latency = await bench_latency(client, model, direct, args.requests, args.max_tokens)
            await direct.engine.aclose()  # idle from here on; free its worker thread
            stream = await bench_stream(client, model, max(5, args.requests // 2), args.max_tokens)
            base_client = None
            if args.baseline_ref != "none":
                tree = export_tree(args.baseline_ref, tmp / "baseline")
                base = start_server(args.model_path, tmp / "buffer-baseline", *flags, api_key="sk-bench",
                                    cwd=tree)
                base_client = AsyncOpenAI(base_url=base.base_url, api_key="sk-bench", max_retries=0, timeout=600)
                await warm(base_client, model, args.max_tokens)
            throughput, baseline = [], []
            for c in args.clients:  # alternate, so both servers see the same background load
                n = max(args.requests, args.rounds * c)
                if base_client is not None:
                    baseline.append(await bench_throughput(base_client, model, c, n, args.max_tokens))
                throughput.append(await bench_throughput(client, model, c, n, args.max_tokens))
            await client.close()
            if base_client is not None:
                await base_client.close()
        finally:
            for h in (handle, base):
                if h is not None:
                    stop_server(h)
    return {"model_path": args.model_path, "max_tokens": args.max_tokens,
            "torch_threads": args.torch_threads or "default", "baseline_ref": args.baseline_ref,
            "latency": latency, "stream": stream, "throughput": throughput, "baseline": baseline,
            "load_average": os.getloadavg()}


def report(res: dict) -> None:
    lat, st, tp = res["latency"], res["stream"], res["throughput"]
    overhead = lat["server_p50_ms"] / lat["engine_p50_ms"]
    print(f"\nmodel {res['model_path']}, max_tokens {res['max_tokens']}, seeded sampling, torch threads "
          f"{res['torch_threads']}; "
          f"noisy shared CPU, compare ratios within this run\n")
    print(f"1. non-streaming latency, {lat['requests']} interleaved request pairs "
          f"({lat['completion_tokens_min']}-{lat['completion_tokens_max']} completion tokens each)")
    print(f"   {'path':<22}{'p50_ms':>10}{'p95_ms':>10}")
    print(f"   {'server (HTTP)':<22}{lat['server_p50_ms']:>10.1f}{lat['server_p95_ms']:>10.1f}")
    print(f"   {'engine (in-process)':<22}{lat['engine_p50_ms']:>10.1f}{lat['engine_p95_ms']:>10.1f}")
    print(f"   overhead server/engine p50: {overhead:.3f}  (goal <= 1.05: "
          f"{'met' if overhead <= 1.05 else 'NOT met'}); p95 ratio "
          f"{lat['server_p95_ms'] / lat['engine_p95_ms']:.3f}")
    if lat["token_count_mismatches"]:
        print(f"   WARNING: {lat['token_count_mismatches']} pairs differ in token counts (unfair)")
    print(f"\n2. streaming (SSE), {st['requests']} requests, "
          f"{st['completion_tokens_p50']:.0f} completion tokens p50")
    print(f"   ttft_p50_ms {st['ttft_p50_ms']:.1f}   total_p50_ms {st['total_p50_ms']:.1f}   "
          f"ttft/total {st['ttft_p50_ms'] / st['total_p50_ms']:.3f}")
    bl = res["baseline"]
    print(f"\n3. throughput, streaming: batched (this tree) vs today's engine ({res['baseline_ref']}), "
          f"load average at the end {res['load_average'][0]:.1f}")
    print(f"   {'clients':>7}{'requests':>9}{'engine':>9}{'tokens_per_s':>14}{'ttft_p50_ms':>13}"
          f"{'ttft_p95_ms':>13}{'latency_p50':>13}{'x_today':>9}")
    for k, row in enumerate(tp):
        pairs = [("today", bl[k])] if bl else []
        for name, r in pairs + [("batched", row)]:
            ratio = f"{row['tokens_per_s'] / bl[k]['tokens_per_s']:>9.2f}" if bl and name == "batched" else ""
            print(f"   {r['clients']:>7}{r['requests']:>9}{name:>9}{r['tokens_per_s']:>14.1f}"
                  f"{r['ttft_p50_ms']:>13.1f}{r['ttft_p95_ms']:>13.1f}{r['latency_p50_ms']:>13.1f}{ratio}")
    print(f"   engine direct, sequential (from 1.): {lat['engine_tokens_per_s']:.1f} tokens_per_s; "
          f"batched server 1 client / engine: {tp[0]['tokens_per_s'] / lat['engine_tokens_per_s']:.3f}")
    if bl:
        at16 = next((k for k, r in enumerate(tp) if r["clients"] == 16), None)
        if at16 is not None:
            x, t_b, t_t = (tp[at16]["tokens_per_s"] / bl[at16]["tokens_per_s"], tp[at16]["ttft_p95_ms"],
                           bl[at16]["ttft_p95_ms"])
            print(f"   goal at 16 clients: >= 3x tokens/s ({x:.2f}x: {'met' if x >= 3 else 'NOT met'}), p95 TTFT "
                  f"not worse ({t_b:.0f} vs {t_t:.0f} ms: {'met' if t_b <= t_t else 'NOT met'})")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model-path", default="builtin:tiny-qwen3",
                   help="builtin:tiny-qwen3 (default), builtin:smollm2-135m or a HF folder")
    p.add_argument("--requests", type=int, default=20, help="request pairs in the latency test; "
                   "also requests per concurrency level (at least 2 x clients)")
    p.add_argument("--max-tokens", type=int, default=32, help="completion tokens per request")
    p.add_argument("--torch-threads", type=int, default=0, help="torch intra-op threads for "
                   "both the server (OMP_NUM_THREADS) and the in-process engine; default: torch's")
    p.add_argument("--clients", type=lambda v: tuple(int(x) for x in v.split(",")), default=CONCURRENCY_LEVELS,
                   help="comma-separated concurrency levels of 3. (default 1,4,16,64)")
    p.add_argument("--rounds", type=int, default=2, help="3.: requests per client at least (default 2)")
    p.add_argument("--baseline-ref", default=BASELINE_REF,
                   help=f"git commit of today's engine for 3. (default {BASELINE_REF}, the commit before "
                        "batching); 'none' skips it")
    p.add_argument("--json", type=Path, default=None, help="also write the numbers here")
    args = p.parse_args(argv)
    if args.requests < 2 or args.max_tokens < 1 or args.rounds < 1 or not args.clients or min(args.clients) < 1:
        p.error("--requests must be >= 2, --max-tokens and --rounds >= 1, --clients positive integers")
    t0 = time.perf_counter()
    res = asyncio.run(run(args))
    res["benchmark_wall_s"] = time.perf_counter() - t0
    report(res)
    print(f"\nbenchmark wall time {res['benchmark_wall_s']:.0f} s")
    if args.json:
        args.json.write_text(json.dumps(res, indent=2) + "\n")
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
