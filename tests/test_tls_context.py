"""The HTTP clients of the loops build one TLS context per process, not one per call
(:mod:`openclaw_rl.tls`): on the real tiny server, a health poll, the default generate and an agent
turn, each called several times, load the CA bundle at most once."""

from __future__ import annotations

import asyncio
import ssl
from types import SimpleNamespace

import pytest

from openclaw_rl.agentic.agent_loop import ServerChat
from openclaw_rl.launch.wait_pool import _ready
from openclaw_rl.rollout.generate import generate
from openclaw_rl.tls import tls_context
from slime.record.sample import Sample


@pytest.fixture
def contexts_built(monkeypatch):
    """A list that gets one entry per ``ssl.create_default_context`` call (httpx builds its client
    context with it) while the test runs."""
    built, real = [], ssl.create_default_context

    def counting(*args, **kwargs):
        built.append(args or kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr(ssl, "create_default_context", counting)
    return built


def test_the_loops_build_one_tls_context_in_all(tiny_server, contexts_built):
    root = f"http://127.0.0.1:{tiny_server.port}"
    args = SimpleNamespace(server_url=root, rl_buffer_dir=str(tiny_server.buffer_dir), api_key=tiny_server.api_key)
    chat = ServerChat(tiny_server.base_url, str(tiny_server.buffer_dir), api_key=tiny_server.api_key)

    async def calls():
        for i in range(3):
            sample = await generate(args, Sample(tokens=[], response_length=0, rollout_log_probs=[], prompt=f"count to {i}"), {"max_new_tokens": 2, "temperature": 1.0})
            assert sample.response_length > 0
            message, turn = await chat.step(f"tls-{i}", [{"role": "user", "content": "hi"}], None,
                                            {"max_new_tokens": 2})
            assert message is not None and turn.session_id == f"tls-{i}"

    for _ in range(3):
        assert _ready(root, 0)
    asyncio.run(calls())
    assert len(contexts_built) <= 1, contexts_built  # 0 when an earlier test of this process built it
    assert tls_context() is tls_context()


def test_the_context_verifies_as_httpx_does():
    """What a client trusts is what httpx's default gives: verification and host names on."""
    ctx = tls_context()
    assert ctx.verify_mode == ssl.CERT_REQUIRED and ctx.check_hostname
    assert ctx.get_ca_certs() or ctx.cert_store_stats()["x509_ca"] > 0
