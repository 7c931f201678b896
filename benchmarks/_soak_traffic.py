"""The traffic of ``soak.py``: one coroutine per kind of session, each recording what happened.

Kinds: ``stream`` (two streamed user turns), ``plain`` (two non-streamed turns), ``tool`` (a
forced call to a tool with an enum argument, then the tool's result sent back: the call's next
state has role ``tool``), ``side`` (an OpenClaw housekeeping prompt the default side-turn rules
classify, or ``X-Turn-Type: side``) and ``bad`` (invalid JSON, a prompt longer than the context
window can hold, an unknown model id, a body over ``--max-request-bytes``, a wrong API key; each
must get its own 4xx). Every request is recorded in a :class:`Tally` as ``ok`` (with its latency),
``expected`` (the bad request got the status it should) or ``unexpected`` (anything else: an
exception, a 5xx, a wrong status, a stream without a finish reason, a forced call not returned).
Every session is named (``X-Session-Id``) and ended (``X-Session-Done: true`` on its last turn).

Retries are off (``max_retries=0``), so nothing is hidden. The clients drop idle keep-alive
connections after 2 s: the server (uvicorn) closes them after 5 s idle, and a client that reuses
one at that very moment gets a ``ReadError`` (a race every HTTP/1.1 client has, which the SDK's
default retries absorb); it showed as an error in a short run with a 5 s update period.
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass, field

import httpx
from openai import AsyncOpenAI, DefaultAsyncHttpxClient

SIDE_PROMPTS = (  # (headers, user text): two matched by the default rules, one by the header
    ({}, "Follow the heartbeat monitor scratch context when provided. Reply HEARTBEAT_OK if nothing is due."),
    ({}, "Generate a concise session title (3-6 words, max 60 characters) for: planning a garden."),
    ({"X-Turn-Type": "side"}, "Summarise the conversation so far in one line."),
)
TOOL = {"type": "function", "function": {"name": "get_weather", "description": "Current weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string", "enum": ["Paris", "Oslo", "Lima"]}},
    "required": ["city"], "additionalProperties": False}}}
KEEPALIVE_S = 2.0  # under uvicorn's 5 s keep-alive timeout: never reuse a connection the server is closing
BAD_KINDS = ("invalid_json", "over_long_prompt", "unknown_model", "body_too_large", "wrong_api_key")


@dataclass
class Tally:
    """Outcomes of every request: ``events`` rows ``(t_done, outcome, latency_s, kind, detail)``."""

    events: list = field(default_factory=list)
    ok_by_kind: dict = field(default_factory=dict)

    def ok(self, kind: str, latency_s: float) -> None:
        """A request that was served as it should."""
        self.events.append((time.time(), "ok", latency_s, kind, ""))
        self.ok_by_kind[kind] = self.ok_by_kind.get(kind, 0) + 1

    def expected(self, kind: str, detail: str) -> None:
        """A bad request that got the 4xx it should."""
        self.events.append((time.time(), "expected", None, kind, detail))

    def unexpected(self, kind: str, detail: str) -> None:
        """Anything that should not happen."""
        self.events.append((time.time(), "unexpected", None, kind, detail))


@dataclass
class Traffic:
    """Issues the soak's sessions against one server.

    Args:
        base_url: the server's ``/v1`` URL. api_key: its key. max_tokens: per request.
        over_long_chars: characters of the over-long prompt (more than the window can hold).
        too_large_bytes: size of the body that must get 413.
    """

    base_url: str
    api_key: str
    max_tokens: int
    over_long_chars: int
    too_large_bytes: int
    tally: Tally = field(default_factory=Tally)
    counter: itertools.count = field(default_factory=itertools.count)
    sessions_done: dict = field(default_factory=dict)
    bad_counter: itertools.count = field(default_factory=itertools.count)

    def __post_init__(self):
        limits = httpx.Limits(max_connections=100, max_keepalive_connections=20, keepalive_expiry=KEEPALIVE_S)
        self.sdk = AsyncOpenAI(base_url=self.base_url, api_key=self.api_key, max_retries=0, timeout=1800,
                               http_client=DefaultAsyncHttpxClient(timeout=1800, limits=limits))
        self.http = httpx.AsyncClient(timeout=1800, limits=limits)

    async def aclose(self) -> None:
        """Close both HTTP clients."""
        await self.sdk.close()
        await self.http.aclose()

    def _done(self, kind: str) -> None:
        self.sessions_done[kind] = self.sessions_done.get(kind, 0) + 1

    async def run(self, kind: str) -> None:
        """One session of ``kind``; every failure is tallied, never raised."""
        n = next(self.counter)
        try:
            await getattr(self, f"_{kind}")(n)
        except Exception as exc:  # a request that failed in a way no bad request is meant to
            self.tally.unexpected(kind, f"{type(exc).__name__}: {exc}"[:300])

    async def _stream(self, n: int) -> None:
        messages = [{"role": "user", "content": f"Soak {n}: tell me about rivers."}]
        for turn in range(2):
            if turn:
                messages.append({"role": "user", "content": "Go on, please."})
            t0 = time.perf_counter()
            stream = await self.sdk.chat.completions.create(
                model="policy", messages=messages, max_tokens=self.max_tokens, stream=True,
                extra_headers=self._session(f"soak-stream-{n}", last=turn == 1))
            parts, finish = [], None
            async for chunk in stream:
                for choice in chunk.choices:
                    parts.append(choice.delta.content or "")
                    finish = choice.finish_reason or finish
            if finish is None:
                raise RuntimeError("stream ended without a finish reason")
            self.tally.ok("stream", time.perf_counter() - t0)
            messages.append({"role": "assistant", "content": "".join(parts)})
        self._done("stream")

    async def _plain(self, n: int) -> None:
        messages = [{"role": "user", "content": f"Soak {n}: name a mountain."}]
        for turn in range(2):
            if turn:
                messages.append({"role": "user", "content": "Why that one?"})
            t0 = time.perf_counter()
            r = await self.sdk.chat.completions.create(
                model="policy", messages=messages, max_tokens=self.max_tokens,
                extra_headers=self._session(f"soak-plain-{n}", last=turn == 1))
            self.tally.ok("plain", time.perf_counter() - t0)
            messages.append(r.choices[0].message.model_dump(exclude_none=True))
        self._done("plain")

    async def _tool(self, n: int) -> None:
        messages = [{"role": "user", "content": f"Soak {n}: what is the weather like?"}]
        session = f"soak-tool-{n}"
        t0 = time.perf_counter()
        r = await self.sdk.chat.completions.create(
            model="policy", messages=messages, max_tokens=64, tools=[TOOL],
            tool_choice={"type": "function", "function": {"name": "get_weather"}},
            extra_headers=self._session(session, last=False))
        msg = r.choices[0].message
        if not msg.tool_calls:
            raise RuntimeError(f"forced call not returned (finish {r.choices[0].finish_reason})")
        self.tally.ok("tool", time.perf_counter() - t0)
        messages.append(msg.model_dump(exclude_none=True))
        for call in msg.tool_calls:
            messages.append({"role": "tool", "tool_call_id": call.id, "content": '{"temp_c": 14, "sky": "cloudy"}'})
        t0 = time.perf_counter()
        await self.sdk.chat.completions.create(model="policy", messages=messages, max_tokens=self.max_tokens,
                                               tools=[TOOL], extra_headers=self._session(session, last=True))
        self.tally.ok("tool", time.perf_counter() - t0)
        self._done("tool")

    async def _side(self, n: int) -> None:
        headers, text = SIDE_PROMPTS[n % len(SIDE_PROMPTS)]
        t0 = time.perf_counter()
        await self.sdk.chat.completions.create(
            model="policy", messages=[{"role": "user", "content": text}], max_tokens=self.max_tokens,
            extra_headers={**headers, **self._session(f"soak-side-{n}", last=True)})
        self.tally.ok("side", time.perf_counter() - t0)
        self._done("side")

    async def _bad(self, n: int) -> None:
        kind = BAD_KINDS[next(self.bad_counter) % len(BAD_KINDS)]
        url, headers = f"{self.base_url}/chat/completions", {"Authorization": f"Bearer {self.api_key}",
                                                               "Content-Type": "application/json"}
        if kind == "invalid_json":
            r = await self.http.post(url, content=b'{"messages": [{"role": "user", "content": "hi"', headers=headers)
            want = (400, "invalid_json")
        elif kind == "over_long_prompt":
            body = b'{"messages": [{"role": "user", "content": "' + b"a" * self.over_long_chars + b'"}]}'
            r = await self.http.post(url, content=body, headers=headers)
            want = (400, "context_length_exceeded")
        elif kind == "unknown_model":
            r = await self.http.get(f"{self.base_url}/models/no-such-model", headers=headers)
            want = (404, None)
        elif kind == "body_too_large":
            r = await self.http.post(url, content=b"x" * self.too_large_bytes, headers=headers)
            want = (413, "request_too_large")
        else:
            r = await self.http.post(url, json={"messages": [{"role": "user", "content": "hi"}]},
                                     headers={"Authorization": "Bearer wrong-key"})
            want = (401, "invalid_api_key")
        code = (r.json().get("error") or {}).get("code") if r.headers.get("content-type", "").startswith(
            "application/json") else None
        if r.status_code == want[0] and (want[1] is None or code == want[1]):
            self.tally.expected(kind, str(r.status_code))
        else:
            self.tally.unexpected(kind, f"status {r.status_code} code {code!r}, wanted {want}: {r.text[:200]}")

    @staticmethod
    def _session(session_id: str, last: bool) -> dict:
        return {"X-Session-Id": session_id, **({"X-Session-Done": "true"} if last else {})}
