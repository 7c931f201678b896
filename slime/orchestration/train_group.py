"""The train actors of a run as one trainer: ``--actor-num-nodes`` x ``--actor-num-gpus-per-node``
:class:`slime.orchestration.ray_actors.TrainActor` ranks training one policy data-parallel (FSDP2,
:mod:`slime.trainer.data_parallel`), or the one train actor of a single-process run.

:class:`TrainGroup` has the train actor's methods as plain (blocking) calls. Each call goes to
every rank with the same arguments (put into Ray's object store once) and returns rank 0's
answer: the ranks hold one model, so they answer alike, and the collectives inside a call (the
gradient reduce-scatter of a train step, the gathering of a checkpoint) need all of them. A rank
that died raises Ray's ``RayActorError`` here, as the single train actor does.

Placement (:mod:`slime.orchestration.placement`): each rank asks Ray for one GPU when the cluster has GPUs
(Ray then sets its ``CUDA_VISIBLE_DEVICES``, or ``--actor-gpu-ids`` pins rank ``r`` to the r-th
id; the policy loads in bfloat16 on it and the ranks talk NCCL); on a cluster without GPUs the
ranks are CPU processes (float32, gloo). Without pinned ids the ranks are packed onto as few nodes
as hold them with a placement group of one GPU bundle per rank.
"""

from __future__ import annotations

import logging
from typing import Any

import ray
from slime.orchestration.placement import actor_options, cluster_gpus, gpu_ids
from slime.orchestration.ray_actors import TrainActor

__all__ = ["TrainGroup", "train_world_size"]

log = logging.getLogger(__name__)


def train_world_size(cfg) -> int:
    """Number of train ranks: ``--actor-num-nodes * --actor-num-gpus-per-node``."""
    return int(cfg.actor_num_nodes) * int(cfg.actor_num_gpus_per_node)


class TrainGroup:
    """Start the run's train ranks and set them up (see module docstring).

    Args:
        cfg: the run's SlimeConfig.
        wait: block until every rank is set up (default). With ``False`` the ranks start in the
            background and :meth:`wait_ready` waits for them, so the caller can start other actors
            (the rollout manager, whose engines load the model too) in the meantime.

    Raises:
        RuntimeError: the cluster has GPUs, but fewer than the ranks need (one line).
        Whatever :meth:`slime.orchestration.ray_actors.TrainActor.setup` raises (a bad model path, ...).
    """

    def __init__(self, cfg, wait: bool = True):
        from ray.util.placement_group import placement_group
        from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

        self.world_size = n = train_world_size(cfg)
        have = cluster_gpus()
        gpus = 1 if have else 0
        if 0 < have < n:
            raise RuntimeError(f"{n} train actors (--actor-num-nodes {cfg.actor_num_nodes} x "
                               f"--actor-num-gpus-per-node {cfg.actor_num_gpus_per_node}) need {n} GPUs; the Ray "
                               f"cluster has {have}")
        self.placement_group = None
        ids = gpu_ids(cfg.actor_gpu_ids)
        options: list[dict[str, Any]] = [actor_options(gpus, ids[rank:rank + 1]) for rank in range(n)]
        if gpus and not ids:  # one bundle per rank, packed onto as few nodes as fit
            self.placement_group = placement_group([{"GPU": 1}] * n, strategy="PACK")
            ray.get(self.placement_group.ready())
            options = [{"num_gpus": 1, "scheduling_strategy": PlacementGroupSchedulingStrategy(
                self.placement_group, placement_group_bundle_index=rank)} for rank in range(n)]
        self.actors = [TrainActor.options(**options[rank]).remote(cfg, rank, n) for rank in range(n)]
        address = ray.get(self.actors[0].address.remote()) if n > 1 else None
        self._setup = [actor.setup.remote(address) for actor in self.actors]
        if wait:
            self.wait_ready()

    def wait_ready(self) -> None:
        """Block until every rank is set up (once; later calls return at once).

        Raises:
            Whatever :meth:`slime.orchestration.ray_actors.TrainActor.setup` raised on a rank.
        """
        if self._setup:
            ray.get(self._setup)
            self._setup = []
            log.info("%d train actor(s) ready: %s", self.world_size, self.placements())

    def _all(self, method: str, *args: Any) -> Any:
        """Call ``method`` on every rank with ``args``; rank 0's result."""
        if self.world_size > 1:
            args = tuple(ray.put(a) for a in args)  # stored once, read by every rank
        return ray.get([getattr(actor, method).remote(*args) for actor in self.actors])[0]

    def placements(self) -> list[dict]:
        """Each rank's :meth:`slime.orchestration.ray_actors.TrainActor.placement`, in rank order."""
        return ray.get([actor.placement.remote() for actor in self.actors])

    def admit(self, samples):
        """:meth:`slime.orchestration.ray_actors.TrainActor.admit` on every rank; ``(samples, metrics)``."""
        return self._all("admit", samples)

    def prepare_samples(self, samples):
        """:meth:`slime.orchestration.ray_actors.TrainActor.prepare_samples` on every rank; the prepared samples."""
        return self._all("prepare_samples", samples)

    def policy_logprobs(self, samples):
        """:meth:`slime.orchestration.ray_actors.TrainActor.policy_logprobs`; one list per sample."""
        return self._all("policy_logprobs", samples)

    def resume(self):
        """Every rank loads ``--resume-from-checkpoint``; its step (None without the flag)."""
        return self._all("resume")

    def train_step(self, samples, step: int | None = None) -> dict:
        """One optimizer step per global batch, each rank training its share; the metrics."""
        return self._all("train_step", samples, step)

    def restore_last_good(self) -> dict:
        """Every rank restores the last good weights (:meth:`slime.orchestration.ray_actors.TrainActor.restore_last_good`);
        ``{"restored": path or "initial", "step": ..., "weight_version": ...}``."""
        return self._all("restore_last_good")

    def save(self, step: int, data_cursor=None) -> str:
        """The checkpoint of ``step`` (one folder, written by rank 0); its path."""
        return self._all("save", step, data_cursor)

    def weight_version(self) -> int:
        """The version of the trainer's current weights."""
        return self._all("weight_version")

    def restore_version(self, version: int) -> dict:
        """:meth:`slime.orchestration.ray_actors.TrainActor.restore_version` on every rank."""
        return self._all("restore_version", version)

    def gate_measure(self, data, skip=frozenset()):
        """:meth:`slime.orchestration.ray_actors.TrainActor.gate_measure` on every rank; the
        :class:`slime.guards.promotion.VersionMeasure`."""
        return self._all("gate_measure", data, frozenset(skip))

    def export_weights(self) -> tuple[str, int]:
        """Export the weights for serving (one folder, written by rank 0); ``(path, version)``."""
        return self._all("export_weights")

    def prune_published(self, served: int) -> list[str]:
        """Delete old published versions (rank 0, which wrote them); the deleted folder names."""
        return ray.get(self.actors[0].prune_published.remote(served))

    def shutdown(self) -> None:
        """Stop the train actors and free their placement group."""
        for actor in self.actors:
            ray.kill(actor)
        if self.placement_group is not None:
            from ray.util.placement_group import remove_placement_group
            remove_placement_group(self.placement_group)
