"""Command line of the intercept server (``python -m openclaw_rl.server`` / ``openclaw-rl serve``).

Flags fall back to environment variables: ``BASE_MODEL_PATH``, ``OPENCLAW_HOST``,
``OPENCLAW_PORT``, ``OPENCLAW_API_KEY``, ``OPENCLAW_ADMIN_API_KEY``.

Binding to an address other than loopback without ``--api-key`` is refused (anyone who reaches
the port could use the model and swap its weights through ``/admin``) unless
``--insecure-no-auth`` says so on purpose.
"""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass
from pathlib import Path

from openclaw_rl.engine.defaults import DEFAULT_MAX_BATCH_SIZE, DEFAULT_PREFILL_CHUNK_TOKENS
from openclaw_rl.models import DEFAULT_MODEL
from openclaw_rl.server.admission import DEFAULT_MAX_QUEUED, DEFAULT_MAX_RUNNING
from openclaw_rl.server.limits import DEFAULT_MAX_REQUEST_BYTES
from openclaw_rl.server.shutdown import DEFAULT_SHUTDOWN_GRACE

#: engines ``--backend`` offers (:func:`openclaw_rl.engine.create_engine`): transformers in this
#: process; vLLM and SGLang as engine servers of their own (:mod:`openclaw_rl.engine.engine_servers`)
BACKENDS = ("transformers", "vllm", "sglang")
#: the backends that run as engine servers
REMOTE_BACKENDS = ("vllm", "sglang")


@dataclass(frozen=True)
class ServerConfig:
    """Immutable server settings (see :func:`build_parser` for each flag's meaning)."""

    model_path: str = DEFAULT_MODEL
    host: str = "127.0.0.1"
    port: int = 30000
    backend: str = "transformers"
    device: str = "cpu"
    enable_rl_intercept: bool = False
    rl_buffer_dir: str = "./rl_buffer"
    api_key: str | None = None
    served_model_name: str | None = None
    session_idle_timeout: float = 600.0
    side_turn_rules: str | None = None
    max_context: int | None = None
    default_max_tokens: int = 512
    default_temperature: float = 1.0
    torch_threads: int = 0
    log_level: str = "info"
    max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES
    insecure_no_auth: bool = False
    grammar_warmup: bool = True
    resume_served_version: bool = True
    admin_api_key: str | None = None
    weights_dir: tuple[str, ...] = ()
    max_running_requests: int = DEFAULT_MAX_RUNNING
    max_queued_requests: int = DEFAULT_MAX_QUEUED
    shutdown_grace_seconds: float = DEFAULT_SHUTDOWN_GRACE
    engine_url: tuple[str, ...] = ()
    engine_python: str | None = None
    rollout_gpus: str = ""
    rollout_num_gpus_per_engine: int = 1
    engine_args: str = ""
    engine_log_dir: str | None = None
    engine_start_timeout: float = 900.0
    engine_kv_cache_gib: int | None = None
    max_batch_size: int = DEFAULT_MAX_BATCH_SIZE
    prefill_chunk_tokens: int = DEFAULT_PREFILL_CHUNK_TOKENS
    inject_lessons: int = 0
    metrics_dir: str | None = None
    run_log_dir: tuple[str, ...] = ()

    @property
    def forget_log_dirs(self) -> tuple[str, ...]:
        """The run's log folders ``forget`` scrubs: ``--run-log-dir``, else ``--metrics-dir``."""
        return self.run_log_dir or ((self.metrics_dir,) if self.metrics_dir else ())

    @property
    def model_name(self) -> str:
        """Name reported by ``/v1/models`` (``--served-model-name`` or the path's last part)."""
        if self.served_model_name:
            return self.served_model_name
        return self.model_path if self.model_path.startswith("builtin:") else Path(self.model_path).name

    @property
    def engine_logs(self) -> Path:
        """Folder of the engine servers' logs: ``--engine-log-dir``, default ``logs/`` inside
        ``--rl-buffer-dir`` (the server's own folder, never the current directory itself)."""
        return Path(self.engine_log_dir) if self.engine_log_dir else Path(self.rl_buffer_dir) / "logs"


def _env_int(name: str, default: int) -> int:
    value = os.environ.get(name)
    if value is None:
        return default
    try:
        return int(value)
    except ValueError:
        raise SystemExit(f"openclaw-rl serve: error: {name}={value!r} is not an integer") from None


def build_parser() -> argparse.ArgumentParser:
    """The server's argument parser."""
    p = argparse.ArgumentParser(prog="openclaw-rl serve",
                                description="OpenAI-compatible server that records conversations for RL.")
    p.add_argument("--model-path", default=os.environ.get("BASE_MODEL_PATH", DEFAULT_MODEL),
                   help="HF model folder or builtin:smollm2-135m / builtin:tiny-qwen3 (env BASE_MODEL_PATH)")
    p.add_argument("--host", default=os.environ.get("OPENCLAW_HOST", "127.0.0.1"), help="env OPENCLAW_HOST")
    p.add_argument("--port", type=int, default=_env_int("OPENCLAW_PORT", 30000), help="env OPENCLAW_PORT")
    p.add_argument("--backend", default="transformers", choices=list(BACKENDS),
                   help="inference engine: transformers (in this process), vllm or sglang (engine servers in "
                        "their own environment; the intercept server sends them token ids and records what they sample)")
    e = p.add_argument_group("engine servers (--backend vllm / sglang)")
    e.add_argument("--engine-url", action="append", default=[],
                   help="a running engine server to use (repeatable: one per replica; vLLM started with "
                        "VLLM_SERVER_DEV_MODE=1 --enable-scale-out --logprobs-mode processed_logprobs). Without it, "
                        "the servers are started here and stopped with this one")
    e.add_argument("--engine-python", default=None,
                   help="interpreter of the engine's environment (default .venv-vllm/bin/python from `make vllm`, "
                        "or .venv-sglang/bin/python)")
    e.add_argument("--rollout-gpus", default=os.environ.get("ROLLOUT_GPUS", ""),
                   help="GPUs of the engine replicas: a count or a list of ids such as 0,1,2,3 (env ROLLOUT_GPUS; "
                        "unset or 0: one replica on the CPU)")
    e.add_argument("--rollout-num-gpus-per-engine", type=int, default=1,
                   help="GPUs per replica (tensor parallelism); ROLLOUT_GPUS / this = the number of replicas")
    e.add_argument("--engine-args", default="", help="more flags for each engine server, one string (shell words)")
    e.add_argument("--engine-log-dir", default=None,
                   help="folder of the engine servers' logs (default: logs/ inside --rl-buffer-dir)")
    e.add_argument("--engine-start-timeout", type=float, default=900.0,
                   help="seconds to wait for the engine servers to answer")
    e.add_argument("--engine-kv-cache-gib", type=int, default=None,
                   help="vLLM on CPU: GiB of KV cache (VLLM_CPU_KVCACHE_SPACE, which wins when set). Default: "
                        "room for 4 full context windows, at most a quarter of the memory available at start "
                        "after the weights, at least one window. On GPUs vLLM's --gpu-memory-utilization applies")
    p.add_argument("--device", default="cpu", help="torch device for the transformers backend")
    p.add_argument("--enable-rl-intercept", action="store_true", help="record every turn for training")
    p.add_argument("--rl-buffer-dir", default="./rl_buffer", help="folder of the trajectory store")
    p.add_argument("--api-key", default=os.environ.get("OPENCLAW_API_KEY"),
                   help="require 'Authorization: Bearer KEY' (env OPENCLAW_API_KEY)")
    p.add_argument("--admin-api-key", default=os.environ.get("OPENCLAW_ADMIN_API_KEY"),
                   help="key of the /admin endpoints (weight updates; env OPENCLAW_ADMIN_API_KEY); without it they "
                        "accept only local clients (with --api-key when set)")
    p.add_argument("--weights-dir", action="append", default=[],
                   help="weight updates load only from folders under this one (repeatable; a training run gives its "
                        "publish folder; default: any folder)")
    p.add_argument("--served-model-name", default=None,
                   help="model name /v1/models reports (default: the model path's last part)")
    p.add_argument("--session-idle-timeout", type=float, default=600.0,
                   help="seconds of silence that end a session (its last turn gets no next state)")
    p.add_argument("--side-turn-rules", default=None, help="JSON file of side-turn rules")
    p.add_argument("--max-context", type=int, default=None, help="override the context window")
    p.add_argument("--default-max-tokens", type=int, default=512,
                   help="completion budget when a request sets no max_tokens")
    p.add_argument("--default-temperature", type=float, default=1.0,
                   help="temperature when a request sets none (0 = greedy)")
    p.add_argument("--max-batch-size", type=int, default=DEFAULT_MAX_BATCH_SIZE,
                   help="transformers backend: most requests decoded together in one forward pass (continuous "
                        f"batching; default {DEFAULT_MAX_BATCH_SIZE}); 1 = no batching, one forward pass per "
                        "request per token, requests interleaved")
    p.add_argument("--prefill-chunk-tokens", type=int, default=DEFAULT_PREFILL_CHUNK_TOKENS,
                   help="transformers backend: most (padded) prompt tokens per prefill forward pass; longer prompts "
                        "are fed in chunks between decode steps, so they do not stall running requests "
                        f"(default {DEFAULT_PREFILL_CHUNK_TOKENS})")
    p.add_argument("--torch-threads", type=int, default=0,
                   help="torch CPU threads (0: torch's default, one per core). Use 1 when the CPU is "
                        "shared with a trainer: oversubscribed threads slow decoding several times")
    p.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"],
                   help="server log level")
    p.add_argument("--max-request-bytes", type=int, default=DEFAULT_MAX_REQUEST_BYTES,
                   help=f"larger request bodies get 413 before they are read (default {DEFAULT_MAX_REQUEST_BYTES})")
    p.add_argument("--max-running-requests", type=int, default=DEFAULT_MAX_RUNNING,
                   help=f"requests generating at once (default {DEFAULT_MAX_RUNNING})")
    p.add_argument("--max-queued-requests", type=int, default=DEFAULT_MAX_QUEUED,
                   help=f"requests waiting for a running slot; beyond, 429 with Retry-After (default {DEFAULT_MAX_QUEUED})")
    p.add_argument("--shutdown-grace-seconds", type=float, default=DEFAULT_SHUTDOWN_GRACE,
                   help="on SIGTERM / Ctrl-C: stop accepting connections, give requests in flight this long to "
                        "finish, then end the generations still running with finish reason 'length' (their turns "
                        f"are recorded), close the store and exit 0 (default {DEFAULT_SHUTDOWN_GRACE:g})")
    p.add_argument("--grammar-warmup", action=argparse.BooleanOptionalAction,
                   default=os.environ.get("OPENCLAW_GRAMMAR_WARMUP", "1").strip().lower() not in ("0", "false", "no"),
                   help="build the constrained-decoding tables (forced tool calls) on a thread at start, so the "
                        "first forced call does not hold the GIL for seconds while others are served (default on; "
                        "--no-grammar-warmup or env OPENCLAW_GRAMMAR_WARMUP=0 saves ~4 s of CPU at start and "
                        "~100 MB when tool_choice is never forced: the first forced call then builds them, "
                        "off the event loop)")
    p.add_argument("--resume-served-version", action=argparse.BooleanOptionalAction, default=True,
                   help="with --enable-rl-intercept, a restart on the same --rl-buffer-dir serves again the weight "
                        "version it served last (GET /admin/versions), when its folder is still there; "
                        "--no-resume-served-version starts from --model-path (a training job's server: the trainer "
                        "publishes what it resumes from)")
    p.add_argument("--inject-lessons", type=int, default=0, metavar="N",
                   help="with --enable-rl-intercept, add the top N lessons (accepted hindsight hints, de-duplicated; "
                        "openclaw-rl lessons) to the system prompt of served requests, so a lesson takes effect "
                        "before the weights learn it (default 0: off)")
    p.add_argument("--metrics-dir", default=None,
                   help="a training run's --log-dir: /dashboard shows the steps of its newest metrics.jsonl "
                        "(the training job passes its own)")
    p.add_argument("--run-log-dir", action="append", default=[], metavar="DIR",
                   help="a folder of the run's log files (server-*.log, run.log, ...; repeatable): forgetting a "
                        "conversation also removes its lines from the *.log, *.out, *.err, *.txt and *.jsonl files "
                        "under it (default: --metrics-dir)")
    p.add_argument("--insecure-no-auth", action="store_true",
                   help="allow a non-loopback --host without --api-key (anyone reaching the port can use the model "
                        "and its /admin endpoints)")
    return p


def is_loopback(host: str) -> bool:
    """Whether ``host`` names only this machine (``localhost``, 127.0.0.0/8, ``::1``)."""
    import ipaddress

    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def parse_server_args(argv: list[str] | None = None) -> ServerConfig:
    """Parse argv (default ``sys.argv[1:]``) into a :class:`ServerConfig`; exits 2 on bad flags."""
    parser = build_parser()
    ns = parser.parse_args(argv)
    if not 0 < ns.port < 65536:
        parser.error(f"--port must be in 1..65535, got {ns.port}")
    if not 0.0 <= ns.default_temperature <= 2.0:
        parser.error("--default-temperature must be in [0, 2]")
    if ns.max_context is not None and ns.max_context < 2:
        parser.error("--max-context must be at least 2 tokens")
    if ns.session_idle_timeout <= 0:
        parser.error("--session-idle-timeout must be positive")
    if ns.max_running_requests < 1 or ns.max_queued_requests < 0:
        parser.error("--max-running-requests must be >= 1 and --max-queued-requests >= 0")
    if ns.max_batch_size < 1 or ns.prefill_chunk_tokens < 1:
        parser.error("--max-batch-size and --prefill-chunk-tokens must be >= 1")
    if ns.inject_lessons < 0:
        parser.error("--inject-lessons must be >= 0")
    if ns.inject_lessons and not ns.enable_rl_intercept:
        parser.error("--inject-lessons needs --enable-rl-intercept (the lessons live in the trajectory store)")
    if ns.shutdown_grace_seconds < 0:
        parser.error("--shutdown-grace-seconds must be >= 0")
    if ns.max_request_bytes < 1024:
        parser.error("--max-request-bytes must be at least 1024")
    if not is_loopback(ns.host) and not ns.api_key and not ns.insecure_no_auth:
        parser.error(f"--host {ns.host} is reachable from other machines: give --api-key KEY (or OPENCLAW_API_KEY), "
                     "or --insecure-no-auth to serve without authentication")
    if ns.backend not in REMOTE_BACKENDS and ns.engine_url:
        parser.error(f"--engine-url needs --backend vllm or sglang (got --backend {ns.backend})")
    if ns.engine_kv_cache_gib is not None and ns.engine_kv_cache_gib < 1:
        parser.error("--engine-kv-cache-gib must be at least 1")
    if ns.rollout_num_gpus_per_engine < 1:
        parser.error("--rollout-num-gpus-per-engine must be at least 1")
    ns.weights_dir = tuple(str(Path(d).resolve()) for d in ns.weights_dir)
    ns.engine_url = tuple(ns.engine_url)
    ns.run_log_dir = tuple(str(Path(d).resolve()) for d in ns.run_log_dir)
    return ServerConfig(**vars(ns))
