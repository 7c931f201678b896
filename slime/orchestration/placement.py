"""Which GPUs each actor of a run asks Ray for (issue 15: "GPUs are used at all").

* The train actors (:class:`slime.orchestration.train_group.TrainGroup`): one GPU each, ``--actor-num-nodes`` x
  ``--actor-num-gpus-per-node`` of them.
* The rollout manager (:class:`slime.orchestration.ray_actors.RolloutManager`): ``--rollout-num-gpus`` for the
  rollout engines plus what its service adds for its own models (the OpenClaw service:
  ``--prm-num-gpus`` for the PRM/teacher), see :func:`rollout_gpu_request`.

Ray sets ``CUDA_VISIBLE_DEVICES`` of an actor to the GPUs it assigned. Given ids
(``--actor-gpu-ids 0,1,2,3``, ``--rollout-gpu-ids 4,5,6,7``, the launch scripts' ``TRAIN_GPUS`` /
``ROLLOUT_GPUS`` id lists) the actor still asks Ray for that many GPUs (Ray's accounting) and is
started with exactly those devices: ``CUDA_VISIBLE_DEVICES`` is set in its runtime environment and
``RAY_EXPERIMENTAL_NOSET_CUDA_VISIBLE_DEVICES=1`` keeps Ray from overwriting it (Ray's documented
switch). Ids name devices of one node. On a Ray cluster without GPUs every actor asks for none and
runs on CPU.
"""

from __future__ import annotations

from typing import Any

__all__ = ["NOSET_CUDA_ENV", "actor_options", "cluster_gpus", "gpu_ids", "rollout_gpu_request"]

#: Ray leaves an actor's CUDA_VISIBLE_DEVICES alone when this is set in its environment
NOSET_CUDA_ENV = "RAY_EXPERIMENTAL_NOSET_CUDA_VISIBLE_DEVICES"


def gpu_ids(text: str | None) -> list[str]:
    """``"0,1, 2"`` -> ``["0", "1", "2"]``; None or empty -> ``[]``.

    Raises:
        ValueError: an id that is not a non-negative integer (names it)."""
    ids = [part.strip() for part in (text or "").replace(" ", ",").split(",") if part.strip()]
    bad = [i for i in ids if not i.isdigit()]
    if bad:
        raise ValueError(f"GPU ids must be non-negative integers like 0,1,2,3, got {bad[0]!r}")
    return ids


def cluster_gpus() -> int:
    """GPUs the connected Ray cluster declares (``ray start --num-gpus``; logical ones count)."""
    import ray

    return int(ray.cluster_resources().get("GPU", 0))


def actor_options(num_gpus: int, ids: list[str] | None = None) -> dict[str, Any]:
    """``ActorClass.options(...)`` keywords for an actor that needs ``num_gpus`` GPUs, pinned to
    ``ids`` when given (``len(ids) == num_gpus``); ``{"num_gpus": 0}`` for ``num_gpus == 0``."""
    if not num_gpus:
        return {"num_gpus": 0}
    options: dict[str, Any] = {"num_gpus": num_gpus}
    if ids:
        options["runtime_env"] = {"env_vars": {"CUDA_VISIBLE_DEVICES": ",".join(ids), NOSET_CUDA_ENV: "1"}}
    return options


def rollout_gpu_request(cfg, service_cls: type) -> tuple[int, list[str]]:
    """``(GPUs, ids)`` the rollout manager asks for: ``--rollout-num-gpus`` (ids
    ``--rollout-gpu-ids``) plus the service's own (its optional ``extra_gpus(cfg) -> (count,
    ids)``, e.g. the PRM's); ``(0, [])`` on a cluster without GPUs.

    Raises:
        RuntimeError: the cluster has GPUs, but fewer than asked for (one line).
    """
    count, ids = int(cfg.rollout_num_gpus), gpu_ids(cfg.rollout_gpu_ids)
    extra = getattr(service_cls, "extra_gpus", None)
    if extra is not None:
        more, more_ids = extra(cfg)
        count, ids = count + int(more), ids + list(more_ids)
    have = cluster_gpus()
    if not count or not have:
        return 0, []
    if count > have:
        raise RuntimeError(f"the rollout side asks for {count} GPUs (--rollout-num-gpus and the service's own); "
                           f"the Ray cluster has {have}")
    return count, ids if len(ids) == count else []
