"""The memory and thread budget of a vLLM engine server on the CPU (``--backend vllm`` without GPUs).

vLLM's CPU build sizes its KV cache from ``VLLM_CPU_KVCACHE_SPACE`` (GiB); unset, it takes
``--gpu-memory-utilization`` (0.92) of the NUMA node's memory and refuses to start when less is
free, which is the case on any machine where something else runs. It also pins its OpenMP
threads to cores (``VLLM_CPU_OMP_THREADS_BIND=auto``), which on a machine shared with the
intercept server, a trainer or other users makes threads wait on each other.

So, for a CPU replica, the intercept server sets (only the variables the user has not set
himself: a user's ``VLLM_CPU_KVCACHE_SPACE``, ``VLLM_CPU_OMP_THREADS_BIND`` or
``OMP_NUM_THREADS`` always wins):

* ``VLLM_CPU_KVCACHE_SPACE`` (unless ``--engine-args`` has vLLM's ``--kv-cache-memory-bytes``):
  ``--engine-kv-cache-gib`` when given, else
  :func:`kv_cache_gib`: room for :data:`TARGET_CONTEXTS` full context windows of the served model
  (its per-token KV size from ``config.json`` times the context length), at least one window and
  1 GiB, at most :data:`MEMORY_SHARE` of the memory available at start once the weights are
  loaded (``psutil.virtual_memory().available``, i.e. ``MemAvailable`` of ``/proc/meminfo``);
* ``VLLM_CPU_OMP_THREADS_BIND=nobind``: no pinning;
* ``OMP_NUM_THREADS``: the usable cores (``os.sched_getaffinity``) minus one for the intercept
  server, at least 1.

On GPUs nothing is set: vLLM's own defaults apply.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Mapping, Sequence

import psutil

from slime.omp import usable_cores

GIB = 1024 ** 3
#: full context windows the KV cache aims to hold (concurrent long conversations)
TARGET_CONTEXTS = 4
#: most of the available memory (after the weights) the KV cache may take
MEMORY_SHARE = 0.25
#: bytes per element of a ``--dtype`` / ``config.json`` dtype name
DTYPE_BYTES = {"float32": 4, "float": 4, "bfloat16": 2, "float16": 2, "half": 2}


class KVCacheBudgetError(ValueError):
    """Not even one full context window fits in the memory the KV cache may take."""


def kv_bytes_per_token(config: Mapping, dtype_bytes: int) -> int:
    """Bytes of KV cache one token takes: keys and values of every layer,
    ``2 * num_hidden_layers * num_key_value_heads * head_dim * dtype_bytes``.

    Args:
        config: the model's ``config.json`` (a multimodal model's ``text_config`` is used).
        dtype_bytes: bytes per cache element (4 for float32, 2 for bfloat16).

    Raises:
        KeyError: the config lacks ``num_hidden_layers`` or the attention sizes.
    """
    config = config.get("text_config") or config
    heads = int(config["num_attention_heads"])
    kv_heads = int(config.get("num_key_value_heads") or heads)
    head_dim = int(config.get("head_dim") or int(config["hidden_size"]) // heads)
    return 2 * int(config["num_hidden_layers"]) * kv_heads * head_dim * dtype_bytes


def flag_value(args: Sequence[str], name: str) -> str | None:
    """The value of ``name`` (``--x v`` or ``--x=v``) in an engine's extra flags, last one wins."""
    value = None
    for i, arg in enumerate(args):
        if arg == name and i + 1 < len(args):
            value = args[i + 1]
        elif arg.startswith(name + "="):
            value = arg.split("=", 1)[1]
    return value


def weights_bytes(model_folder: Path) -> int:
    """Size of the model's weight files (``*.safetensors``, ``*.bin``) in bytes."""
    return sum(p.stat().st_size for pattern in ("*.safetensors", "*.bin") for p in model_folder.glob(pattern))


def kv_cache_gib(model_folder: Path, max_context: int | None, engine_args: Sequence[str] = (),
                 available_bytes: int | None = None) -> int:
    """The KV-cache size (whole GiB) of a CPU vLLM replica (see the module doc).

    Args:
        model_folder: the served model's folder (``config.json`` and weight files).
        max_context: the context window (``--max-context``); default ``--max-model-len`` of
            ``engine_args``, else the model's ``max_position_embeddings``.
        engine_args: the engine's extra flags (``--dtype``, ``--max-model-len`` are read); the
            KV cache has the model's dtype (unknown: 4 bytes, the larger guess).
        available_bytes: memory available now; default ``psutil.virtual_memory().available``.

    Returns:
        GiB, at least 1.

    Raises:
        KVCacheBudgetError: one full context window does not fit in :data:`MEMORY_SHARE` of the
            available memory (the message says what to lower).
    """
    config = json.loads((model_folder / "config.json").read_text())
    text = config.get("text_config") or config
    dtype = flag_value(engine_args, "--dtype") or "auto"
    if dtype == "auto":  # the checkpoint's dtype, float32 downcast to bfloat16 (vLLM logs "Downcasting")
        dtype = text.get("torch_dtype") or text.get("dtype") or config.get("torch_dtype") or config.get("dtype")
        dtype = "bfloat16" if dtype in ("float32", "float") else dtype
    per_token = kv_bytes_per_token(config, DTYPE_BYTES.get(str(dtype), 4))
    context = max_context or int(flag_value(engine_args, "--max-model-len") or text.get("max_position_embeddings") or 4096)
    available = psutil.virtual_memory().available if available_bytes is None else available_bytes
    cap = MEMORY_SHARE * max(0, available - weights_bytes(model_folder))
    one = per_token * context
    if one > cap:
        raise KVCacheBudgetError(
            f"vLLM on CPU: one {context}-token context needs {one / GIB:.1f} GiB of KV cache, more than "
            f"{MEMORY_SHARE:.0%} of the {available / GIB:.1f} GiB available; lower --max-context or set "
            "--engine-kv-cache-gib (or VLLM_CPU_KVCACHE_SPACE)")
    want = min(math.ceil(TARGET_CONTEXTS * one / GIB), math.floor(cap / GIB))
    return max(1, want, math.ceil(one / GIB))  # vLLM counts whole GiB and needs one full window


def omp_threads() -> int:
    """OpenMP threads of a CPU replica: the usable cores minus one (the intercept server's), >= 1."""
    return max(1, usable_cores() - 1)


def cpu_engine_env(environ: Mapping[str, str], model_folder: Path, max_context: int | None,
                   engine_args: Sequence[str] = (), kv_cache: int | None = None) -> dict[str, str]:
    """The variables a CPU vLLM replica gets on top of ``environ`` (see the module doc): only
    those ``environ`` does not set already.

    Args:
        environ: the user's environment (``os.environ``).
        model_folder, max_context, engine_args: as :func:`kv_cache_gib`.
        kv_cache: ``--engine-kv-cache-gib`` (None: derived).

    Raises:
        KVCacheBudgetError: from :func:`kv_cache_gib` (only when it is called).
    """
    env: dict[str, str] = {}
    if "VLLM_CPU_KVCACHE_SPACE" not in environ and flag_value(engine_args, "--kv-cache-memory-bytes") is None:
        env["VLLM_CPU_KVCACHE_SPACE"] = str(kv_cache if kv_cache else kv_cache_gib(model_folder, max_context, engine_args))
    if "VLLM_CPU_OMP_THREADS_BIND" not in environ:
        env["VLLM_CPU_OMP_THREADS_BIND"] = "nobind"
    if "OMP_NUM_THREADS" not in environ:
        env["OMP_NUM_THREADS"] = str(omp_threads())
    return env
