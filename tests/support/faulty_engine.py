"""The real transformers engine with one injected fault: the decode of a chosen request raises.

:class:`FailingStepEngine` is :class:`openclaw_rl.engine.transformers_engine.TransformersEngine`
unchanged, except that for requests sampled with ``seed == fault_seed``, decode step
``fault_step`` (after that many tokens were sampled) raises ``RuntimeError``: in the model call
(``where="model"``, as a failing kernel or device would: the whole batched forward pass that
holds that row raises, alone or batched) or in the engine's per-row sampling step
(``where="step"``, a bug in the engine's own bookkeeping). Every other request runs untouched.
"""

from __future__ import annotations

from openclaw_rl.engine.transformers_engine import TransformersEngine


class FailingStepEngine(TransformersEngine):
    """The real engine; the decode of requests with ``seed == fault_seed`` raises at step
    ``fault_step`` (0 = the prefill).

    Args:
        model_path: as for :class:`TransformersEngine`.
        fault_seed: the request seed that marks the requests to fail.
        fault_step: how many tokens such a request samples before its step raises.
        where: ``"model"`` (the model call raises) or ``"step"`` (the engine's step raises).
        **kwargs: passed to :class:`TransformersEngine`.

    Attributes:
        faults: how many distinct requests hit the fault.
        fault_batch_rows: for each faulting forward pass (``where="model"``), the rows it held.
    """

    def __init__(self, model_path: str, fault_seed: int, fault_step: int, where: str = "model", **kwargs):
        super().__init__(model_path, **kwargs)
        if where not in ("model", "step"):
            raise ValueError(f"where must be 'model' or 'step', got {where!r}")
        self.fault_seed, self.fault_step, self.where = fault_seed, fault_step, where
        self.fault_batch_rows: list[int] = []
        self._faulted: list = []  # the requests hit (identity; a request may hit twice: batched, then alone)

    @property
    def faults(self) -> int:
        return len(self._faulted)

    def _hits(self, req) -> bool:
        hit = req.params.seed == self.fault_seed and len(req.result.token_ids) == self.fault_step
        if hit and not any(r is req for r in self._faulted):
            self._faulted.append(req)
        return hit

    def _forward(self, batch, input_ids_B_C, new_mask_B_C):
        last_chunk = not batch.prefilling or batch.cursor + input_ids_B_C.shape[1] >= batch.prompt_B_L.shape[1]
        if self.where == "model" and last_chunk and any([self._hits(r) for r in batch.rows]):
            self.fault_batch_rows.append(len(batch.rows))
            raise RuntimeError(f"injected fault at decode step {self.fault_step}")
        return super()._forward(batch, input_ids_B_C, new_mask_B_C)

    def _sample(self, req, logits_V):
        if self.where == "step" and self._hits(req):
            raise RuntimeError(f"injected fault at decode step {self.fault_step}")
        return super()._sample(req, logits_V)
