"""Oversized requests and open binds: a clear refusal, and the server keeps serving.

A body over ``--max-request-bytes`` is a 413 (announced by Content-Length, or streamed in chunks);
a prompt that cannot fit the context is refused by the cheap character bound before rendering and
tokenizing (its message says "at least"); a public ``--host`` without ``--api-key`` is refused
unless ``--insecure-no-auth``. Real server, real HTTP, the real ``openai`` SDK.
"""

from __future__ import annotations

import httpx
import openai
import pytest

from openclaw_rl.models import load_tokenizer
from openclaw_rl.server.config import is_loopback, parse_server_args
from openclaw_rl.server.limits import check_prompt_bound, max_token_chars, prompt_lower_bound
from openclaw_rl.server.errors import APIError
from tests.support.server import running_server

LIMIT = 64 * 1024
CONTEXT = 128  # a small window, so a prompt under the byte limit can still be certainly too long


@pytest.fixture(scope="module")
def small_server(tmp_path_factory):
    buf = tmp_path_factory.mktemp("limits") / "rl_buffer"
    with running_server("builtin:tiny-qwen3", buf, "--default-max-tokens", "4", "--max-request-bytes", str(LIMIT),
                        "--max-context", str(CONTEXT), "--enable-rl-intercept") as handle:
        yield handle


def _ok(server) -> None:
    client = openai.OpenAI(base_url=server.base_url, api_key="sk-test", max_retries=0)
    r = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}], max_tokens=2)
    assert r.choices[0].finish_reason in ("stop", "length")


def test_a_body_over_the_limit_is_413_before_it_is_read(small_server):
    url = f"{small_server.base_url}/chat/completions"
    headers = {"Authorization": "Bearer sk-test", "Content-Type": "application/json"}
    big = b'{"messages": [{"role": "user", "content": "' + b"a" * (LIMIT + 10) + b'"}]}'
    r = httpx.post(url, content=big, headers=headers, timeout=60)
    assert r.status_code == 413 and r.json()["error"]["code"] == "request_too_large"

    def chunks():  # no Content-Length: counted while it streams in
        yield b'{"messages": [{"role": "user", "content": "'
        for _ in range(LIMIT // 4096 + 2):
            yield b"b" * 4096
        yield b'"}]}'

    r = httpx.post(url, content=chunks(), headers=headers, timeout=60)
    assert r.status_code == 413 and "--max-request-bytes" in r.json()["error"]["message"]
    _ok(small_server)  # still serving


def test_a_prompt_that_cannot_fit_is_refused_before_tokenizing(small_server):
    tok = load_tokenizer("builtin:tiny-qwen3")
    per_token = max_token_chars(tok)
    client = openai.OpenAI(base_url=small_server.base_url, api_key="sk-test", max_retries=0)
    health = httpx.get(small_server.base_url.replace("/v1", "/healthz")).json()
    assert health["status"] == "ok"
    # fewer characters than the byte limit, more than the window can hold even at the longest token
    n_chars = per_token * (CONTEXT + 1)
    assert n_chars < LIMIT - 200
    with pytest.raises(openai.BadRequestError) as info:
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": "x" * n_chars}])
    body = info.value.body
    assert info.value.code == "context_length_exceeded"
    assert "the prompt has at least" in str(body)  # the cheap bound answered, not the tokenizer
    _ok(small_server)


def test_the_bound_never_refuses_what_fits():
    tok = load_tokenizer("builtin:tiny-qwen3")
    per_token = max_token_chars(tok)
    assert per_token >= max(len(t) for t in tok.get_vocab())
    text = "hello world, " * 200
    msgs = [{"role": "user", "content": text}, {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c", "type": "function", "function": {"name": "f", "arguments": '{"a": 1}'}}]}]
    real = len(tok(text, add_special_tokens=False)["input_ids"])
    assert prompt_lower_bound(msgs, per_token) <= real
    check_prompt_bound(msgs, per_token, real + 2)  # fits: no error
    with pytest.raises(APIError, match="at least"):
        check_prompt_bound([{"role": "user", "content": "y" * (per_token * 50)}], per_token, 40)


@pytest.mark.parametrize("host,ok", [("127.0.0.1", True), ("localhost", True), ("::1", True), ("127.0.0.9", True),
                                     ("0.0.0.0", False), ("192.168.1.5", False), ("example.org", False)])
def test_loopback(host, ok):
    assert is_loopback(host) is ok


def test_a_public_bind_needs_a_key_or_an_explicit_opt_out(capsys):
    with pytest.raises(SystemExit) as info:
        parse_server_args(["--host", "0.0.0.0"])
    assert info.value.code == 2 and "--api-key" in capsys.readouterr().err
    assert parse_server_args(["--host", "0.0.0.0", "--api-key", "k"]).api_key == "k"
    assert parse_server_args(["--host", "0.0.0.0", "--insecure-no-auth"]).insecure_no_auth
