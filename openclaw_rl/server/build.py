"""Build the intercept server from its settings: the engine, the tokenizer (and image processor),
the trajectory store and recorder, admission control and the FastAPI app
(``python -m openclaw_rl.server`` serves what :func:`build_server` returns)."""

from __future__ import annotations

import logging
import shlex
import threading

from openclaw_rl.server.config import REMOTE_BACKENDS, ServerConfig

__all__ = ["build_server", "engine_options"]

log = logging.getLogger(__name__)


def _warm_up(engine) -> None:
    try:
        engine.warm_up()
    except Exception:  # a failed warm-up only means the first forced call builds it instead
        log.exception("grammar warm-up failed")


def engine_options(config: "ServerConfig") -> dict:
    """The keyword arguments of :func:`openclaw_rl.engine.create_engine` for ``config``."""
    if config.backend not in REMOTE_BACKENDS:
        return {"device": config.device, "max_context": config.max_context,
                "max_batch_size": config.max_batch_size, "prefill_chunk_tokens": config.prefill_chunk_tokens}
    return {"max_context": config.max_context, "engine_urls": config.engine_url,
            "engine_python": config.engine_python, "rollout_gpus": config.rollout_gpus,
            "gpus_per_engine": config.rollout_num_gpus_per_engine, "engine_args": shlex.split(config.engine_args),
            "log_dir": config.engine_logs, "start_timeout": config.engine_start_timeout,
            "kv_cache_gib": config.engine_kv_cache_gib}


def build_server(config: "ServerConfig", engine=None):
    """Build the FastAPI app, engine and store for a :class:`ServerConfig`.

    Args:
        config: the server's settings.
        engine: an engine already built for ``config.model_path`` (e.g. one wrapped to inject
            faults in tests); default: built from ``config``.

    Returns:
        ``(app, engine, store)``; ``store`` is None without ``--enable-rl-intercept``. The
        graceful-shutdown state (:class:`openclaw_rl.server.shutdown.Drain`) is
        ``app.state.drain``, the :class:`openclaw_rl.server.chat.ChatService` ``app.state.service``.

    Raises:
        ValueError: bad model path, backend or side-turn rules file.
    """
    from openclaw_rl.capture.failures import CaptureFailures
    from openclaw_rl.capture.lessons import LessonBook, LessonPrompt
    from openclaw_rl.capture.recorder import Recorder
    from openclaw_rl.capture.store import TrajectoryStore
    from openclaw_rl.capture.turn_rules import TurnRules
    from openclaw_rl.engine import create_engine
    from openclaw_rl.models import load_tokenizer, resolve_model_path
    from openclaw_rl.vl_models import load_processor
    from openclaw_rl.server.admission import AdmissionControl
    from openclaw_rl.server.app import create_app
    from openclaw_rl.server.chat import ChatService
    from openclaw_rl.server.shutdown import Drain

    if config.torch_threads > 0:
        import torch
        torch.set_num_threads(config.torch_threads)
    rules = TurnRules.from_file(config.side_turn_rules) if config.side_turn_rules else TurnRules()
    if engine is None:
        engine = create_engine(config.backend, config.model_path, **engine_options(config))
    if config.grammar_warmup and engine.supports_grammar:
        threading.Thread(target=_warm_up, args=(engine,), name="grammar-warmup", daemon=True).start()
    tokenizer = load_tokenizer(config.model_path)
    processor = load_processor(resolve_model_path(config.model_path))  # None for a text-only model
    store = recorder = lessons = None
    admission = AdmissionControl(config.max_running_requests, config.max_queued_requests)
    if config.enable_rl_intercept:
        failures = CaptureFailures(admission.registry)
        store = TrajectoryStore(config.rl_buffer_dir)
        recorder = Recorder(store, rules, idle_timeout=config.session_idle_timeout, failures=failures)
        if config.inject_lessons:
            lessons = LessonPrompt(LessonBook(store), config.inject_lessons)
    drain = Drain(config.shutdown_grace_seconds)
    service = ChatService(engine, tokenizer, config.model_name, recorder,
                          default_max_tokens=config.default_max_tokens,
                          default_temperature=config.default_temperature, admission=admission, drain=drain,
                          processor=processor, lessons=lessons)
    app = create_app(service, api_key=config.api_key, recorder=recorder, engine_close=engine.aclose,
                     max_request_bytes=config.max_request_bytes, admin_api_key=config.admin_api_key,
                     weights_dirs=config.weights_dir, base_model_path=str(resolve_model_path(config.model_path)),
                     resume_served_version=config.resume_served_version, metrics_dir=config.metrics_dir,
                     forget_log_dirs=config.forget_log_dirs)
    app.state.drain, app.state.service = drain, service
    return app, engine, store
