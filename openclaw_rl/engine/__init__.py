"""Serving engines behind one interface (:class:`Engine`)."""

from openclaw_rl.engine.base import (Engine, EngineError, GenerationOutput, PromptTooLongError,
                                     SamplingParams, TokenEvent)
from openclaw_rl.engine.weight_check import InvalidWeightsError


def create_engine(backend: str, model_path: str, **kwargs) -> Engine:
    """Build the engine for ``--backend``.

    Args:
        backend: ``transformers`` (in this process, CPU or one GPU), ``vllm`` or ``sglang``
            (engine servers, :func:`openclaw_rl.engine.engine_servers.remote_engine`)
            (:data:`openclaw_rl.server.config.BACKENDS`).
        model_path: a Hugging Face folder or ``builtin:`` name.
        **kwargs: the backend's options (:func:`openclaw_rl.server.engine_options`).

    Raises:
        ValueError: an unknown backend, or a missing engine environment.
        EngineError: an engine server did not start.
    """
    if backend == "transformers":
        from openclaw_rl.engine.transformers_engine import TransformersEngine
        return TransformersEngine(model_path, **kwargs)
    if backend in ("vllm", "sglang"):
        from openclaw_rl.engine.engine_servers import remote_engine
        return remote_engine(backend, model_path, **kwargs)
    raise ValueError(f"unknown backend {backend!r}; the engines that exist: transformers, vllm, sglang")


__all__ = ["Engine", "EngineError", "GenerationOutput", "InvalidWeightsError", "PromptTooLongError", "SamplingParams",
           "TokenEvent", "create_engine"]
