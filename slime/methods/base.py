"""The ``Method`` protocol: what a learning method is to the trainer.

A method is one class (after prime-rl's ``Algorithm`` classes and tinker-cookbook's small ABCs).
The trainer core (``slime/``) knows no method by name: ``--advantage-estimator`` names a
registered class (:mod:`slime.methods.registry`) or loads one from a file
(``path/to/method.py:Class``), and every method-specific decision goes through these hooks:

==========================  ====================  ==============================================
hook                        runs in               does
==========================  ====================  ==============================================
``Flags``                   parser (driver)       a frozen dataclass of the method's own flags
                                                  (:func:`slime.config.flags.flag` fields)
``validate()``              driver, before Ray    cross-flag checks (:class:`ConfigError`)
``needs_groups()``          driver, before Ray    advantages compare the samples of one prompt
``build_judge(service)``    rollout manager       the judge / reward side handed to the rollout
                                                  service (None: the service's default judge)
``prepare_samples(b, s)``   train actor           per-step work that needs the policy (OPD's
                                                  teacher scoring); default: nothing
``compute_advantages(s)``   driver                per-token ``Sample.advantages`` + metrics
``loss_function()``         train actor           the loss, as a plugin spec (None: PPO)
==========================  ====================  ==============================================

Every process builds its own instance from the run's config (``Method(cfg)``), so a method
loaded from a file works in Ray actors too; the driver's instance lives for the whole run, so
``compute_advantages`` may keep state across steps (a running baseline, say).

Imports: every registered method class is imported wherever the run's flags are read, which
includes processes that never train: ``--help``, and ``python -m slime.config.run_args
--runtime-env``, which each launch script runs before it submits the job. So a method module does
not import torch (nor load a model or a judge) at its top. The core methods need none: their
advantages (:mod:`slime.algorithms.advantages`) are plain Python on a few scalars per group. A
method package whose hooks need torch imports that module inside the hook (OPD imports its
teacher scoring in ``prepare_samples``). Importing torch costs a launch about 2 s on a CPU;
``tests/slime/test_slime_seam.py`` checks that reading the flags of every registered method does
not import torch.
"""

from __future__ import annotations

import abc
from collections.abc import Sequence
from typing import Any, ClassVar

from slime.record.sample import Sample

__all__ = ["Method"]


class Method(abc.ABC):
    """Base class of every learning method (see the module docstring for the hooks).

    Args:
        cfg: the run's :class:`slime.config.arguments.SlimeConfig`; ``self.flags`` is the method's
            ``Flags`` instance built from it (None when the method has no flags).

    Class attributes:
        name: the method's short name, for messages and ``--help``.
        Flags: frozen dataclass of the method's flags, or None.
    """

    name: ClassVar[str] = ""
    Flags: ClassVar[type | None] = None

    def __init__(self, cfg: Any):
        self.cfg = cfg
        self.flags = cfg.flags_of("method", self.Flags) if self.Flags is not None else None

    def validate(self) -> None:
        """Check the method's flags against the rest of the config; raise
        :class:`slime.config.flags.ConfigError` with a one-line message. Default: nothing to check."""

    def needs_groups(self) -> bool:
        """Whether advantages compare the ``--n-samples-per-prompt`` samples of one prompt
        (GRPO): then a rollout that yields one sample per prompt (live turns) is refused when
        ``n_samples_per_prompt >= 2``. Default: False."""
        return False

    def build_judge(self, service: Any) -> Any:
        """The judge (or reward) this method needs on the rollout side, in the form ``service``
        takes (the OpenClaw service: a turn judge); None (default): the service's own default.

        Runs once in the rollout manager, when the service starts.
        """
        return None

    def prepare_samples(self, backend: Any, samples: Sequence[Sample]) -> list[Sample]:
        """Per-step work on the train actor before advantages (e.g. scoring a teacher with the
        policy's weights). ``backend`` is the :class:`slime.trainer.backend.TrainingBackend`. Returns
        the samples (mutated or new). Default: unchanged, and the step skips the actor call."""
        return list(samples)

    @classmethod
    def prepares_samples(cls) -> bool:
        """Whether the class overrides :meth:`prepare_samples` (else the call is skipped)."""
        return cls.prepare_samples is not Method.prepare_samples

    @abc.abstractmethod
    def compute_advantages(self, samples: Sequence[Sample]) -> tuple[list[Sample], dict[str, float]]:
        """Set ``Sample.advantages`` (one float per response token, 0 off the loss mask).

        Args:
            samples: the step's samples, in rollout order (groups of ``n_samples_per_prompt``
                consecutive samples for prompt rollouts).

        Returns:
            ``(samples, metrics)``: the samples to train on and float metrics to log.

        Raises:
            ValueError: samples the method cannot use (e.g. without a reward).
        """

    def loss_function(self) -> str | None:
        """The loss as a plugin spec (``package.module.function`` or ``path/to/file.py:function``,
        any loss convention); None (default): the PPO clipped loss. ``--custom-loss-function-path``
        overrides it."""
        return None
