"""CPU serving engine on Hugging Face transformers, with continuous batching.

One worker thread owns generation and runs :class:`~openclaw_rl.engine.scheduler.BatchScheduler`:
concurrent requests are batched into one forward pass per token (rows left-padded in a shared
KV cache, :mod:`openclaw_rl.engine.batch_cache`), new requests are prefilled in chunks between
decode steps, and each row samples with its own temperature, top-p, seed (its own
``torch.Generator``) and grammar mask, so a request's tokens and logprobs are what it would get
alone (up to float rounding of the batched matmuls, well under 1e-4 in logprob).

transformers' own continuous batching (``generate_batch`` / ``ContinuousBatchingManager``, paged
attention) is not used: it samples every request from the process-wide RNG (no per-request
seed), applies one logits-processor set to all requests (no per-request grammar mask, no top
logprobs) and serves one model, so a request straddling a weight swap could not keep its weights.

Weight updates replace the model reference under a lock; each request pins the (model, version)
pair it was admitted with and batches never mix models, so a completion is produced entirely by
one weight version and serving never pauses for an update.
"""

from __future__ import annotations

import asyncio
import copy
import logging
import random
import threading
from collections import deque
from pathlib import Path
from typing import AsyncIterator, Mapping, Sequence

import torch

from openclaw_rl.engine.base import (Engine, EngineError, GenerationOutput, check_prompt,
                                     SamplingParams, TokenEvent)
from openclaw_rl.engine.batch_cache import batchable
from openclaw_rl.engine.defaults import DEFAULT_MAX_BATCH_SIZE, DEFAULT_PREFILL_CHUNK_TOKENS
from openclaw_rl.engine.grammar import GrammarConstraint, grammar_tokenizer
from openclaw_rl.engine.multimodal import decode_positions, is_multimodal_model, prefill_inputs
from openclaw_rl.engine.sampling import sample_next_token
from openclaw_rl.engine.scheduler import DONE, Batch, BatchScheduler, Request
from openclaw_rl.engine.weight_check import (InvalidWeightsError, check_state_dict, load_checked_adapter,
                                             load_checked_model)
from openclaw_rl.models import load_model, load_tokenizer

log = logging.getLogger(__name__)


class TransformersEngine(Engine):
    """:class:`Engine` on a transformers causal LM, CPU (or one CUDA device), continuously batched.

    Args:
        model_path: a Hugging Face folder or ``builtin:`` name (see :mod:`openclaw_rl.models`).
        device: torch device string; default ``"cpu"``.
        dtype: model dtype; default float32.
        max_context: context window; default the model's ``max_position_embeddings``.
        max_batch_size: most requests per forward pass (default 16); ``1`` disables batching
            (one forward pass per request per token, requests interleaved). Models whose cache
            is not a plain dynamic one (sliding-window or linear-attention layers) always use 1.
        prefill_chunk_tokens: most (padded) prompt tokens per prefill forward pass (default 256);
            a longer prompt is fed in chunks between the decode steps of running requests.

    Raises:
        ValueError: ``max_batch_size`` or ``prefill_chunk_tokens`` below 1.
    """

    supports_grammar = True

    def __init__(self, model_path: str, device: str = "cpu", dtype: torch.dtype | None = None,
                 max_context: int | None = None, max_batch_size: int = DEFAULT_MAX_BATCH_SIZE,
                 prefill_chunk_tokens: int = DEFAULT_PREFILL_CHUNK_TOKENS):
        if max_batch_size < 1 or prefill_chunk_tokens < 1:
            raise ValueError("max_batch_size and prefill_chunk_tokens must be >= 1")
        self.model_path = str(model_path)
        self.device = torch.device(device)
        self.dtype = dtype or torch.float32
        self._model = load_model(model_path, dtype=self.dtype).to(self.device)
        self._version = 0
        self.supports_images = is_multimodal_model(self._model)
        cfg = self._model.config.get_text_config()  # a vision-language config nests the text model's
        if max_batch_size > 1 and not batchable(cfg):
            log.warning("%s: the KV cache has sliding-window or non-attention layers; serving unbatched",
                        model_path)
            max_batch_size = 1
        self.max_batch_size, self.prefill_chunk_tokens = max_batch_size, prefill_chunk_tokens
        self._scheduler = BatchScheduler(self._forward, self._sample, self.device, max_batch_size,
                                         prefill_chunk_tokens)
        max_ctx = max_context or getattr(cfg, "max_position_embeddings", 4096)
        self.max_context = int(max_ctx)
        eos = self._model.generation_config.eos_token_id
        eos = [eos] if isinstance(eos, int) else list(eos or [])
        self.tokenizer = tok = load_tokenizer(model_path)  # shared in this process: only read
        eos += [i for i in (tok.eos_token_id, tok.convert_tokens_to_ids("<|im_end|>"),
                            tok.convert_tokens_to_ids("<|endoftext|>")) if isinstance(i, int)]
        self.eos_token_ids = frozenset(i for i in eos if i is not None and 0 <= i < cfg.vocab_size)
        self._lock = threading.Lock()
        self._cond = threading.Condition()
        self._incoming: deque[Request] = deque()
        self._stopped = False
        self._worker = threading.Thread(target=self._run, name="engine-worker", daemon=True)
        self._worker.start()

    # ------------------------------------------------------------------ interface
    @property
    def weight_version(self) -> int:
        return self._version

    async def generate_stream(self, prompt_ids: Sequence[int], params: SamplingParams,
                              result: GenerationOutput | None = None,
                              multimodal: Mapping[str, torch.Tensor] | None = None) -> AsyncIterator[TokenEvent]:
        """:meth:`Engine.generate_stream`; ``multimodal`` (``pixel_values`` / ``image_grid_thw`` of
        the prompt's images, processor outputs) needs :attr:`supports_images` (a vision-language
        model) and raises :class:`EngineError` otherwise or when the image tokens do not match."""
        prompt = check_prompt(prompt_ids, self.max_context, self._stopped)
        if multimodal is not None and not self.supports_images:
            raise EngineError(f"{self.model_path} is a text-only model; it takes no images")
        result = result if result is not None else GenerationOutput(prompt_ids=prompt)
        result.prompt_ids = prompt
        with self._lock:
            model, version = self._model, self._version
        result.weight_version = version
        constraint = None
        if params.grammar is not None:  # off the event loop: the first build holds the GIL for seconds
            constraint = await asyncio.to_thread(self._new_constraint, params.grammar)
        seed = (params.seed % 2 ** 63) if params.seed is not None else random.getrandbits(63)
        req = Request(prompt_ids=prompt, params=params, model=model, version=version,
                      loop=asyncio.get_running_loop(), queue=asyncio.Queue(), result=result,
                      max_new=max(1, min(params.max_new_tokens, self.max_context - len(prompt))),
                      stop_ids=self.eos_token_ids | frozenset(params.stop_token_ids),
                      generator=torch.Generator().manual_seed(seed), constraint=constraint,
                      multimodal=dict(multimodal) if multimodal is not None else None)
        with self._cond:
            self._incoming.append(req)
            self._cond.notify()
        finished = False
        try:
            while True:
                item = await req.queue.get()
                if item is DONE:
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
        vocab = int(self._model.config.get_text_config().vocab_size)
        try:
            constraint = GrammarConstraint(grammar_tokenizer(self.tokenizer, vocab, self.eos_token_ids),
                                           grammar, vocab)
            constraint.allowed_V()
        except ValueError as exc:
            raise EngineError(str(exc)) from exc
        return constraint

    def load_weights(self, source: str | Mapping[str, object], version: int | None = None,
                     allow_older: bool = False) -> int:
        if version is not None and int(version) < self._version and not allow_older:
            raise ValueError(f"weight version {version} is older than the served version {self._version}")
        new_model = self._materialise(source)
        with self._lock:
            new_version = self._version + 1 if version is None else int(version)
            if new_version < self._version and not allow_older:
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

    def batch_stats(self) -> dict[str, int]:
        """A snapshot of the scheduler: ``{"waiting", "running", "batches"}`` (requests queued
        for prefill, rows in batches, batches); approximate, read without the worker's lock."""
        incoming = len(self._incoming)
        stats = self._scheduler.stats()
        stats["waiting"] += incoming
        return stats

    def _run(self) -> None:
        sched = self._scheduler
        while True:
            with self._cond:
                while not self._incoming and sched.idle and not self._stopped:
                    self._cond.wait()
                if self._stopped:
                    while self._incoming:
                        sched.add(self._incoming.popleft())
                    sched.abort_all()
                    return
                while self._incoming:
                    sched.add(self._incoming.popleft())
            try:
                sched.iterate()
            except Exception as exc:  # a scheduler bug: fail what is running, keep the worker alive
                log.exception("engine worker: iteration failed")
                for req in list(sched.waiting) + [r for b in sched.batches for r in b.rows]:
                    req.emit(EngineError(f"generation failed: {exc}"))
                sched.waiting.clear()
                sched.batches.clear()

    def _forward(self, batch: Batch, input_ids_B_C: torch.Tensor, new_mask_B_C: torch.Tensor) -> torch.Tensor:
        """One forward pass of ``batch`` on its own model, appending ``C`` columns to its cache.

        Args:
            batch: the rows (their model and left-padded KV cache).
            input_ids_B_C: the next ids of each row [B, C] (prompt chunk or last sampled token).
            new_mask_B_C: 1 where ``input_ids_B_C`` is a real token, 0 for left padding [B, C].

        Returns:
            Next-token logits at each row's last column, [B, V].
        """
        attention_B_T = torch.cat([batch.kv.mask_B_T, new_mask_B_C], dim=1)
        positions, extra = batch.kv.positions(new_mask_B_C), {}
        with torch.inference_mode():
            if self.supports_images:  # M-RoPE: 3-D positions, image features at the prefill
                first = batch.rows[0]
                if first.multimodal is not None and batch.kv.width == 0:  # alone, whole prompt
                    positions, first.rope_delta, extra = prefill_inputs(batch.model, input_ids_B_C, first.multimodal)
                else:
                    delta_B = torch.tensor([r.rope_delta for r in batch.rows], device=self.device)
                    positions = decode_positions(positions, delta_B)
            out = batch.model(input_ids=input_ids_B_C, attention_mask=attention_B_T,
                              position_ids=positions, cache=batch.kv.cache,
                              use_cache=True, logits_to_keep=1, **extra)
        return out.logits[:, -1]

    def _sample(self, req: Request, logits_V: torch.Tensor) -> TokenEvent:
        """Sample one row's token (its params, RNG and grammar mask) and advance its grammar. A
        grammar's mask keeps the reply closable within the tokens left (``max_new``,
        :meth:`GrammarConstraint.allowed_V`); a token that would leave too few to close it (a
        structure that grows the closing by more than it shortens the budget) is drawn again
        from the closing's tokens, and its logprob is under that mask.

        Raises:
            ValueError: the grammar matcher is in an error state or allows nothing.
        """
        constraint = req.constraint
        if constraint is None:
            return sample_next_token(logits_V, req.params, req.generator)
        budget = req.max_new - len(req.result.token_ids)
        event = sample_next_token(logits_V, req.params, req.generator, constraint.allowed_V(budget))
        if event.token_id not in req.stop_ids and not constraint.advance(event.token_id, budget):
            # the token would leave too few tokens to close the grammar: take one of the closing's
            event = sample_next_token(logits_V, req.params, req.generator, constraint.closing_V(budget))
            if event.token_id not in req.stop_ids:
                constraint.consume(event.token_id)
        return event
