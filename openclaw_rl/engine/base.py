"""The engine interface: token ids in, sampled token ids + logprobs + weight version out.

Every serving backend (transformers in this process; vLLM and SGLang as engine servers) implements
:class:`Engine`. The server never re-tokenizes what the engine sampled: the ids and logprobs a
backend yields are exactly what capture records and the trainer trains on.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass, field
from typing import AsyncIterator, Mapping, Sequence


class EngineError(RuntimeError):
    """Base class for engine failures."""


class PromptTooLongError(EngineError, ValueError):
    """The prompt does not fit in the model's context window (prompt + 1 new token)."""

    def __init__(self, prompt_tokens: int, max_context: int):
        super().__init__(f"prompt has {prompt_tokens} tokens but the model's context is "
                         f"{max_context} tokens (at least one new token must fit)")
        self.prompt_tokens = prompt_tokens
        self.max_context = max_context


def check_prompt(prompt_ids: Sequence[int], max_context: int, closed: bool) -> list[int]:
    """The checks every engine makes before it generates: the prompt as a list of ints.

    Args:
        prompt_ids: the prompt's token ids.
        max_context: the engine's context window in tokens.
        closed: whether the engine has been closed.

    Returns:
        ``prompt_ids`` as a new ``list[int]``.

    Raises:
        EngineError: the prompt is empty, or the engine is closed.
        PromptTooLongError: the prompt leaves no room for one new token.
    """
    prompt = [int(i) for i in prompt_ids]
    if not prompt:
        raise EngineError("prompt is empty")
    if len(prompt) + 1 > max_context:
        raise PromptTooLongError(len(prompt), max_context)
    if closed:
        raise EngineError("engine is closed")
    return prompt


@dataclass(frozen=True)
class SamplingParams:
    """How to sample one completion.

    Attributes:
        max_new_tokens: upper bound on sampled tokens (clipped to the context window).
        temperature: softmax temperature; ``0`` means greedy decoding.
        top_p: nucleus mass in (0, 1]; ``1`` disables it.
        seed: per-request RNG seed; the same seed, prompt and weights give the same tokens.
        stop_token_ids: extra token ids that end generation (the tokenizer's EOS ids always do).
        top_logprobs: how many alternatives (0..20) to report per position.
        grammar: an llguidance Lark grammar the completion must follow (constrained decoding,
            see :mod:`openclaw_rl.engine.grammar`), or None. Only engines whose
            :attr:`Engine.supports_grammar` is True accept it.
        affinity_key: routing hint, not sampling: completions with the same key (the session id)
            go to the same engine replica, whose prefix cache holds the conversation
            (:mod:`openclaw_rl.engine.replicas`); engines with one replica ignore it.
    """

    max_new_tokens: int = 256
    temperature: float = 1.0
    top_p: float = 1.0
    seed: int | None = None
    stop_token_ids: tuple[int, ...] = ()
    top_logprobs: int = 0
    grammar: str | None = None
    affinity_key: str | None = None


@dataclass(frozen=True)
class TokenEvent:
    """One sampled token.

    Attributes:
        token_id: the sampled id.
        logprob: its log-probability (natural log) under the distribution it was sampled from,
            i.e. after temperature scaling and top-p renormalisation. For greedy decoding
            (temperature 0) the sampling distribution is degenerate, so the log-softmax of the raw
            (temperature 1) logits is reported instead. Under a grammar, the distribution is the
            constrained one (disallowed tokens have probability 0, the rest renormalised).
        top_logprobs: ``(token_id, logprob)`` pairs of the most likely tokens of that same
            distribution, best first; empty unless requested.
    """

    token_id: int
    logprob: float
    top_logprobs: tuple[tuple[int, float], ...] = ()


@dataclass
class GenerationOutput:
    """A finished completion.

    Attributes:
        prompt_ids: the exact prompt ids the engine consumed.
        token_ids: the sampled ids, in order, including a final EOS id when one was sampled.
        logprobs: one float per sampled id (see :class:`TokenEvent`).
        top_logprobs: per position, the alternatives (empty lists unless requested).
        finish_reason: ``"stop"`` (EOS / stop token), ``"length"`` (max_new_tokens or context
            full) or ``"abort"`` (the consumer stopped reading).
        weight_version: the weight version that produced every token of this completion.
    """

    prompt_ids: list[int]
    token_ids: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    top_logprobs: list[list[tuple[int, float]]] = field(default_factory=list)
    finish_reason: str = "length"
    weight_version: int = 0


class Engine(abc.ABC):
    """A serving backend.

    Implementations must serve concurrent :meth:`generate_stream` calls (by batching or by
    interleaving, never by rejecting), and :meth:`load_weights` must swap weights atomically:
    a completion runs entirely on one weight version, and no request waits for an update.
    """

    #: largest prompt + completion length in tokens.
    max_context: int
    #: ids that end a completion (the tokenizer's EOS, ``<|im_end|>``, ...).
    eos_token_ids: frozenset[int]
    #: whether :attr:`SamplingParams.grammar` is honoured (constrained decoding).
    supports_grammar: bool = False
    #: whether ``generate_stream(..., multimodal=...)`` takes images (a vision-language model on
    #: an engine that runs its vision tower; see :mod:`openclaw_rl.engine.multimodal`).
    supports_images: bool = False

    @property
    @abc.abstractmethod
    def weight_version(self) -> int:
        """The weight version new requests are served with (starts at 0, +1 per update)."""

    @abc.abstractmethod
    def generate_stream(self, prompt_ids: Sequence[int], params: SamplingParams,
                        result: GenerationOutput | None = None) -> AsyncIterator[TokenEvent]:
        """Sample a completion, yielding each token as soon as it is sampled.

        Args:
            prompt_ids: exact prompt token ids, shape [L].
            params: sampling parameters.
            result: if given, filled in as tokens are sampled (ids, logprobs, finish_reason,
                weight_version) so the caller holds the full record when the iterator ends.
                Closing the iterator early aborts generation (``finish_reason = "abort"``).

        Raises:
            PromptTooLongError: the prompt does not fit the context window.
        """

    async def generate(self, prompt_ids: Sequence[int], params: SamplingParams) -> GenerationOutput:
        """Sample a whole completion; same semantics as :meth:`generate_stream`."""
        out = GenerationOutput(prompt_ids=list(prompt_ids))
        async for _ in self.generate_stream(prompt_ids, params, out):
            pass
        return out

    @abc.abstractmethod
    def load_weights(self, source: str | Mapping[str, object], version: int | None = None,
                     allow_older: bool = False) -> int:
        """Swap in new weights without pausing serving.

        Args:
            source: a full ``state_dict`` (name -> tensor), a Hugging Face model folder, or a peft
                LoRA adapter folder (``adapter_config.json``; merged onto the base weights).
            version: the new weight version; default current + 1. Must not go backwards,
                unless ``allow_older`` (a rollback to an earlier version, ``POST /admin/rollback``).

        Returns:
            The weight version now served to new requests. In-flight requests finish on the
            version they started with.

        Raises:
            ValueError: ``version`` goes backwards; :class:`InvalidWeightsError` (a ValueError)
                when the new weights do not load or do not match the served model (checked
                before the swap, so the old weights keep serving).
        """

    def warm_up(self) -> None:
        """Build, once, what the first constrained request would otherwise build while serving
        (e.g. the grammar tokenizer). Blocking and thread-safe: the server calls it on a thread
        of its own at start. The default does nothing."""

    async def aclose(self) -> None:
        """Release resources (worker threads); pending requests end with ``abort``."""
