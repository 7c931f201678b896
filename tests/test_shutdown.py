"""Graceful shutdown of the real server subprocess (SIGTERM), with the real ``openai`` SDK.

The long reply is a forced tool call whose argument must hold 100000+ characters: constrained
decoding masks every way to end it, so whatever the random model samples it runs until the
server stops it (the trick of tests/test_backpressure.py). No timing is asserted beyond the
bound on the exit (grace + a generous margin); states are waited for on /metrics.
"""

from __future__ import annotations

import json
import signal
import sqlite3
import threading
import time

import httpx
import openai
import pytest

from openclaw_rl.capture.store import TrajectoryStore
from tests.support.metrics import wait_metric, write_tool
from tests.support.server import start_server, stop_server

MODEL = "builtin:tiny-qwen3"
TOOL = write_tool(100000)
FORCED = {"type": "function", "function": {"name": "write"}}
# the same with 3000+ characters: 300 tokens end at max_tokens (or, rarely, with a complete call)
TOOL_3000 = write_tool(3000)
EXIT_MARGIN = 60.0  # seconds beyond the grace the process may take to exit (start-up of a loaded CPU)






class _SdkStream(threading.Thread):
    """A streamed request through the openai SDK; keeps the raw SSE lines (to see ``[DONE]``)."""

    def __init__(self, client: openai.OpenAI, **body):
        super().__init__(daemon=True)
        self.client, self.body = client, body
        self.lines: list[str] = []
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            with self.client.chat.completions.with_streaming_response.create(stream=True, **self.body) as r:
                for line in r.iter_lines():
                    if line:
                        self.lines.append(line)
        except BaseException as exc:  # noqa: BLE001 (reported by the test)
            self.error = exc

    def chunks(self) -> list[dict]:
        return [json.loads(x[6:]) for x in self.lines if x.startswith("data: {")]

    def content(self) -> str:
        return "".join(c["choices"][0]["delta"].get("content") or "" for c in self.chunks() if c["choices"])


def _sigterm_and_wait(server, bound: float) -> float:
    t0 = time.time()
    server.proc.send_signal(signal.SIGTERM)
    server.proc.wait(bound)
    return time.time() - t0


def test_sigterm_cuts_a_long_stream_records_it_and_a_restart_resumes_the_session(tmp_path):
    buf, grace = tmp_path / "rl_buffer", 1.0
    server = start_server(MODEL, buf, "--shutdown-grace-seconds", str(grace), "--max-running-requests", "1")
    try:
        root = server.base_url.replace("/v1", "")
        sdk = openai.OpenAI(base_url=server.base_url, api_key="sk-test", max_retries=0)
        messages = [{"role": "user", "content": "write the long text"}]
        long = _SdkStream(sdk, model="m", messages=messages, tools=[TOOL], tool_choice=FORCED, max_tokens=8000,
                          stream_options={"include_usage": True})
        long.start()  # (a forced call's text is held back until it ends: no chunk comes before the cut)
        wait_metric(root, "openclaw_requests_running", 1.0)
        queued: dict = {}

        def queued_request():  # waits for the only running slot: still queued when the grace runs out
            try:
                sdk.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}], max_tokens=2)
            except openai.APIStatusError as exc:
                queued["error"] = exc

        waiter = threading.Thread(target=queued_request, daemon=True)
        waiter.start()
        wait_metric(root, "openclaw_requests_queued", 1.0)
        took = _sigterm_and_wait(server, grace + EXIT_MARGIN)
        long.join(30)
        waiter.join(30)
    finally:
        stop_server(server)
    assert server.proc.returncode == 0, server.log()
    assert took < grace + EXIT_MARGIN
    # the stream ended cleanly: final chunk with finish reason "length", the usage chunk, [DONE]
    assert long.error is None, long.error
    assert long.lines[-1] == "data: [DONE]"
    chunks = long.chunks()
    assert chunks[-2]["choices"][0]["finish_reason"] == "length"
    usage = chunks[-1]["usage"]
    assert 0 < usage["completion_tokens"] < 8000  # cut by the shutdown, not by max_tokens
    # the request still queued when the grace ran out: 503 with Retry-After (OpenAI error shape)
    err = queued["error"]
    assert err.status_code == 503 and err.code == "server_shutting_down"
    assert err.response.headers["retry-after"] == "5"
    assert "grace of 1 s is over" in server.log()

    # the cut turn is committed like any finished turn, token-exact
    with sqlite3.connect(buf / "trajectories.sqlite") as db:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    store = TrajectoryStore(buf)
    (turn,) = store.turns()
    assert (turn.turn_type, turn.status, turn.finish_reason) == ("main", "awaiting_next", "length")
    assert len(turn.response_ids) == len(turn.response_logprobs) == usage["completion_tokens"]
    assert turn.prompt_ids and usage["prompt_tokens"] == len(turn.prompt_ids)
    # a forced call cut mid-way: the client got no markup as content (issue 29), the store keeps
    # the sampled text (its ids are token-exact above)
    assert long.content() == "" and turn.response_text.startswith("<tool_call>")
    store.close()

    # restart on the same buffer; the conversation goes on as a stock client sends it (no headers)
    server = start_server(MODEL, buf, "--shutdown-grace-seconds", str(grace))
    try:
        sdk = openai.OpenAI(base_url=server.base_url, api_key="sk-test", max_retries=0)
        follow = messages + [{"role": "assistant", "content": long.content()},
                             {"role": "user", "content": "thanks, go on after the restart"}]
        reply = sdk.chat.completions.create(model="m", messages=follow, tools=[TOOL], max_tokens=2)
        assert reply.choices[0].finish_reason in ("length", "stop", "tool_calls")
        took = _sigterm_and_wait(server, grace + EXIT_MARGIN)
    finally:
        stop_server(server)
    assert server.proc.returncode == 0, server.log()
    store = TrajectoryStore(buf)
    first, second = store.turns()
    assert second.session_id == first.session_id  # the session resumed from the store
    assert (first.status, first.next_state, first.next_state_role) == ("ready", "thanks, go on after the restart",
                                                                       "user")
    assert (second.turn_index, second.status) == (1, "awaiting_next")
    # token in, token out across the restart: the new prompt extends the cut turn's ids exactly
    assert second.prefix_ok is True
    assert second.prompt_ids[:len(first.prompt_ids) + len(first.response_ids)] == first.prompt_ids + first.response_ids
    store.close()


def test_a_request_that_ends_within_the_grace_is_served_in_full(tmp_path):
    buf, grace = tmp_path / "rl_buffer", 120.0
    server = start_server(MODEL, buf, "--shutdown-grace-seconds", str(grace))
    try:
        root = server.base_url.replace("/v1", "")
        sdk = openai.OpenAI(base_url=server.base_url, api_key="sk-test", max_retries=0)
        stream = _SdkStream(sdk, model="m", messages=[{"role": "user", "content": "write"}], tools=[TOOL_3000],
                            tool_choice=FORCED, max_tokens=300, stream_options={"include_usage": True})
        stream.start()
        wait_metric(root, "openclaw_requests_running", 1.0)
        server.proc.send_signal(signal.SIGTERM)
        t0 = time.time()
        refused_while_in_flight = None
        while time.time() - t0 < 30:  # the listening socket closes at once; the stream goes on
            try:
                httpx.get(f"{root}/healthz", timeout=2)
            except httpx.ConnectError:
                refused_while_in_flight = stream.is_alive()
                break
            except (httpx.TimeoutException, httpx.ReadError):
                pass  # in the backlog when the listener closed (reset), or the loop was busy compiling the grammar
            time.sleep(0.05)
        server.proc.wait(grace + EXIT_MARGIN)
        took = time.time() - t0
        stream.join(30)
    finally:
        stop_server(server)
    assert refused_while_in_flight is True
    assert server.proc.returncode == 0, server.log()
    assert took < grace  # it left once the request ended, without waiting for the whole grace
    assert stream.error is None and stream.lines[-1] == "data: [DONE]"
    chunks = stream.chunks()
    finish, used = chunks[-2]["choices"][0]["finish_reason"], chunks[-1]["usage"]["completion_tokens"]
    # served in full: the whole budget, or the model closed the call itself
    assert (finish, used) == ("length", 300) or (finish == "tool_calls" and used < 300)
    store = TrajectoryStore(buf)
    (turn,) = store.turns()
    assert len(turn.response_ids) == used and turn.finish_reason == ("length" if finish == "length" else "stop")
    store.close()


@pytest.mark.parametrize("bad", ["-1", "soon"])
def test_bad_grace_is_a_one_line_error(bad):
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-m", "openclaw_rl.server", "--shutdown-grace-seconds", bad],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "--shutdown-grace-seconds" in proc.stderr.splitlines()[-1]
