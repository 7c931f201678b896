"""The real transformers engine with one injected fault: the decode of a chosen request raises.

:class:`FailingStepEngine` is :class:`openclaw_rl.engine.transformers_engine.TransformersEngine`
unchanged, except that for requests sampled with ``seed == fault_seed``, decode step
``fault_step`` (after that many tokens were sampled) raises ``RuntimeError``: in the model call
(``where="model"``, as a failing kernel or device would) or in the engine's step itself
(``where="step"``, a bug in the engine's own bookkeeping). Every other request runs untouched.
"""

from __future__ import annotations

from openclaw_rl.engine.transformers_engine import TransformersEngine


class _BrokenModel:
    """Stands in for the model of one request from the failing step on: every call raises."""

    def __init__(self, step: int):
        self.step = step

    def __call__(self, *args, **kwargs):
        raise RuntimeError(f"injected fault at decode step {self.step}")


class FailingStepEngine(TransformersEngine):
    """The real engine; the decode of requests with ``seed == fault_seed`` raises at step
    ``fault_step`` (0 = the prefill).

    Args:
        model_path: as for :class:`TransformersEngine`.
        fault_seed: the request seed that marks the requests to fail.
        fault_step: how many tokens such a request samples before its step raises.
        where: ``"model"`` (the model call raises) or ``"step"`` (the engine's step raises).
        **kwargs: passed to :class:`TransformersEngine`.
    """

    def __init__(self, model_path: str, fault_seed: int, fault_step: int, where: str = "model", **kwargs):
        super().__init__(model_path, **kwargs)
        if where not in ("model", "step"):
            raise ValueError(f"where must be 'model' or 'step', got {where!r}")
        self.fault_seed, self.fault_step, self.where = fault_seed, fault_step, where
        self.faults = 0

    def _step(self, req) -> bool:
        if req.params.seed == self.fault_seed and len(req.result.token_ids) == self.fault_step:
            self.faults += 1
            if self.where == "step":
                raise RuntimeError(f"injected fault at decode step {self.fault_step}")
            req.model = _BrokenModel(self.fault_step)
        return super()._step(req)
