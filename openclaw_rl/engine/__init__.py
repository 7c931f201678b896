"""Serving engines behind one interface (:class:`Engine`)."""

from openclaw_rl.engine.base import (Engine, EngineError, GenerationOutput, PromptTooLongError,
                                     SamplingParams, TokenEvent)
from openclaw_rl.engine.weight_check import InvalidWeightsError


def create_engine(backend: str, model_path: str, **kwargs) -> Engine:
    """Build the engine for ``--backend``.

    Args:
        backend: ``transformers`` (CPU or one GPU). ``vllm`` and ``sglang`` are GPU backends
            implementing the same interface; they are imported only when asked for.
        model_path: a Hugging Face folder or ``builtin:`` name.

    Raises:
        ValueError: unknown backend, or a backend whose package is not installed.
    """
    if backend == "transformers":
        from openclaw_rl.engine.transformers_engine import TransformersEngine
        return TransformersEngine(model_path, **kwargs)
    if backend in ("vllm", "sglang"):
        raise ValueError(f"backend {backend!r} needs a GPU and its package installed; "
                         "use --backend transformers on CPU")
    raise ValueError(f"unknown backend {backend!r}; choose transformers, vllm or sglang")


__all__ = ["Engine", "EngineError", "GenerationOutput", "InvalidWeightsError", "PromptTooLongError", "SamplingParams",
           "TokenEvent", "create_engine"]
