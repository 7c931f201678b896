"""CPU serving engine on Hugging Face transformers.

One worker thread owns generation. Active requests are interleaved token by token (round
robin): each request keeps its own KV cache, so a long completion never blocks a new request's
first token, and concurrent requests all make progress. Weight updates replace the model
reference under a lock; each request pins the (model, version) pair it was admitted with, so a
completion is produced entirely by one weight version and serving never pauses for an update.
"""

from __future__ import annotations

import asyncio
import copy
import logging
import random
import threading
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import AsyncIterator, Mapping, Sequence

import torch

from openclaw_rl.engine.base import (Engine, EngineError, GenerationOutput, PromptTooLongError,
                                     SamplingParams, TokenEvent)
from openclaw_rl.engine.grammar import GrammarConstraint, grammar_tokenizer
from openclaw_rl.engine.sampling import sample_next_token
from openclaw_rl.engine.weight_check import (InvalidWeightsError, check_state_dict, load_checked_adapter,
                                             load_checked_model)
from openclaw_rl.models import load_model, resolve_model_path

log = logging.getLogger(__name__)
_DONE = object()


@dataclass(eq=False)
class _Request:
    prompt_ids: list[int]
    params: SamplingParams
    model: torch.nn.Module
    version: int
    loop: asyncio.AbstractEventLoop
    queue: asyncio.Queue
    result: GenerationOutput
    max_new: int
    stop_ids: frozenset[int]
    generator: torch.Generator
    cache: object = None
    next_input: list[int] = field(default_factory=list)
    cancelled: bool = False
    constraint: GrammarConstraint | None = None

    def emit(self, item) -> None:
        try:
            self.loop.call_soon_threadsafe(self.queue.put_nowait, item)
        except RuntimeError:  # the consumer's event loop is gone: nobody is listening any more
            self.cancelled = True


class TransformersEngine(Engine):
    supports_grammar = True

    """:class:`Engine` on a transformers causal LM, CPU (or one CUDA device).

    Args:
        model_path: a Hugging Face folder or ``builtin:`` name (see :mod:`openclaw_rl.models`).
        device: torch device string; default ``"cpu"``.
        dtype: model dtype; default float32.
        max_context: context window; default the model's ``max_position_embeddings``.
    """

    def __init__(self, model_path: str, device: str = "cpu", dtype: torch.dtype | None = None,
                 max_context: int | None = None):
        self.model_path = str(model_path)
        self.device = torch.device(device)
        self.dtype = dtype or torch.float32
        self._model = load_model(model_path, dtype=self.dtype).to(self.device)
        self._version = 0
        cfg = self._model.config
        self.max_context = int(max_context or getattr(cfg, "max_position_embeddings", 4096))
        eos = self._model.generation_config.eos_token_id
        eos = [eos] if isinstance(eos, int) else list(eos or [])
        from transformers import AutoTokenizer
        self.tokenizer = tok = AutoTokenizer.from_pretrained(resolve_model_path(model_path))
        eos += [i for i in (tok.eos_token_id, tok.convert_tokens_to_ids("<|im_end|>"),
                            tok.convert_tokens_to_ids("<|endoftext|>")) if isinstance(i, int)]
        self.eos_token_ids = frozenset(i for i in eos if i is not None and 0 <= i < cfg.vocab_size)
        self._lock = threading.Lock()
        self._cond = threading.Condition()
        self._incoming: deque[_Request] = deque()
        self._stopped = False
        self._worker = threading.Thread(target=self._run, name="engine-worker", daemon=True)
        self._worker.start()

    # ------------------------------------------------------------------ interface
    @property
    def weight_version(self) -> int:
        return self._version

    async def generate_stream(self, prompt_ids: Sequence[int], params: SamplingParams,
                              result: GenerationOutput | None = None) -> AsyncIterator[TokenEvent]:
        prompt = [int(i) for i in prompt_ids]
        if not prompt:
            raise EngineError("prompt is empty")
        if len(prompt) + 1 > self.max_context:
            raise PromptTooLongError(len(prompt), self.max_context)
        if self._stopped:
            raise EngineError("engine is closed")
        result = result if result is not None else GenerationOutput(prompt_ids=prompt)
        result.prompt_ids = prompt
        with self._lock:
            model, version = self._model, self._version
        result.weight_version = version
        constraint = None
        if params.grammar is not None:  # off the event loop: the first build holds the GIL for seconds
            constraint = await asyncio.to_thread(self._new_constraint, params.grammar)
        seed = (params.seed % 2 ** 63) if params.seed is not None else random.getrandbits(63)
        req = _Request(prompt_ids=prompt, params=params, model=model, version=version,
                       loop=asyncio.get_running_loop(), queue=asyncio.Queue(), result=result,
                       max_new=max(1, min(params.max_new_tokens, self.max_context - len(prompt))),
                       stop_ids=self.eos_token_ids | frozenset(params.stop_token_ids),
                       generator=torch.Generator().manual_seed(seed), next_input=prompt,
                       constraint=constraint)
        with self._cond:
            self._incoming.append(req)
            self._cond.notify()
        finished = False
        try:
            while True:
                item = await req.queue.get()
                if item is _DONE:
                    finished = True
                    return
                if isinstance(item, BaseException):
                    finished = True
                    raise item
                yield item
        finally:
            if not finished:
                req.cancelled = True
                result.finish_reason = "abort"

    def warm_up(self) -> None:
        """Build the grammar tokenizer and llguidance's first mask (~4 s of CPU on a 150k vocabulary,
        most of it holding the GIL) with a trivial grammar; thread-safe (the tokenizer is built once)."""
        self._new_constraint('start: "a"')

    def _new_constraint(self, grammar: str) -> GrammarConstraint:
        """The matcher of one request with its first mask computed (blocking; run on a thread).

        Raises:
            EngineError: the grammar does not compile.
        """
        vocab = int(self._model.config.vocab_size)
        try:
            constraint = GrammarConstraint(grammar_tokenizer(self.tokenizer, vocab, self.eos_token_ids),
                                           grammar, vocab)
            constraint.allowed_V()
        except ValueError as exc:
            raise EngineError(str(exc)) from exc
        return constraint

    def load_weights(self, source: str | Mapping[str, object], version: int | None = None) -> int:
        if version is not None and int(version) < self._version:
            raise ValueError(f"weight version {version} is older than the served version {self._version}")
        new_model = self._materialise(source)
        with self._lock:
            new_version = self._version + 1 if version is None else int(version)
            if new_version < self._version:
                raise ValueError(f"weight version {new_version} is older than the served "
                                 f"version {self._version}")
            self._model, self._version = new_model, new_version
        log.info("weights swapped in: version %d", new_version)
        return new_version

    async def aclose(self) -> None:
        with self._cond:
            self._stopped = True
            self._cond.notify()
        await asyncio.to_thread(self._worker.join, 10)

    # ------------------------------------------------------------------ internals
    def current_model(self) -> torch.nn.Module:
        """The model new requests are served with (read-only use)."""
        with self._lock:
            return self._model

    def _materialise(self, source: str | Mapping[str, object]) -> torch.nn.Module:
        """Load and check new weights (see :mod:`openclaw_rl.engine.weight_check`).

        Raises:
            InvalidWeightsError: anything that does not fit the served model, named.
        """
        served = self.current_model()
        if isinstance(source, Mapping):
            model = copy.deepcopy(served)
            check_state_dict(served.state_dict(), source, "the state_dict")
            try:
                model.load_state_dict(dict(source), strict=True)
            except RuntimeError as exc:
                raise InvalidWeightsError(f"state_dict does not match the served model: {exc}") from exc
            return model.eval()
        path = Path(source)
        if not path.is_dir():
            raise InvalidWeightsError(f"{source!r} is not a folder")
        if (path / "adapter_config.json").is_file():
            return load_checked_adapter(path, lambda: load_model(self.model_path, dtype=self.dtype),
                                        served).to(self.device)
        if (path / "config.json").is_file():
            return load_checked_model(path, served, self.dtype).to(self.device)
        raise InvalidWeightsError(f"{source!r} is neither a model folder (config.json) nor a LoRA "
                                  "adapter folder (adapter_config.json)")

    def _run(self) -> None:
        active: list[_Request] = []
        while True:
            with self._cond:
                while not self._incoming and not active and not self._stopped:
                    self._cond.wait()
                if self._stopped:
                    for req in active + list(self._incoming):
                        req.result.finish_reason = "abort"
                        req.emit(_DONE)
                    return
                while self._incoming:
                    active.append(self._incoming.popleft())
            for req in list(active):
                try:
                    finished = req.cancelled or self._step(req)
                except Exception as exc:  # never let one request kill the worker, nor leave it waiting
                    log.exception("engine worker: request failed")
                    req.emit(EngineError(f"generation failed: {exc}"))
                    finished = True
                if finished:
                    active.remove(req)

    def _step(self, req: _Request) -> bool:
        """Feed the pending input of ``req`` and sample one token; True when it is finished."""
        try:
            with torch.inference_mode():
                ids = torch.tensor([req.next_input], dtype=torch.long, device=self.device)
                out = req.model(input_ids=ids, cache=req.cache, use_cache=True,
                                logits_to_keep=1)
            req.cache = out.cache
            allowed = req.constraint.allowed_V() if req.constraint is not None else None
            event = sample_next_token(out.logits[0, -1], req.params, req.generator, allowed)
            if req.constraint is not None and event.token_id not in req.stop_ids:
                req.constraint.consume(event.token_id)
        except Exception as exc:  # a failing request must not stop the worker
            log.exception("generation failed")
            req.emit(EngineError(f"generation failed: {exc}"))
            return True
        res = req.result
        res.token_ids.append(event.token_id)
        res.logprobs.append(event.logprob)
        res.top_logprobs.append(list(event.top_logprobs))
        req.next_input = [event.token_id]
        done = False
        if event.token_id in req.stop_ids:
            res.finish_reason, done = "stop", True
        elif len(res.token_ids) >= req.max_new:
            res.finish_reason, done = "length", True
        req.emit(event)
        if done:
            req.cache = None
            req.emit(_DONE)
        return done
