"""HTTP client cost per call: a client (and TLS context) per call vs the process's shared TLS context.

Run from the repository root::

    python benchmarks/http_clients.py [--calls 50] [--json OUT]

A local HTTP server (the standard library's, on 127.0.0.1, answering ``GET /healthz`` with a short
JSON body) is called ``--calls`` times in each of these ways, alternating, and the CPU seconds of this
process per call are printed (medians of 3 rounds), with ratios against the first of each pair:

* ``httpx.get(url)`` vs ``httpx.get(url, verify=tls_context())`` (the health polls, publishes);
* a new ``httpx.AsyncClient`` per request, without and with ``verify=tls_context()`` (the default
  generate, an agent turn);
* ``openai.OpenAI(...)`` built per call, without and with
  ``http_client=openai.DefaultHttpxClient(verify=tls_context())``, then ``with_raw_response`` GET.

The URL is plain ``http://``: the TLS context is never used, only built (:mod:`openclaw_rl.tls`).
Numbers depend on the machine and its load; compare the ratios of one run.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import statistics
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import openai

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from openclaw_rl.tls import tls_context  # noqa: E402


class _Health(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self):  # noqa: N802 (the standard library's name)
        body = b'{"status": "ok", "object": "list", "data": []}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _per_call(fn, calls: int) -> float:
    """CPU milliseconds per call of ``fn`` (this process, all its threads)."""
    t0 = _cpu()
    for _ in range(calls):
        fn()
    return (_cpu() - t0) / calls * 1000


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python benchmarks/http_clients.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--calls", type=int, default=50)
    p.add_argument("--json", type=Path, default=None, help="also write the numbers here")
    args = p.parse_args(argv)
    if args.calls < 1:
        p.error("--calls must be at least 1")
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Health)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}"

    async def async_client(**kw):
        async with httpx.AsyncClient(timeout=10, **kw) as client:
            (await client.get(url + "/healthz")).raise_for_status()

    def sdk(**kw):
        client = openai.OpenAI(base_url=url, api_key="none", max_retries=0, **kw)
        client.models.with_raw_response.list()
        client.close()

    ways = {
        "httpx.get, a context per call": lambda: httpx.get(url + "/healthz", timeout=10).raise_for_status(),
        "httpx.get, shared context": lambda: httpx.get(url + "/healthz", timeout=10,
                                                       verify=tls_context()).raise_for_status(),
        "AsyncClient per request": lambda: asyncio.run(async_client()),
        "AsyncClient per request, shared": lambda: asyncio.run(async_client(verify=tls_context())),
        "openai.OpenAI per call": lambda: sdk(),
        "openai.OpenAI per call, shared": lambda: sdk(http_client=openai.DefaultHttpxClient(verify=tls_context())),
    }
    for fn in ways.values():  # warm: imports, the shared context, the server's threads
        fn()
    rounds: dict[str, list[float]] = {name: [] for name in ways}
    for _ in range(3):
        for name, fn in ways.items():
            rounds[name].append(_per_call(fn, args.calls))
    server.shutdown()
    med = {name: statistics.median(v) for name, v in rounds.items()}
    names = list(ways)
    print(f"CPU ms per call, median of 3 rounds of {args.calls} (plain http:// on 127.0.0.1):")
    print(f"{'':34}{'ms':>8}{'ratio':>8}")
    for i, name in enumerate(names):
        base = med[names[i - i % 2]]
        print(f"{name:34}{med[name]:8.2f}{med[name] / base:8.2f}")
    if args.json:
        args.json.write_text(json.dumps({"median_cpu_ms": med, "rounds": rounds, "calls": args.calls}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
