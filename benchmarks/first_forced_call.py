"""First forced tool call benchmark: does the first grammar of a server stall everyone else?

Run from the repository root::

    python benchmarks/first_forced_call.py [--model-path builtin:tiny-qwen3] [--repeats 5]

A forced tool call (``tool_choice: "required"``) needs llguidance's tables for the vocabulary;
the first one of a process costs seconds of CPU, most of it holding the GIL. The server builds
them on a thread at start (``--grammar-warmup``, the default). For each setting the benchmark
starts the real server, waits 15 s (the warm-up's time), measures a small chat request
(4 tokens) alone, then sends the server's first forced call and, 50 ms later, the small
request again, and prints the small request's latency and the ratio with / alone, with
``--no-grammar-warmup`` (the tables built by that first call, off the event loop and the decode
loop) and with the default, side by side.
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
FORCED = {"model": "m", "messages": [{"role": "user", "content": "write"}], "max_tokens": 8,
          "tool_choice": "required",
          "tools": [{"type": "function", "function": {
              "name": "write", "parameters": {"type": "object", "properties": {"text": {"type": "string"}},
                                              "required": ["text"]}}}]}


async def _post(client: httpx.AsyncClient, url: str, body: dict) -> float:
    t0 = time.perf_counter()
    r = await client.post(url, json=body)
    r.raise_for_status()
    return time.perf_counter() - t0


async def _one_server(model_path: str, flag: str, repeats: int) -> tuple[float, float, float]:
    with tempfile.TemporaryDirectory() as tmp, running_server(model_path, Path(tmp) / "buf", flag) as server:
        url = f"{server.base_url}/chat/completions"
        async with httpx.AsyncClient(timeout=600, headers={"Authorization": f"Bearer {server.api_key}"}) as client:
            await asyncio.sleep(15)
            await _post(client, url, SMALL)
            alone = statistics.median([await _post(client, url, SMALL) for _ in range(repeats)])
            forced = asyncio.create_task(_post(client, url, FORCED))
            await asyncio.sleep(0.05)
            small = await _post(client, url, SMALL)
            return alone, small, await forced


async def main_async(args) -> None:
    for flag in ("--no-grammar-warmup", "--grammar-warmup"):
        alone, small, forced = await _one_server(args.model_path, flag, args.repeats)
        print(f"{flag:20s} small request alone p50 {alone * 1000:.0f} ms; during the first forced call "
              f"{small * 1000:.0f} ms (ratio {small / alone:.2f}); the forced call took {forced * 1000:.0f} ms",
              flush=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model-path", default="builtin:tiny-qwen3")
    p.add_argument("--repeats", type=int, default=5)
    asyncio.run(main_async(p.parse_args()))


if __name__ == "__main__":
    main()
