"""Load benchmark: many concurrent multi-turn streaming sessions with weight updates meanwhile.

Run from the repository root::

    python benchmarks/load.py [--sessions 64] [--turns 3] [--updates 3] [--max-tokens 24]
                              [--model-path builtin:tiny-qwen3] [--weights-dir DIR]
                              [--torch-threads 1] [--json OUT]

Issue 16's load check. Starts the real server (``python -m openclaw_rl.server`` via
``tests.support.server.start_server``, capture on, default back-pressure limits 64 running / 512
queued, ``--weights-dir`` set) and opens ``--sessions`` conversations at once, each its own
``openai.AsyncOpenAI`` client (``stream=True``, ``max_retries=0`` so nothing is hidden by a
retry). A conversation is ``--turns`` user turns; each request carries the whole history including
the previous assistant reply as streamed back, so the server links that reply's next state (the
user's new message). Sessions are named with ``X-Session-Id``.

``--updates`` weight updates (``POST /admin/update_weights_from_disk``) go out while the load runs,
spaced by progress: update ``k`` when ``k / (updates + 2)`` of all requests have finished (not
``updates + 1``: a request keeps the weights it started with and the sessions move in step, so the
last turns have all started before the last fifth of the requests finish; with ``updates + 1`` the
last version served no recorded turn in a 64-session run). The
folders are real checkpoints (the model with small noise, saved by ``prepare_weights``) under
``--weights-dir`` (default: a temporary folder; pass one to reuse them across runs).

After the load the server is stopped and the SQLite store is read back. Checks (exit 1 if any
fails): 0 failed requests; ``sessions x turns`` main turns and ``sessions x (turns - 1)`` next
states recorded (the last turn of a session has none until the session ends); every update
answered 200; the served weight version ends at ``--updates``. Reported: p50/p95 request latency
and time to first token (first chunk with content, reasoning or a tool call), requests/s and
completion tokens/s over the whole load, and how many recorded turns each weight version served.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _reliability import (finish, percentile, prepare_weights, store_summary,  # noqa: E402
                          update_weights)

import httpx  # noqa: E402
from openai import AsyncOpenAI  # noqa: E402

from tests.support.server import running_server  # noqa: E402

API_KEY = "sk-bench"
TOPICS = ("tide pools", "bread baking", "binary search", "volcanoes", "chess openings",
          "bicycle repair", "prime numbers", "jazz harmony", "rain forests", "compilers")
FOLLOW_UPS = ("Tell me more about that.", "Can you give an example?", "Thanks! One more detail?")


async def stream_turn(client: AsyncOpenAI, messages: list[dict], session: str, max_tokens: int,
                      seed: int) -> dict:
    """One streamed request; returns latency, TTFT, tokens and the assistant message as received."""
    t0 = time.perf_counter()
    ttft, content, reasoning, usage = None, [], [], None
    stream = await client.chat.completions.create(
        model="policy", messages=messages, max_tokens=max_tokens, stream=True, seed=seed,
        stream_options={"include_usage": True}, extra_headers={"X-Session-Id": session})
    finish = None
    async for chunk in stream:
        if chunk.usage:
            usage = chunk.usage
        for choice in chunk.choices:
            d = choice.delta
            text, think = d.content or "", getattr(d, "reasoning_content", None) or ""
            if ttft is None and (text or think or d.tool_calls):
                ttft = time.perf_counter() - t0
            content.append(text)
            reasoning.append(think)
            finish = choice.finish_reason or finish
    total = time.perf_counter() - t0
    if finish is None or usage is None:
        raise RuntimeError(f"stream ended without a finish reason or usage (finish={finish})")
    message = {"role": "assistant", "content": "".join(content)}
    if any(reasoning):  # the server accepts it back (and may drop it); echo it as a client would
        message["reasoning_content"] = "".join(reasoning)
    return {"latency_s": total, "ttft_s": total if ttft is None else ttft,
            "completion_tokens": usage.completion_tokens, "message": message}


async def session(i: int, base_url: str, turns: int, max_tokens: int, results: list, failures: list,
                  done: asyncio.Queue) -> None:
    """One conversation of ``turns`` user turns on its own SDK client."""
    client = AsyncOpenAI(base_url=base_url, api_key=API_KEY, max_retries=0, timeout=1800)
    messages = [{"role": "user", "content": f"Session {i}: write a short note about {TOPICS[i % len(TOPICS)]}."}]
    try:
        for t in range(turns):
            if t:
                messages.append({"role": "user", "content": FOLLOW_UPS[(t - 1) % len(FOLLOW_UPS)]})
            try:
                r = await stream_turn(client, messages, f"load-{i}", max_tokens, seed=1000 * i + t)
            except Exception as exc:  # a failed request: counted, and the session stops
                failures.append(f"session {i} turn {t}: {type(exc).__name__}: {exc}")
                await done.put(1)
                return
            messages.append(r.pop("message"))
            results.append(r)
            await done.put(1)
    finally:
        await client.close()


async def updater(base_url: str, folders: list[Path], total: int, done: asyncio.Queue, updates: list) -> None:
    """Publish folder ``k`` when ``k / (len(folders) + 2)`` of the ``total`` requests finished."""
    finished = 0
    async with httpx.AsyncClient() as http:
        for k, folder in enumerate(folders, start=1):
            while finished < k * total / (len(folders) + 2):
                finished += await done.get()
            status, secs, text = await update_weights(http, base_url, API_KEY, folder, k)
            updates.append({"version": k, "status": status, "seconds": secs, "after_requests": finished,
                            "body": text[:200]})


async def run_load(args, base_url: str, folders: list[Path]) -> dict:
    """Run every session at once and the updates meanwhile; returns the raw measurements."""
    results, failures, updates, done = [], [], [], asyncio.Queue()
    total = args.sessions * args.turns
    t0 = time.perf_counter()
    upd = asyncio.create_task(updater(base_url, folders, total, done, updates))
    await asyncio.gather(*(session(i, base_url, args.turns, args.max_tokens, results, failures, done)
                           for i in range(args.sessions)))
    wall = time.perf_counter() - t0
    if not upd.done():  # requests failed, so a threshold was never reached: publish the rest now
        for _ in folders:
            await done.put(total)
    await upd
    return {"results": results, "failures": failures, "updates": updates, "wall_s": wall}


def summarise(args, raw: dict, store: dict, final_version: float) -> dict:
    """The numbers and checks of one run."""
    res = raw["results"]
    lat, ttft = [r["latency_s"] for r in res], [r["ttft_s"] for r in res]
    tokens = sum(r["completion_tokens"] for r in res)
    main_turns = store["turns"].get("main", 0)
    next_states = sum(store["next_states"].values())
    want_turns, want_next = args.sessions * args.turns, args.sessions * (args.turns - 1)
    checks = {
        "0 failed requests": not raw["failures"],
        f"{want_turns} main turns recorded (got {main_turns})": main_turns == want_turns,
        f"{want_next} next states recorded (got {next_states})": next_states == want_next,
        f"every weight update answered 200 ({len(raw['updates'])} sent)":
            len(raw["updates"]) == args.updates and all(u["status"] == 200 for u in raw["updates"]),
        f"served weight version ends at {args.updates} (got {final_version:g})": final_version == args.updates,
    }
    return {"model_path": args.model_path, "sessions": args.sessions, "turns": args.turns,
            "max_tokens": args.max_tokens, "torch_threads": args.torch_threads,
            "requests_ok": len(res), "requests_failed": len(raw["failures"]), "failures": raw["failures"][:20],
            "wall_s": raw["wall_s"], "requests_per_s": len(res) / raw["wall_s"],
            "completion_tokens": tokens, "tokens_per_s": tokens / raw["wall_s"],
            "latency_p50_s": percentile(lat, 0.5), "latency_p95_s": percentile(lat, 0.95),
            "ttft_p50_s": percentile(ttft, 0.5), "ttft_p95_s": percentile(ttft, 0.95),
            "updates": raw["updates"], "store": store, "checks": checks, "passed": all(checks.values())}


def report(s: dict) -> None:
    """Print the run's numbers."""
    print(f"\nload: {s['sessions']} concurrent sessions x {s['turns']} streamed turns, max_tokens "
          f"{s['max_tokens']}, {s['model_path']}, server torch threads {s['torch_threads']}")
    print(f"  requests ok {s['requests_ok']}, failed {s['requests_failed']}; wall {s['wall_s']:.1f} s")
    print(f"  latency p50 {s['latency_p50_s']:.2f} s, p95 {s['latency_p95_s']:.2f} s; time to first token "
          f"p50 {s['ttft_p50_s']:.2f} s, p95 {s['ttft_p95_s']:.2f} s")
    print(f"  throughput {s['requests_per_s']:.2f} requests/s, {s['tokens_per_s']:.1f} completion tokens/s")
    for u in s["updates"]:
        print(f"  weight update -> v{u['version']}: status {u['status']} in {u['seconds']:.2f} s, "
              f"after {u['after_requests']} requests")
    st = s["store"]
    print(f"  store: turns {st['turns']}, next states by role {st['next_states']}, sessions {st['sessions']}")
    print(f"  recorded turns per weight version: {dict(sorted(st['weight_versions'].items()))}")
    for f in s["failures"]:
        print(f"  failure: {f}")


def main(argv: list[str] | None = None) -> int:
    """Parse flags, run the benchmark, print and check; returns the exit status."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model-path", default="builtin:tiny-qwen3")
    p.add_argument("--sessions", type=int, default=64, help="concurrent conversations (default 64)")
    p.add_argument("--turns", type=int, default=3, help="user turns per conversation (default 3)")
    p.add_argument("--updates", type=int, default=3, help="weight updates during the load (default 3)")
    p.add_argument("--max-tokens", type=int, default=24, help="max_tokens per request (default 24)")
    p.add_argument("--weights-dir", type=Path, default=None,
                   help="where the update folders are saved / reused (default: a temporary folder)")
    p.add_argument("--torch-threads", type=int, default=1, help="the server's --torch-threads (default 1)")
    p.add_argument("--json", type=Path, default=None, help="also write the numbers here")
    args = p.parse_args(argv)
    if args.sessions < 1 or args.turns < 2 or args.updates < 0 or args.max_tokens < 1:
        p.error("need --sessions >= 1, --turns >= 2, --updates >= 0, --max-tokens >= 1")
    with tempfile.TemporaryDirectory(prefix="bench-load-") as tmp:
        weights_dir = args.weights_dir or Path(tmp) / "weights"
        folders = prepare_weights(args.model_path, weights_dir, args.updates)
        buffer = Path(tmp) / "buffer"
        with running_server(args.model_path, buffer, "--weights-dir", str(weights_dir),
                            "--torch-threads", str(args.torch_threads), api_key=API_KEY) as handle:
            raw = asyncio.run(run_load(args, handle.base_url, folders))
            final_version = httpx.get(handle.base_url.removesuffix("/v1") + "/healthz", timeout=30).json()[
                "weight_version"]
        s = summarise(args, raw, store_summary(buffer), float(final_version))
    report(s)
    return finish(s, args.json)


if __name__ == "__main__":
    sys.exit(main())
