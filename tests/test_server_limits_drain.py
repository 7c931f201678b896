"""A refused body is drained before the 413, so a client still uploading reads the 413.

Without the drain the server answered and closed while the client was still sending; the unread
bytes made the kernel reset the connection and the asynchronous ``httpx`` client saw ``ReadError``
instead of the 413 (found by ``benchmarks/soak.py``'s 33 MiB bad request). Real server, real HTTP.
With the drain disabled the Content-Length test fails (a ``ReadError`` among the answers); the
chunked test guards the other drain path (it must end, and not hang waiting for a body that has
already ended), though at this size the reset did not show there without the drain.
"""

from __future__ import annotations

import asyncio

import httpx
import pytest

from openclaw_rl.server.limits import DRAIN_FACTOR
from tests.support.server import running_server

LIMIT = 256 * 1024
BIG = 3 * LIMIT  # over the limit, under DRAIN_FACTOR x the limit: drained, then answered
HEADERS = {"Authorization": "Bearer sk-test", "Content-Type": "application/json"}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    buf = tmp_path_factory.mktemp("drain") / "rl_buffer"
    with running_server("builtin:tiny-qwen3", buf, "--default-max-tokens", "2", "--max-request-bytes",
                        str(LIMIT)) as handle:
        yield handle


async def _post_many(url: str, make_body, n: int = 4) -> list:
    async with httpx.AsyncClient(timeout=60, headers=HEADERS) as client:
        out = []
        for _ in range(n):
            try:
                r = await client.post(url, content=make_body())
                out.append((r.status_code, r.json()["error"]["code"]))
            except httpx.HTTPError as exc:
                out.append(type(exc).__name__)
        return out


def test_content_length_body_over_the_limit_reads_413(server):
    assert BIG <= DRAIN_FACTOR * LIMIT
    url = f"{server.base_url}/chat/completions"
    out = asyncio.run(_post_many(url, lambda: b"x" * BIG))
    assert out == [(413, "request_too_large")] * 4


def test_chunked_body_over_the_limit_reads_413(server):
    url = f"{server.base_url}/chat/completions"

    async def chunks():  # no Content-Length: counted while it streams in, the rest drained
        for _ in range(BIG // 65536):
            yield b"y" * 65536

    out = asyncio.run(_post_many(url, chunks))
    assert out == [(413, "request_too_large")] * 4
    r = httpx.post(url, headers=HEADERS, json={"messages": [{"role": "user", "content": "hi"}]}, timeout=60)
    assert r.status_code == 200  # still serving
