"""Streaming chat traffic in the background while a test swaps or rolls back weights."""

from __future__ import annotations

import threading
from contextlib import contextmanager

import httpx

from openclaw_rl.tls import tls_context


@contextmanager
def streaming_traffic(v1_url: str, headers: dict, clients: int = 2):
    """Run ``clients`` threads streaming short completions to ``v1_url`` (the server's ``/v1``)
    until the block ends; yields the list of outcomes, one per request: the HTTP status when the
    stream ended with ``data: [DONE]``, else -1."""
    statuses: list[int] = []
    stop = threading.Event()

    def talk():
        while not stop.is_set():
            r = httpx.post(v1_url + "/chat/completions", headers=headers, timeout=120, verify=tls_context(),
                           json={"messages": [{"role": "user", "content": "keep talking"}],
                                 "max_tokens": 6, "stream": True, "session_id": "traffic"})
            statuses.append(r.status_code if r.text.rstrip().endswith("[DONE]") else -1)

    threads = [threading.Thread(target=talk) for _ in range(clients)]
    for t in threads:
        t.start()
    try:
        yield statuses
    finally:
        stop.set()
        for t in threads:
            t.join(120)
