"""Burst benchmark: many more requests at once than the server admits; back-pressure answers them.

Run from the repository root::

    python benchmarks/burst.py [--max-running-requests 4] [--max-queued-requests 8] [--factor 4]
                               [--max-tokens 48] [--model-path builtin:tiny-qwen3]
                               [--torch-threads 1] [--json OUT]

Issue 16's burst check. Starts the real server with small limits (``--max-running-requests``,
``--max-queued-requests``) and fires ``factor x (running + queued)`` chat requests at the same
moment, each from the ``openai`` SDK (``AsyncOpenAI``, ``max_retries=0`` so a 429 is seen, not
retried). Each request is a forced tool call whose string argument must be at least 3000
characters long (constrained decoding masks the end of the string), so it cannot end before
``--max-tokens`` tokens whatever the random model samples: the admitted requests really overlap
the rest of the burst.

Checks (exit 1 if any fails): every request either completes (200, a reply of ``--max-tokens``
tokens) or gets 429 ``server_busy`` with a ``Retry-After`` header; no other error; at least the
excess (``total - running - queued``) is refused; ``GET /metrics`` afterwards agrees:
``openclaw_requests_admitted_total`` equals the completed requests, ``openclaw_requests_rejected_total``
the 429s, running and queued are back to 0. Reported: counts, how long a refusal took (p50/p95),
how long the accepted ones took.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _reliability import finish, metrics, percentile  # noqa: E402

import openai  # noqa: E402

from tests.support.metrics import write_tool  # noqa: E402
from tests.support.server import running_server  # noqa: E402

API_KEY = "sk-bench"
TOOL = write_tool(3000)


async def one(client: openai.AsyncOpenAI, i: int, max_tokens: int, start: asyncio.Event) -> dict:
    """One request of the burst; returns its outcome (``ok``, ``busy`` or ``error``) and timing."""
    await start.wait()
    t0 = time.perf_counter()
    try:
        r = await client.chat.completions.create(
            model="policy", messages=[{"role": "user", "content": f"Burst request {i}: write it down."}],
            max_tokens=max_tokens, tools=[TOOL], tool_choice={"type": "function", "function": {"name": "write"}})
        return {"outcome": "ok", "seconds": time.perf_counter() - t0,
                "completion_tokens": r.usage.completion_tokens, "finish_reason": r.choices[0].finish_reason}
    except openai.RateLimitError as exc:
        retry_after = exc.response.headers.get("retry-after")
        good = exc.code == "server_busy" and retry_after is not None and retry_after.isdigit()
        return {"outcome": "busy" if good else "error", "seconds": time.perf_counter() - t0,
                "retry_after": retry_after, "code": exc.code}
    except Exception as exc:
        return {"outcome": "error", "seconds": time.perf_counter() - t0, "error": f"{type(exc).__name__}: {exc}"}


async def burst(base_url: str, total: int, max_tokens: int) -> tuple[list[dict], float]:
    """Fire ``total`` requests at once (each on its own client); returns outcomes and wall time."""
    clients = [openai.AsyncOpenAI(base_url=base_url, api_key=API_KEY, max_retries=0, timeout=1800)
               for _ in range(total)]
    start = asyncio.Event()
    tasks = [asyncio.create_task(one(c, i, max_tokens, start)) for i, c in enumerate(clients)]
    await asyncio.sleep(0.2)  # every task is waiting on the event: release them together
    t0 = time.perf_counter()
    start.set()
    out = await asyncio.gather(*tasks)
    wall = time.perf_counter() - t0
    for c in clients:
        await c.close()
    return out, wall


def main(argv: list[str] | None = None) -> int:
    """Parse flags, run the burst, print and check; returns the exit status."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model-path", default="builtin:tiny-qwen3")
    p.add_argument("--max-running-requests", type=int, default=4)
    p.add_argument("--max-queued-requests", type=int, default=8)
    p.add_argument("--factor", type=int, default=4, help="burst size = factor x (running + queued) (default 4)")
    p.add_argument("--max-tokens", type=int, default=48, help="tokens each admitted request generates")
    p.add_argument("--torch-threads", type=int, default=1, help="the server's --torch-threads (default 1)")
    p.add_argument("--json", type=Path, default=None, help="also write the numbers here")
    args = p.parse_args(argv)
    limit = args.max_running_requests + args.max_queued_requests
    total = args.factor * limit
    if args.max_running_requests < 1 or args.max_queued_requests < 0 or args.factor < 2:
        p.error("need --max-running-requests >= 1, --max-queued-requests >= 0, --factor >= 2")
    with tempfile.TemporaryDirectory(prefix="bench-burst-") as tmp, running_server(
            args.model_path, Path(tmp) / "buffer", "--max-running-requests", str(args.max_running_requests),
            "--max-queued-requests", str(args.max_queued_requests), "--torch-threads", str(args.torch_threads),
            api_key=API_KEY) as server:
        out, wall = asyncio.run(burst(server.base_url, total, args.max_tokens))
        m = metrics(server.base_url)
    ok = [o for o in out if o["outcome"] == "ok"]
    busy = [o for o in out if o["outcome"] == "busy"]
    errors = [o for o in out if o["outcome"] == "error"]
    admitted, rejected = m["openclaw_requests_admitted_total"], m["openclaw_requests_rejected_total"]
    checks = {
        f"0 errors other than 429 server_busy with Retry-After (got {len(errors)})": not errors,
        f"every accepted request completed with {args.max_tokens} tokens":
            all(o["completion_tokens"] == args.max_tokens for o in ok),
        f"the excess ({total - limit}) got 429 (got {len(busy)})": len(busy) >= total - limit,
        f"metrics admitted_total {admitted:g} == completed {len(ok)}": admitted == len(ok),
        f"metrics rejected_total {rejected:g} == 429s {len(busy)}": rejected == len(busy),
        "metrics running and queued back to 0":
            m["openclaw_requests_running"] == 0 and m["openclaw_requests_queued"] == 0,
    }
    res = {"model_path": args.model_path, "max_running_requests": args.max_running_requests,
           "max_queued_requests": args.max_queued_requests, "burst": total, "max_tokens": args.max_tokens,
           "torch_threads": args.torch_threads, "completed": len(ok), "rejected_429": len(busy),
           "errors": errors[:20], "wall_s": wall,
           "retry_after_values": sorted({o["retry_after"] for o in busy}),
           "rejection_p50_s": percentile([o["seconds"] for o in busy], 0.5),
           "rejection_p95_s": percentile([o["seconds"] for o in busy], 0.95),
           "completed_p50_s": percentile([o["seconds"] for o in ok], 0.5),
           "completed_max_s": max((o["seconds"] for o in ok), default=None),
           "metrics": {k: v for k, v in m.items() if k.startswith("openclaw_")},
           "checks": checks, "passed": all(checks.values())}
    print(f"\nburst: {total} requests at once against --max-running-requests {args.max_running_requests} "
          f"--max-queued-requests {args.max_queued_requests}, {args.max_tokens} forced tokens each, "
          f"server torch threads {args.torch_threads}")
    print(f"  completed {len(ok)}, 429 server_busy {len(busy)} (Retry-After {res['retry_after_values']}), "
          f"other errors {len(errors)}; wall {wall:.1f} s")
    if busy:
        print(f"  429 answered in p50 {1000 * res['rejection_p50_s']:.0f} ms, p95 {1000 * res['rejection_p95_s']:.0f} ms")
    if ok:
        print(f"  accepted requests took p50 {res['completed_p50_s']:.1f} s, max {res['completed_max_s']:.1f} s")
    print(f"  /metrics: admitted_total {admitted:g}, rejected_total {rejected:g}, "
          f"running {m['openclaw_requests_running']:g}, queued {m['openclaw_requests_queued']:g}")
    for e in errors[:5]:
        print(f"  error: {e}")
    return finish(res, args.json)


if __name__ == "__main__":
    sys.exit(main())
