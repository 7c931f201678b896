"""Training backends by name: ``--train-backend`` -> the class the train actors build their policy
and optimizer with (entry points ``slime.train_backends``; ``fsdp`` is
:class:`slime.trainer.backend.TrainingBackend`, transformers + peft, FSDP2 across train actors).

The backend is loaded by name, not imported, because it is the training stack: torch, transformers
and peft load with it. The processes that only orchestrate a run (the driver, ``slime/train.py``,
and its plugin check before Ray starts) reach it through this registry, so they load torch only
when they use the backend (a loss plugin to probe); the train actors load it in
:meth:`slime.orchestration.ray_actors.TrainActor.setup`.
"""

from __future__ import annotations

from typing import Any, Protocol

from slime.config.flags import ConfigError
from slime.plugins.registry import TRAIN_BACKENDS, entry_names, load_entry

__all__ = ["TrainBackend", "load_train_backend", "train_backend_names"]


class TrainBackend(Protocol):
    """A registered backend class: the train actor builds its instance with :meth:`for_rank`, the
    plugin check probes the loss with :meth:`check_loss`. The actor then calls the instance's
    training, checkpoint and export methods (:class:`slime.trainer.backend.TrainingBackend`
    documents them)."""

    @classmethod
    def for_rank(cls, cfg: Any, method: Any, rank: int, world_size: int, address: str | None,
                 gpu_assigned: bool) -> Any:
        """The backend of train rank ``rank`` of ``world_size`` (joins the process group at
        ``address`` first when ``world_size > 1``), on the GPU when ``gpu_assigned`` and one is
        visible, with the loss of ``--custom-loss-function-path``, else ``method``'s, else PPO."""

    @classmethod
    def check_loss(cls, spec: str, cfg: Any) -> str:
        """Load the loss plugin ``spec`` and call it once on a probe batch; returns its name.
        Raises :class:`slime.plugins.loader.PluginError` (one line) when it does not fit."""


def train_backend_names() -> list[str]:
    """Registered backend names, sorted."""
    return entry_names(TRAIN_BACKENDS)


def load_train_backend(name: str) -> type:
    """The backend class registered as ``name`` (``--train-backend``).

    Raises:
        ConfigError: ``name`` is not registered, the entry does not import, or it is not a class
            with ``for_rank`` and ``check_loss`` (one line each).
    """
    names = train_backend_names()
    if name not in names:
        # none at all: an install from before the entry point group existed (pyproject.toml changed)
        known = ", ".join(names) or "none: reinstall the package, make install or pip install -e ."
        raise ConfigError(f"argument --train-backend: {name!r} is not a registered training backend "
                          f"(registered: {known}; entry points {TRAIN_BACKENDS})")
    cls = load_entry(TRAIN_BACKENDS, name)
    if not isinstance(cls, type) or not all(callable(getattr(cls, m, None)) for m in ("for_rank", "check_loss")):
        raise ConfigError(f"{TRAIN_BACKENDS} entry {name!r} is not a training backend class "
                          "(needs the class methods for_rank and check_loss; see slime.trainer.registry.TrainBackend)")
    return cls
