"""Oversized requests benchmark: does a huge request slow everyone else down?

Run from the repository root::

    python benchmarks/oversized_requests.py [--model-path builtin:tiny-qwen3] [--mb 20] [--repeats 5]

Starts the real server (capture on, default limits) and measures, in one process, the latency of
a small chat request (4 tokens) p50 over ``--repeats``: alone (the baseline), and while a request
with one ``--mb`` MB user message is in flight (sent first, the small one 50 ms later). Also
reports how long the big request took to be refused and with what status: 413 above
``--max-request-bytes`` (32 MiB by default), else 400 ``context_length_exceeded`` from the cheap
character bound before any tokenizing. Before these limits the issue measured a 20 MB message
tokenized in full for 34 s, the small request meanwhile taking 34.0 s; ratio = with / alone.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.support.server import running_server  # noqa: E402

SMALL = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 4}


async def _small(client: httpx.AsyncClient, url: str) -> float:
    t0 = time.perf_counter()
    r = await client.post(url, json=SMALL)
    r.raise_for_status()
    return time.perf_counter() - t0


async def _with_big(client: httpx.AsyncClient, url: str, body: bytes) -> tuple[float, float, int]:
    async def big():
        t0 = time.perf_counter()
        r = await client.post(url, content=body, headers={"Content-Type": "application/json"})
        return time.perf_counter() - t0, r.status_code

    task = asyncio.create_task(big())
    await asyncio.sleep(0.05)
    small = await _small(client, url)
    big_s, status = await task
    return small, big_s, status


async def main_async(args) -> None:
    with tempfile.TemporaryDirectory() as tmp, running_server(args.model_path, Path(tmp) / "buf",
                                                              "--enable-rl-intercept") as server:
        url = f"{server.base_url}/chat/completions"
        headers = {"Authorization": f"Bearer {server.api_key}"}
        body = b'{"model": "m", "messages": [{"role": "user", "content": "' + b"x" * int(args.mb * 1e6) + b'"}]}'
        async with httpx.AsyncClient(timeout=600, headers=headers) as client:
            await _small(client, url)  # warm-up
            alone = [await _small(client, url) for _ in range(args.repeats)]
            runs = [await _with_big(client, url, body) for _ in range(args.repeats)]
    a, w = statistics.median(alone), statistics.median(r[0] for r in runs)
    print(f"small request alone p50 {a * 1000:.0f} ms; with a {args.mb:g} MB request in flight p50 {w * 1000:.0f} ms; "
          f"ratio {w / a:.2f}")
    print(f"the {args.mb:g} MB request: status {runs[0][2]}, answered in p50 "
          f"{statistics.median(r[1] for r in runs) * 1000:.0f} ms")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model-path", default="builtin:tiny-qwen3")
    p.add_argument("--mb", type=float, default=20.0, help="size of the big message in MB (default 20)")
    p.add_argument("--repeats", type=int, default=5)
    asyncio.run(main_async(p.parse_args()))


if __name__ == "__main__":
    main()
