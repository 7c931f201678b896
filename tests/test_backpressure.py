"""Back-pressure on the real server: one running slot, one queue place; the third concurrent
request is refused at once with 429 ``server_busy`` and ``Retry-After`` (the ``openai`` SDK's
RateLimitError), the queued one is served when the running one ends, and ``GET /metrics`` shows
it all in Prometheus text format. No timing is asserted: each state is waited for on /metrics."""

from __future__ import annotations

import threading

import httpx
import openai
import pytest

from tests.support.metrics import metric, wait_metric, write_tool
from tests.support.server import running_server

AUTH = {"Authorization": "Bearer sk-test"}






def test_full_server_answers_429_and_serves_the_queue(tmp_path):
    with running_server("builtin:tiny-qwen3", tmp_path / "buf", "--max-running-requests", "1",
                        "--max-queued-requests", "1") as server:
        root = server.base_url.replace("/v1", "")
        assert metric(root, "openclaw_max_running_requests") == 1.0
        # a reply that cannot end early whatever the random model samples: a forced call whose
        # argument must be at least 3000 characters long (constrained decoding masks the end);
        # with 400 tokens to sample it runs for seconds, far longer than the few requests below take
        tool = write_tool(3000)
        long_body = {"model": "m", "messages": [{"role": "user", "content": "write"}], "max_tokens": 400,
                     "tools": [tool], "tool_choice": {"type": "function", "function": {"name": "write"}}}
        short_body = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 2}
        results: dict = {}

        def post(name, body):
            r = httpx.post(f"{server.base_url}/chat/completions", headers=AUTH, json=body, timeout=600)
            results[name] = r.status_code

        first = threading.Thread(target=post, args=("long", long_body))
        first.start()
        wait_metric(root, "openclaw_requests_running", 1.0, timeout=60)
        second = threading.Thread(target=post, args=("queued", short_body))
        second.start()
        wait_metric(root, "openclaw_requests_queued", 1.0, timeout=60)
        sdk = openai.OpenAI(base_url=server.base_url, api_key="sk-test", max_retries=0)
        with pytest.raises(openai.RateLimitError) as info:
            sdk.chat.completions.create(**short_body)
        assert info.value.code == "server_busy"
        assert info.value.response.headers["retry-after"] == "1"
        assert metric(root, "openclaw_requests_rejected_total") == 1.0
        assert results == {}  # the refusal did not wait for the running request
        first.join(600)
        second.join(600)
        assert results == {"long": 200, "queued": 200}
        wait_metric(root, "openclaw_requests_running", 0.0, timeout=60)
        assert metric(root, "openclaw_requests_queued") == 0.0
        assert metric(root, "openclaw_requests_admitted_total") == 2.0
        assert metric(root, "openclaw_weight_version") == 0.0


def test_admission_control_orders_and_refuses():
    import asyncio

    from openclaw_rl.server.admission import AdmissionControl
    from openclaw_rl.server.errors import APIError

    async def go():
        adm = AdmissionControl(max_running=2, max_queued=1, retry_after=3)
        release = asyncio.Event()
        order = []

        async def hold(name):
            async with adm.slot():
                order.append(name)
                await release.wait()

        tasks = [asyncio.create_task(hold(n)) for n in ("a", "b", "c")]
        while adm.queued < 1:
            await asyncio.sleep(0)
        assert (adm.running, adm.queued, order) == (2, 1, ["a", "b"])
        with pytest.raises(APIError) as info:
            async with adm.slot():
                pass
        assert info.value.status == 429 and info.value.headers == {"Retry-After": "3"}
        release.set()
        await asyncio.gather(*tasks)
        assert (adm.running, adm.queued, order) == (0, 0, ["a", "b", "c"])

    asyncio.run(go())
