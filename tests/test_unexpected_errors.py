"""Unexpected errors in a route: an error JSON, not Starlette's plain-text 500, and the server
keeps serving on the same connection; a stream cut after it started is closed, not disguised.

A real uvicorn server on loopback with :class:`UnexpectedErrorMiddleware` (the middleware of the
intercept server and the pool server), real HTTP through ``httpx``.
"""

from __future__ import annotations

import asyncio
import logging
import threading

import httpx
import pytest
import uvicorn
from fastapi import FastAPI
from fastapi.responses import StreamingResponse

from openclaw_rl.server.errors import ClientDisconnected, UnexpectedErrorMiddleware


def _app() -> FastAPI:
    app = FastAPI()

    @app.get("/boom")
    async def boom():
        raise RuntimeError("boom")

    @app.get("/gone")
    async def gone():
        raise ClientDisconnected()

    @app.get("/ok")
    async def ok():
        return {"ok": True}

    @app.get("/cut")
    async def cut():
        async def body():
            yield b"data: first\n\n"
            await asyncio.sleep(0.05)
            raise RuntimeError("engine died mid-stream")
        return StreamingResponse(body(), media_type="text/event-stream")

    app.add_middleware(UnexpectedErrorMiddleware, log=logging.getLogger("test.unexpected"))
    return app


@pytest.fixture(scope="module")
def base_url():
    server = uvicorn.Server(uvicorn.Config(_app(), host="127.0.0.1", port=0, log_level="critical"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        thread.join(0.05)
        assert thread.is_alive(), "uvicorn did not start"
    port = server.servers[0].sockets[0].getsockname()[1]
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(10)


def test_an_unexpected_error_is_a_500_error_json_and_the_connection_keeps_serving(base_url, caplog):
    with httpx.Client(base_url=base_url, timeout=10) as client, caplog.at_level(logging.ERROR, "test.unexpected"):
        r = client.get("/boom")
        assert r.status_code == 500
        assert r.json()["error"] == {"message": "internal error: boom", "type": "server_error",
                                     "param": None, "code": None}
        assert "unhandled error" in caplog.text and "RuntimeError: boom" in caplog.text
        assert r.headers.get("connection", "").lower() != "close"
        assert client.get("/ok").json() == {"ok": True}  # same client, same pool: still serving


def test_a_client_that_left_is_a_499(base_url):
    r = httpx.get(f"{base_url}/gone", timeout=10)
    assert r.status_code == 499 and r.json()["error"]["message"] == "client disconnected"


def test_a_stream_that_fails_after_it_started_is_cut_not_turned_into_a_500(base_url):
    got = b""
    with pytest.raises(httpx.RemoteProtocolError):
        with httpx.stream("GET", f"{base_url}/cut", timeout=10) as r:
            assert r.status_code == 200
            for chunk in r.iter_bytes():
                got += chunk
    assert got == b"data: first\n\n"
