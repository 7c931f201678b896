"""One step's weight publish, survived when it fails.

The train actor exports the step's weights under the run's publish folder
(:func:`slime.paths.published_dir`) and the rollout manager's service sends them to serving. When
that fails -- the folder vanished before the server loaded it, the disk under it is gone, the
server refused the weights or stayed unreachable past its retry bound
(:class:`slime.errors.PublishFailed`, or an ``OSError`` while exporting) -- serving keeps its older
weights, the run logs one line, counts it (``publish/failures`` in the step's metrics) and trains
on; the next step exports and publishes newer weights. Versions only go up: the server never
serves a version it did not load completely.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import ray

from slime.errors import PublishFailed, one_line, root_cause_line

__all__ = ["Publisher"]

log = logging.getLogger("slime.train")


@dataclass
class Publisher:
    """Publishes each step's weights through the run's actors and remembers what serving runs.

    Args:
        trainer: the run's :class:`slime.train_group.TrainGroup` (exports and prunes).
        manager: the :class:`slime.ray_actors.RolloutManager` handle (publishes).
        served: the weight version serving runs now (0 at the start of a fresh run).
    """

    trainer: object
    manager: object
    served: int | None = 0
    failures: int = 0

    def publish(self) -> dict:
        """Export the current weights and publish them; returns the step's publish metrics:
        ``publish/ok`` (1 or 0), ``publish/failures`` (the run's total so far) and, when known,
        ``weight_version`` (what serving runs after this publish).

        Raises:
            Whatever else the actors raise (an actor that died, a bug): those stop the run.
        """
        version = None
        try:
            path, version = self.trainer.export_weights()
            served = ray.get(self.manager.publish_weights.remote(path, version))
        except (PublishFailed, OSError) as exc:
            self.failures += 1
            what = f"weight version {version}" if version is not None else "the step's weights"
            log.warning("publish of %s failed; serving keeps version %s and training goes on (%d failed "
                        "publish(es) so far): %s", what, self.served, self.failures, one_line(root_cause_line(exc), 400))
            ok = 0
        else:
            self.served, ok = served, 1
            self.trainer.prune_published(served)  # serving swapped past the older ones
        out = {"publish/ok": ok, "publish/failures": self.failures}
        if self.served is not None:
            out["weight_version"] = self.served
        return out
