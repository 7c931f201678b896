"""Serving engines behind one interface (:class:`Engine`)."""

from openclaw_rl.engine.base import (Engine, EngineError, GenerationOutput, PromptTooLongError,
                                     SamplingParams, TokenEvent)
from openclaw_rl.engine.weight_check import InvalidWeightsError


def create_engine(backend: str, model_path: str, **kwargs) -> Engine:
    """Build the engine for ``--backend``.

    Args:
        backend: ``transformers`` (CPU or one GPU), the one engine implemented so far
            (:data:`openclaw_rl.server.config.BACKENDS`).
        model_path: a Hugging Face folder or ``builtin:`` name.

    Raises:
        ValueError: an unknown backend.
    """
    if backend == "transformers":
        from openclaw_rl.engine.transformers_engine import TransformersEngine
        return TransformersEngine(model_path, **kwargs)
    raise ValueError(f"unknown backend {backend!r}; the engines that exist: transformers")


__all__ = ["Engine", "EngineError", "GenerationOutput", "InvalidWeightsError", "PromptTooLongError", "SamplingParams",
           "TokenEvent", "create_engine"]
