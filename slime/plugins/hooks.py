"""One ``Protocol`` per hook: the canonical calling convention of each thing a run plugs in.

=====================  ================================  ==========================================
hook                   flag                              canonical form (other forms: adapters)
=====================  ================================  ==========================================
:class:`LossFunction`  ``--custom-loss-function-path``   ``loss(inputs, config) -> LossOutputs``
                                                         (adapters: the seed's ``compute_loss``,
                                                         slime's ``loss_function``;
                                                         :mod:`slime.plugins.loss`)
:class:`RewardFunction` ``--custom-rm-path``             ``async reward(args, sample) -> float |
                                                         dict`` (adapters: the seed's
                                                         ``get_reward_model``, slime's batched
                                                         form; :mod:`slime.plugins.reward`)
:class:`RolloutFunction` ``--rollout-function-path``     ``generate_rollout(args, rollout_id,
                                                         data_source, evaluation=False)``
:class:`GenerateFunction` ``--custom-generate-function-  ``async generate(args, sample,
                       path``                            sampling_params)``
:class:`DataSource`    (the service's)                   what the rollout manager needs of the
                                                         rollout function's ``data_source``
:class:`RolloutService` ``--rollout-service``            serving + collection + judging
=====================  ================================  ==========================================

The method itself is :class:`slime.methods.Method`. Sync and ``async`` functions are both
accepted wherever a hook is called (:mod:`slime.plugins.calls`). ``tests/plugin_contracts`` checks each
default and each example against these contracts.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, runtime_checkable

from slime.record.sample import Sample

if TYPE_CHECKING:  # annotations only: a rollout process reads these protocols without torch
    from slime.algorithms.losses import LossInputs, LossOutputs, PolicyLossConfig

__all__ = ["DataSource", "GenerateFunction", "LossFunction", "RewardFunction", "RolloutChoice", "RolloutFunction",
           "RolloutService"]


class LossFunction(Protocol):
    """One micro-batch's loss: ``[B, T]`` tensors in, a differentiable scalar plus metric sums out
    (see :class:`slime.algorithms.losses.LossInputs`); normalise by ``inputs.global_num_tokens``."""

    def __call__(self, inputs: LossInputs, config: PolicyLossConfig) -> LossOutputs: ...


class RewardFunction(Protocol):
    """One sample's reward: a finite float, or a dict with ``"reward"`` and details to keep."""

    async def __call__(self, args: Any, sample: Sample) -> float | dict: ...


class RolloutFunction(Protocol):
    """One step's samples: ``list[list[Sample]]`` (groups per prompt), optionally ``(groups,
    metrics)`` or an object with ``.samples`` / ``.metrics``; sync or ``async``."""

    def __call__(self, args: Any, rollout_id: int, data_source: Any, evaluation: bool = False) -> Any: ...


class GenerateFunction(Protocol):
    """One prompt's response(s): fills ``sample`` (exact ids, sampling log-probs, version) or
    returns several samples."""

    async def __call__(self, args: Any, sample: Sample, sampling_params: dict) -> Sample | list[Sample]: ...


@runtime_checkable
class DataSource(Protocol):
    """What the rollout manager asks of a rollout function's ``data_source`` after a step:
    bookkeeping of the samples it handed out (exactly-once training). Samples it did not hand out
    are ignored."""

    def mark_trained(self, samples: Sequence[Sample], step: int) -> None: ...

    def release(self, samples: Sequence[Sample]) -> None: ...


@dataclass(frozen=True)
class RolloutChoice:
    """A service's default rollout for a config.

    spec: the rollout function (``package.module.function``).
    groups: it yields ``--n-samples-per-prompt`` samples of one prompt per group (False: one
        sample per group, e.g. live turns).
    generates: it calls the generate hook (``--custom-generate-function-path``).
    """

    spec: str
    groups: bool
    generates: bool


@runtime_checkable
class RolloutService(Protocol):
    """Serving, collection and judging for one run, owned by the rollout manager.

    Constructed as ``Service(cfg, resume_step, method)`` in the rollout manager: ``resume_step``
    is the step of the checkpoint the trainer resumed from (None: fresh run), ``method`` the run's
    :class:`slime.methods.Method` (call its ``build_judge(self)`` for the judge side). The class
    methods run in the driver before Ray starts, so they must not start anything.

    Class attributes: ``Flags``, the service's flag dataclass (or None).

    ``publish_weights(path, version)`` sends a step's exported weights to serving and returns the
    version served; a failure the run survives (the server refused the folder, or stayed
    unreachable) is :class:`slime.errors.PublishFailed`: the train loop counts it
    (``publish/failures``) and trains on.

    Optional: a class method ``default_num_rollout(cfg) -> int | None``, the number of steps
    when ``--num-rollout`` is not given (OpenClaw's: one pass over ``--data-path``; None: the
    flag is required); a class method ``flag_sections() -> list[slime.config.arguments.FlagSection]``,
    more flag dataclasses the service brings to the command line (OpenClaw's: every registered
    agent family's flags, section ``"family"``).
    """

    Flags: ClassVar[type | None]
    data_source: Any

    @classmethod
    def default_rollout(cls, cfg: Any) -> RolloutChoice: ...

    @classmethod
    def default_generate(cls) -> str: ...

    @classmethod
    def check(cls, cfg: Any) -> list[str]: ...

    def rollout_args(self) -> Any: ...

    def publish_weights(self, path: str, version: int) -> int: ...

    def metrics(self) -> dict: ...

    def close(self) -> None: ...
