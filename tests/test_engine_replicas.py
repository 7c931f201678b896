"""Replica choice and options of the engine-server backends (:mod:`openclaw_rl.engine.replicas`): session
affinity by rendezvous hashing, rolling updates that drain one replica while the others serve,
and completions that wait (never fail) while the only replica is updated. The same logic runs
over real vLLM servers in tests/test_vllm_backend.py."""

from __future__ import annotations

import asyncio
import threading
from collections import Counter
from pathlib import Path

import pytest

from openclaw_rl.engine.engine_servers import parse_rollout_gpus, replica_devices
from openclaw_rl.engine.replicas import Replica, ReplicaSet

URLS = [f"http://10.0.0.{i}:8000" for i in range(4)]


def test_a_session_always_gets_the_same_replica_and_sessions_spread():
    replicas = ReplicaSet([Replica(u) for u in URLS])
    again = ReplicaSet([Replica(u) for u in reversed(URLS)])  # another process, another order
    keys = [f"session-{i}" for i in range(400)]
    chosen = {k: replicas.choose(k).url for k in keys}
    assert all(again.choose(k).url == chosen[k] for k in keys)
    counts = Counter(chosen.values())
    assert set(counts) == set(URLS) and min(counts.values()) > 400 / 4 * 0.6, counts


def test_taking_one_replica_out_moves_only_its_sessions():
    replicas = ReplicaSet([Replica(u) for u in URLS])
    keys = [f"s{i}" for i in range(200)]
    before = {k: replicas.choose(k) for k in keys}
    out = replicas.replicas[1]
    out.draining = True
    after = {k: replicas.choose(k) for k in keys}
    for k in keys:
        if before[k] is out:
            assert after[k] is not out and after[k] is replicas.order(k)[1]
        else:
            assert after[k] is before[k]


def test_without_a_key_the_least_busy_replica_serves():
    replicas = ReplicaSet([Replica(u) for u in URLS[:3]])

    async def run():
        held = [await replicas.acquire(None) for _ in range(6)]
        return Counter(r.url for r in held)

    assert set(asyncio.run(run()).values()) == {2}


def test_an_update_waits_for_completions_in_flight_and_new_ones_go_elsewhere():
    a, b = Replica(URLS[0]), Replica(URLS[1])
    replicas = ReplicaSet([a, b])
    key = next(k for k in (f"k{i}" for i in range(100)) if replicas.choose(k) is a)
    events: list[str] = []

    async def run():
        first = await replicas.acquire(key)
        assert first is a
        updater = threading.Thread(target=update)
        updater.start()
        while not a.draining:
            await asyncio.sleep(0.01)
        moved = await replicas.acquire(key)  # a is being updated: its second choice
        events.append(f"moved to {moved.url}")
        events.append("first done")
        replicas.release(first)
        await asyncio.to_thread(updater.join)
        replicas.release(moved)
        back = await replicas.acquire(key)
        replicas.release(back)
        return moved, back

    def update():
        with replicas.drained(a):
            events.append("updating")

    moved, back = asyncio.run(run())
    assert moved is b and back is a
    assert events == [f"moved to {b.url}", "first done", "updating"]


def test_with_one_replica_completions_wait_for_the_update_then_run():
    only = Replica(URLS[0])
    replicas = ReplicaSet([only])
    gate = threading.Event()
    order: list[str] = []

    def update():
        with replicas.drained(only):
            gate.wait(10)
            order.append("updated")

    async def run():
        updater = threading.Thread(target=update)
        updater.start()
        while not only.draining:
            await asyncio.sleep(0.01)
        waiting = asyncio.create_task(replicas.acquire("s"))
        await asyncio.sleep(0.1)
        assert not waiting.done()  # waits, does not fail
        gate.set()
        got = await asyncio.wait_for(waiting, 10)
        order.append("served")
        replicas.release(got)
        await asyncio.to_thread(updater.join)

    asyncio.run(run())
    assert order == ["updated", "served"]


def test_rollout_gpus_split_into_replicas():
    assert parse_rollout_gpus(None) == [] and parse_rollout_gpus("0") == []
    assert parse_rollout_gpus("4") == ["0", "1", "2", "3"]
    assert parse_rollout_gpus("4,5, 6,7") == ["4", "5", "6", "7"]
    assert replica_devices([], 2) == [[]]
    assert replica_devices(["4", "5", "6", "7"], 2) == [["4", "5"], ["6", "7"]]
    with pytest.raises(ValueError, match="multiple"):
        replica_devices(["0", "1", "2"], 2)
    with pytest.raises(ValueError, match="ROLLOUT_GPUS"):
        parse_rollout_gpus("gpu0")
    with pytest.raises(ValueError, match="same|differ"):
        ReplicaSet([Replica(URLS[0]), Replica(URLS[0])])


def test_engine_server_options_fail_with_one_line_reasons(capsys):
    from openclaw_rl.engine.engine_servers import engine_command, resolve_engine_python
    from openclaw_rl.server.config import parse_server_args

    with pytest.raises(ValueError, match="make vllm"):
        resolve_engine_python("vllm", "/nonexistent/python")
    with pytest.raises(SystemExit):
        parse_server_args(["--engine-url", "http://127.0.0.1:8000"])  # the transformers backend has none
    assert "--engine-url needs --backend vllm or sglang" in capsys.readouterr().err
    cpu = engine_command("vllm", "py", Path("/m"), 9000, [], 4096, ["--dtype", "float32"])
    assert cpu[:3] == ["py", "-m", "vllm.entrypoints.openai.api_server"] and "--enforce-eager" in cpu
    assert cpu[cpu.index("--max-model-len") + 1] == "4096" and cpu[-2:] == ["--dtype", "float32"]
    gpu = engine_command("sglang", "py", Path("/m"), 9000, ["4", "5"], None, [])
    assert gpu[gpu.index("--tp-size") + 1] == "2" and "--context-length" not in gpu
