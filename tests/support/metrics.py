"""Reading a server's ``GET /metrics`` (Prometheus text format, parsed by ``prometheus_client``)
and the forced tool call the tests use to keep a request generating for a known time."""

from __future__ import annotations

import time

import httpx
from prometheus_client.parser import text_string_to_metric_families


def metrics(root: str) -> dict[str, float]:
    """Every un-labelled sample of ``GET {root}/metrics`` as ``{sample name: value}``.

    Args:
        root: the server's root URL (``http://127.0.0.1:<port>``, no ``/v1``).
    """
    text = httpx.get(f"{root}/metrics", timeout=30).text
    return {s.name: s.value for family in text_string_to_metric_families(text)
            for s in family.samples if not s.labels}


def metric(root: str, name: str) -> float:
    """One un-labelled sample of ``GET {root}/metrics``.

    Raises:
        AssertionError: the server does not export ``name``.
    """
    got = metrics(root)
    if name not in got:
        raise AssertionError(f"{name} not exported")
    return got[name]


def wait_metric(root: str, name: str, value: float, timeout: float = 120) -> None:
    """Poll ``/metrics`` every 50 ms until ``name`` equals ``value``.

    Raises:
        AssertionError: it did not within ``timeout`` seconds (the message has the last value).
    """
    deadline = time.time() + timeout
    while time.time() < deadline:
        if metric(root, name) == value:
            return
        time.sleep(0.05)
    raise AssertionError(f"{name} never reached {value} (now {metric(root, name)})")


def write_tool(min_length: int) -> dict:
    """An OpenAI tool ``write(text)`` whose ``text`` must have at least ``min_length`` characters:
    forced with ``tool_choice``, the reply cannot end before that many characters, whatever a
    random model samples (so a request keeps generating until ``max_tokens``)."""
    return {"type": "function", "function": {"name": "write", "parameters": {
        "type": "object", "properties": {"text": {"type": "string", "minLength": min_length}},
        "required": ["text"]}}}
