"""Continuous batching for the transformers engine: which rows run in which forward pass.

The worker thread calls :meth:`BatchScheduler.iterate` in a loop. One iteration:

1. drops rows whose consumer went away;
2. groups waiting requests into **prefill batches** (same weights, oldest first, at most
   ``max_batch_size`` rows and ``prefill_chunk_tokens`` padded prompt tokens per group; a longer
   prompt forms a group of its own), prompts left-padded to the group's longest;
   a prompt with images (a vision-language request) always forms a group of its own and is fed
   in one pass;
3. advances every batch by **one forward pass**, prefill batches first: a prefill batch by one chunk of at most
   ``prefill_chunk_tokens`` padded tokens (so a long prompt never stalls decoding for more than one
   chunk), a decode batch by one token per row; after a batch's last prefill chunk, and after every
   decode step, each row samples its token with its own parameters, RNG and grammar mask;
4. merges decode batches that share weights while their rows fit in ``max_batch_size``.

Batches never mix weight versions: a request keeps the model it was admitted with, so after a
weight swap the old rows drain in their own batch while new requests batch on the new weights.
Every batch advances once per iteration (round robin), so no request waits for another to end;
``max_batch_size=1`` gives one forward pass per request per token, requests interleaved.

Faults stay with the request that causes them: a forward pass that raises is undone
(:meth:`BatchKV.restore`), the batch is split into one batch per row and each is retried alone,
so only a request that also fails alone fails (:class:`~openclaw_rl.engine.base.EngineError`);
a row whose sampling raises fails alone.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from dataclasses import dataclass
from typing import Callable

import torch

from openclaw_rl.engine.base import EngineError, GenerationOutput, SamplingParams, TokenEvent
from openclaw_rl.engine.batch_cache import BatchKV
from openclaw_rl.engine.grammar import GrammarConstraint

log = logging.getLogger(__name__)
DONE = object()  # the end-of-stream marker a request's queue receives


@dataclass(eq=False)
class Request:
    """One generation in flight: what it samples with and where its tokens go.

    Attributes:
        prompt_ids: exact prompt ids [L].
        model: the weights it was admitted with (kept to the end).
        queue: the consumer's queue on ``loop``; gets :class:`TokenEvent`, an exception, or ``DONE``.
        max_new: tokens it may sample (clipped to the context window).
        generator: its own RNG, so its tokens do not depend on which requests share its batch.
        last_token: the sampled id not yet fed to the model (None before the first).
        multimodal: a vision-language prompt's images (``pixel_values``, ``image_grid_thw``), or
            None; such a request is prefilled alone, in one forward pass.
        rope_delta: M-RoPE offset of its text positions after the images (0 for a text prompt);
            set by its prefill, added to every decode position.
    """

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
    constraint: GrammarConstraint | None = None
    last_token: int | None = None
    cancelled: bool = False
    multimodal: dict | None = None
    rope_delta: int = 0

    def emit(self, item) -> None:
        """Hand ``item`` to the consumer (thread-safe); a closed loop marks the request cancelled."""
        try:
            self.loop.call_soon_threadsafe(self.queue.put_nowait, item)
        except RuntimeError:  # the consumer's event loop is gone: nobody is listening any more
            self.cancelled = True


class Batch:
    """Rows that share one model, one KV cache and one forward pass per iteration.

    While prefilling, ``prompt_B_L`` / ``prompt_mask_B_L`` hold the left-padded prompts and
    ``cursor`` the columns already fed; once the last chunk is fed they are None (decoding).
    """

    def __init__(self, model: torch.nn.Module, rows: list[Request], kv: BatchKV,
                 prompt_B_L: torch.Tensor | None = None, prompt_mask_B_L: torch.Tensor | None = None,
                 cursor: int = 0):
        self.model, self.rows, self.kv = model, rows, kv
        self.prompt_B_L, self.prompt_mask_B_L, self.cursor = prompt_B_L, prompt_mask_B_L, cursor

    @classmethod
    def for_prompts(cls, rows: list[Request], device: torch.device) -> "Batch":
        """A prefill batch of ``rows`` (same model), prompts left-padded to the longest."""
        width = max(len(r.prompt_ids) for r in rows)
        ids = torch.zeros((len(rows), width), dtype=torch.long)
        mask = torch.zeros((len(rows), width), dtype=torch.long)
        for i, r in enumerate(rows):
            ids[i, width - len(r.prompt_ids):] = torch.tensor(r.prompt_ids, dtype=torch.long)
            mask[i, width - len(r.prompt_ids):] = 1
        model = rows[0].model
        return cls(model, rows, BatchKV(model.config, torch.zeros((len(rows), 0), dtype=torch.long, device=device)),
                   ids.to(device), mask.to(device))

    @property
    def prefilling(self) -> bool:
        """Whether prompt columns remain to be fed."""
        return self.prompt_B_L is not None

    def select(self, keep: list[int]) -> "Batch":
        """The batch of rows ``keep`` (indices into :attr:`rows`), cache sliced to match."""
        if keep == list(range(len(self.rows))):
            return self
        index = torch.tensor(keep, dtype=torch.long)
        prompt = mask = None
        if self.prefilling:
            prompt, mask = self.prompt_B_L[index], self.prompt_mask_B_L[index]
        return Batch(self.model, [self.rows[i] for i in keep], self.kv.select(keep), prompt, mask, self.cursor)


#: ``forward(batch, input_ids_B_C, new_mask_B_C) -> logits_B_V`` at each row's last column
ForwardFn = Callable[[Batch, torch.Tensor, torch.Tensor], torch.Tensor]
#: ``sample(request, logits_V) -> TokenEvent``: the row's token, grammar advanced
SampleFn = Callable[[Request, torch.Tensor], TokenEvent]


class BatchScheduler:
    """Continuous batching over :class:`Batch` objects (see the module docstring).

    Args:
        forward: runs one forward pass of a batch (the engine's, so tests can inject faults).
        sample: samples one row's token from its logits (likewise).
        device: where the input tensors go.
        max_batch_size: most rows per forward pass (>= 1).
        prefill_chunk_tokens: most padded prompt tokens per prefill forward pass (>= 1).

    Not thread-safe: one worker thread owns it.
    """

    def __init__(self, forward: ForwardFn, sample: SampleFn, device: torch.device, max_batch_size: int = 16,
                 prefill_chunk_tokens: int = 256):
        if max_batch_size < 1 or prefill_chunk_tokens < 1:
            raise ValueError("max_batch_size and prefill_chunk_tokens must be >= 1")
        self._forward, self._sample, self.device = forward, sample, device
        self.max_batch_size, self.prefill_chunk_tokens = max_batch_size, prefill_chunk_tokens
        self.waiting: deque[Request] = deque()
        self.batches: list[Batch] = []

    @property
    def idle(self) -> bool:
        """Nothing waiting and nothing running."""
        return not self.waiting and not self.batches

    def add(self, req: Request) -> None:
        """Queue a request; it is prefilled in the next iteration."""
        self.waiting.append(req)

    def stats(self) -> dict[str, int]:
        """``{"waiting", "running", "batches"}``: requests not yet started, rows in batches, batches."""
        return {"waiting": len(self.waiting), "running": sum(len(b.rows) for b in self.batches),
                "batches": len(self.batches)}

    def abort_all(self) -> None:
        """End every request with finish reason ``abort`` (the engine is closing)."""
        for req in list(self.waiting) + [r for b in self.batches for r in b.rows]:
            req.result.finish_reason = "abort"
            req.emit(DONE)
        self.waiting.clear()
        self.batches.clear()

    def iterate(self) -> None:
        """One scheduling iteration: every batch advances by one forward pass."""
        self.waiting = deque(r for r in self.waiting if not r.cancelled)
        self.batches = [b for b in (self._without_cancelled(b) for b in self.batches) if b is not None]
        self._form_prefill_batches()
        advanced: list[Batch] = []
        # prefill first: a new request's first token does not wait for this iteration's decode steps
        for batch in sorted(self.batches, key=lambda b: not b.prefilling):
            advanced.extend(self._advance(batch))
        self.batches = self._merge(advanced)

    # ------------------------------------------------------------------ internals
    @staticmethod
    def _without_cancelled(batch: Batch) -> Batch | None:
        keep = [i for i, r in enumerate(batch.rows) if not r.cancelled]
        return batch.select(keep) if keep else None

    def _form_prefill_batches(self) -> None:
        budget, waiting = self.prefill_chunk_tokens, self.waiting
        while waiting:
            first = waiting.popleft()
            group, width, rest = [first], len(first.prompt_ids), deque()
            while waiting:
                req = waiting.popleft()
                wider = max(width, len(req.prompt_ids))
                if (req.model is first.model and len(group) < self.max_batch_size
                        and first.multimodal is None and req.multimodal is None
                        and (len(group) + 1) * wider <= budget):
                    group.append(req)
                    width = wider
                else:
                    rest.append(req)
            waiting.extend(rest)
            self.batches.append(Batch.for_prompts(group, self.device))

    def _advance(self, batch: Batch) -> list[Batch]:
        """One forward pass of ``batch`` and its rows' sampling; returns what is left of it
        (nothing, the batch, or, after a failed pass, the rows that succeeded alone)."""
        rows = len(batch.rows)
        if batch.prefilling:
            cols = max(1, self.prefill_chunk_tokens // rows)
            if batch.rows[0].multimodal is not None:  # image features go in with the whole prompt
                cols = batch.prompt_B_L.shape[1]
            end = min(batch.prompt_B_L.shape[1], batch.cursor + cols)
            ids_B_C = batch.prompt_B_L[:, batch.cursor:end]
            new_mask_B_C = batch.prompt_mask_B_L[:, batch.cursor:end]
        else:
            ids_B_C = torch.tensor([[r.last_token] for r in batch.rows], dtype=torch.long, device=self.device)
            new_mask_B_C = torch.ones((rows, 1), dtype=torch.long, device=self.device)
        snap = batch.kv.snapshot()
        try:
            logits_B_V = self._forward(batch, ids_B_C, new_mask_B_C)
        except Exception as exc:
            batch.kv.restore(snap)
            if rows == 1:
                log.exception("engine: forward pass failed")
                self._fail(batch.rows[0], exc)
                return []
            log.warning("engine: a forward pass of %d rows failed (%s); retrying each row alone", rows, exc)
            return [kept for i in range(rows) for kept in self._advance(batch.select([i]))]
        batch.kv.append(new_mask_B_C)
        if batch.prefilling:
            batch.cursor = end
            if end < batch.prompt_B_L.shape[1]:
                return [batch]
            batch.prompt_B_L = batch.prompt_mask_B_L = None
        keep = [i for i, req in enumerate(batch.rows) if not self._take(req, logits_B_V[i])]
        return [batch.select(keep)] if keep else []

    def _take(self, req: Request, logits_V: torch.Tensor) -> bool:
        """Sample ``req``'s next token and hand it over; True when the request is finished."""
        try:
            event = self._sample(req, logits_V)
        except Exception as exc:  # a failing row must not stop its batch, nor the worker
            log.exception("engine: sampling failed")
            self._fail(req, exc)
            return True
        res = req.result
        res.token_ids.append(event.token_id)
        res.logprobs.append(event.logprob)
        res.top_logprobs.append(list(event.top_logprobs))
        req.last_token = event.token_id
        done = True
        if event.token_id in req.stop_ids:
            res.finish_reason = "stop"
        elif len(res.token_ids) >= req.max_new:
            res.finish_reason = "length"
        else:
            done = False
        req.emit(event)
        if done:
            req.emit(DONE)
        return done or req.cancelled

    @staticmethod
    def _fail(req: Request, exc: Exception) -> None:
        req.emit(EngineError(f"generation failed: {exc}"))

    def _merge(self, batches: list[Batch]) -> list[Batch]:
        """Merge decode batches of the same model while their rows fit one batch (largest first)."""
        if self.max_batch_size == 1:
            return batches
        out: list[Batch] = []
        decoding = sorted((b for b in batches if not b.prefilling), key=lambda b: -len(b.rows))
        for batch in decoding:
            into = next((o for o in out if o.model is batch.model and not o.prefilling
                         and len(o.rows) + len(batch.rows) <= self.max_batch_size), None)
            if into is None:
                out.append(batch)
            else:
                into.rows = into.rows + batch.rows
                into.kv = BatchKV.concat([into.kv, batch.kv])
        return out + [b for b in batches if b.prefilling]
