"""The GPUs of the serving side, inside the rollout manager (issue 15).

The rollout manager asks Ray for ``--rollout-num-gpus`` GPUs for the rollout engine plus
``--prm-num-gpus`` for the PRM/teacher (:func:`slime.orchestration.placement.rollout_gpu_request`; pinned to
``--rollout-gpu-ids`` / ``--prm-gpu-ids`` when given), so its ``CUDA_VISIBLE_DEVICES`` lists the
engine's GPUs first, then the PRM's. From that list:

* the policy server the service starts gets the first ``--rollout-num-gpus`` ids as its
  ``CUDA_VISIBLE_DEVICES`` and ``--device cuda`` (the transformers engine serves on one device,
  the first of them);
* with ``--backend vllm|sglang`` the server starts its engine servers on those ids, one replica
  per ``--rollout-num-gpus-per-engine`` of them (:func:`server_backend_args`);
* a local PRM model, and the OPD hint judge's own model (the teacher's hint writer), load in
  bfloat16 on the first PRM GPU (``cuda:<rollout GPUs>`` in the
  manager's numbering).

Where torch sees no CUDA (a CPU machine, or a Ray head that declares logical GPUs only) the
server and the PRM stay on CPU; the server still gets its ``CUDA_VISIBLE_DEVICES``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

__all__ = ["prm_device", "server_backend_args", "server_device_args", "server_env", "visible_gpus"]


def visible_gpus() -> list[str]:
    """This process's ``CUDA_VISIBLE_DEVICES`` ids (``[]`` when unset or empty)."""
    return [i for i in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if i.strip()]


def _cuda() -> bool:
    import torch

    return torch.cuda.is_available()


def server_env(cfg: Any) -> dict[str, str]:
    """``{"CUDA_VISIBLE_DEVICES": <the rollout engine's ids>}`` for the policy server, ``{}`` when
    the manager holds no GPU for it."""
    ids = visible_gpus()[:int(cfg.rollout_num_gpus)]
    return {"CUDA_VISIBLE_DEVICES": ",".join(ids)} if ids else {}


def server_device_args(cfg: Any) -> tuple[str, ...]:
    """``("--device", "cuda")`` when the server gets GPUs and torch sees CUDA, else ``()``."""
    return ("--device", "cuda") if server_env(cfg) and _cuda() else ()


def server_backend_args(cfg: Any, log_dir: str) -> tuple[str, ...]:
    """The intercept server's engine flags for the job's ``--backend``: ``()`` for transformers;
    for vllm/sglang ``--backend``, ``--rollout-gpus`` (the rollout engine's ids as a list, so one
    id is not read as a count), ``--rollout-num-gpus-per-engine``, ``--engine-log-dir`` (under
    ``log_dir``) and the ``--engine-python`` / ``--engine-args`` / ``--engine-kv-cache-gib`` given to
    the job (a CPU replica's memory and threads are the server's to size:
    :mod:`openclaw_rl.engine.cpu_budget`)."""
    from openclaw_rl.rollout.flags import OpenClawFlags

    x = cfg.flags_of("service", OpenClawFlags)
    if x.backend == "transformers":
        return ()
    ids = visible_gpus()[:int(cfg.rollout_num_gpus)]
    args = ["--backend", x.backend, "--rollout-num-gpus-per-engine", str(cfg.rollout_num_gpus_per_engine),
            "--engine-log-dir", str(Path(log_dir) / "engines")]
    if ids:
        args += ["--rollout-gpus", ",".join(ids) + ("," if len(ids) == 1 else "")]
    if x.engine_python:
        args += ["--engine-python", x.engine_python]
    if x.engine_args:
        args += ["--engine-args", x.engine_args]
    if x.engine_kv_cache_gib:
        args += ["--engine-kv-cache-gib", str(x.engine_kv_cache_gib)]
    return tuple(args)


def prm_device(cfg: Any) -> str | None:
    """The local PRM/teacher model's torch device (``cuda:<n>``), or None (CPU) when no PRM GPU
    is held or torch sees no CUDA."""
    from openclaw_rl.rollout.flags import OpenClawFlags

    x = cfg.flags_of("service", OpenClawFlags)
    first = int(cfg.rollout_num_gpus)
    if not x.prm_num_gpus or len(visible_gpus()) <= first or not _cuda():
        return None
    return f"cuda:{first}"
