"""Named extensions of the trainer, found through Python entry points (no import of any package).

The trainer core names no runtime and no method package. A package that provides them declares
entry points in its ``pyproject.toml``; the core looks them up by name:

* ``slime.methods``: ``--advantage-estimator`` names -> :class:`slime.methods.Method` classes;
* ``slime.rollout_services``: ``--rollout-service`` names -> rollout service classes
  (:class:`slime.plugins.hooks.RolloutService`);
* ``slime.train_backends``: ``--train-backend`` names -> training backend classes
  (:class:`slime.trainer.registry.TrainBackend`; ``fsdp`` is :class:`slime.trainer.backend.TrainingBackend`);
* ``slime.model_resolvers``: model-path schemes (``builtin`` for ``builtin:smollm2-135m``) ->
  ``resolve(path) -> local folder`` functions (:mod:`slime.trainer.models`).

Each value is ``package.module:attribute``. Loading one that fails is a one-line
:class:`slime.config.flags.ConfigError` naming the group and the entry.
"""

from __future__ import annotations

import functools
from importlib import metadata
from typing import Any

from slime.errors import error_line
from slime.config.flags import ConfigError

__all__ = ["METHODS", "MODEL_RESOLVERS", "ROLLOUT_SERVICES", "TRAIN_BACKENDS", "entry_names", "load_entry"]

METHODS = "slime.methods"
ROLLOUT_SERVICES = "slime.rollout_services"
MODEL_RESOLVERS = "slime.model_resolvers"
TRAIN_BACKENDS = "slime.train_backends"


@functools.lru_cache(maxsize=None)
def _entries(group: str) -> dict[str, metadata.EntryPoint]:
    out: dict[str, metadata.EntryPoint] = {}
    for ep in metadata.entry_points(group=group):
        out.setdefault(ep.name, ep)  # the first installed distribution wins on a duplicate name
    return out


def entry_names(group: str) -> list[str]:
    """Registered names of ``group``, sorted."""
    return sorted(_entries(group))


def load_entry(group: str, name: str) -> Any:
    """The object registered as ``name`` in ``group``.

    Raises:
        KeyError: no such name.
        ConfigError: the entry point does not import (one line).
    """
    ep = _entries(group)[name]
    try:
        return ep.load()
    except Exception as exc:
        raise ConfigError(f"{group} entry {name!r} ({ep.value}) failed to load: {error_line(exc, None)}") from exc
