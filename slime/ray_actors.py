"""Ray orchestration: the rollout manager and the train actor (slime's two actor roles).

* :class:`RolloutManager` owns the serving side (through a rollout *service*, by default
  :class:`openclaw_rl.rollout.service.OpenClawRolloutService`: intercept server, trajectory
  store, judges) and calls the rollout function to turn judged turns into samples.
* :class:`TrainActor` owns the policy (transformers, optionally peft LoRA) and the optimizer
  (:class:`slime.backend.TrainingBackend`), checkpoints, and exports weights for serving.

Ray stays on loopback: a local cluster is started with node IP 127.0.0.1 unless ``RAY_ADDRESS``
points at a running one (as under ``ray job submit``). Both actors take 0 CPUs so they fit a
laptop; each sets torch's thread count to the machine's cores. The rollout manager is a threaded
actor, so ``shutdown`` and ``metrics`` are answered while a rollout is being collected.
"""

from __future__ import annotations

import inspect
import logging
import os
import shutil
from pathlib import Path

import ray

from slime.plugins import load_function
from slime.rollout_plugins import LIVE_ROLLOUT, load_rollout_function, normalize_rollout_output, rollout_spec

log = logging.getLogger(__name__)
DEFAULT_ROLLOUT_FUNCTION = LIVE_ROLLOUT
DEFAULT_ROLLOUT_SERVICE = "openclaw_rl.rollout.service.OpenClawRolloutService"


def init_ray() -> None:
    """Connect to ``RAY_ADDRESS`` or start a private local cluster bound to 127.0.0.1."""
    if ray.is_initialized():
        return
    if os.environ.get("RAY_ADDRESS"):
        ray.init(address=os.environ["RAY_ADDRESS"], log_to_driver=True)
    else:
        ray.init(address="local", _node_ip_address="127.0.0.1", include_dashboard=False,
                 num_cpus=os.cpu_count() or 1,
                 log_to_driver=True)


def _use_all_cores() -> None:
    """Ray starts workers niced and with OMP_NUM_THREADS=1; a trainer wants the whole machine."""
    import torch
    torch.set_num_threads(os.cpu_count() or 1)
    try:
        os.setpriority(os.PRIO_PROCESS, 0, 0)
    except OSError:  # not allowed to lower niceness: keep Ray's priority
        pass


def _with_service(cfg, service):
    """``cfg`` with the service's ``server_url`` and ``rl_buffer_dir`` in ``extra`` (what the
    default generate hook and user plugins reach the server and store through)."""
    import dataclasses
    import types

    extra = dict(cfg.extra)
    if getattr(service, "server_url", None):
        extra["server_url"] = service.server_url
    if getattr(service, "buffer_dir", None):
        extra["rl_buffer_dir"] = str(service.buffer_dir)
    return dataclasses.replace(cfg, extra=types.MappingProxyType(extra))


@ray.remote(num_cpus=0, max_concurrency=4)
class RolloutManager:
    """Serving + collection + judging side of a run.

    Args:
        cfg: the run's SlimeConfig.
        resume_step: step of the checkpoint the trainer resumed from (None for a fresh run).
    """

    def __init__(self, cfg, resume_step: int | None = None):
        logging.basicConfig(level=logging.INFO)
        _use_all_cores()
        self.cfg = cfg
        service_cls = load_function(cfg.extra.get("rollout_service") or DEFAULT_ROLLOUT_SERVICE,
                                    "--rollout-service")
        self.service = service_cls(cfg, resume_step)
        self.rollout_spec = rollout_spec(cfg)
        self.rollout_fn = load_rollout_function(self.rollout_spec)
        self.args = _with_service(cfg, self.service)

    def server_url(self) -> str | None:
        """Base URL of the intercept server (no ``/v1``), or None offline."""
        return getattr(self.service, "server_url", None)

    def generate(self, rollout_id: int, evaluation: bool = False):
        """Run the rollout function; returns ``(samples flattened, metrics)``.

        Raises:
            slime.plugins.PluginError: the rollout function returned something else than sample
                groups (see :func:`slime.rollout_plugins.normalize_rollout_output`).
            slime.plugin_failures.PluginFailureError: too many samples of the step failed.
        """
        out = self.rollout_fn(self.args, rollout_id, self.service.data_source, evaluation=evaluation)
        if inspect.isawaitable(out):
            import asyncio
            out = asyncio.run(out)
        groups, metrics = normalize_rollout_output(out, self.rollout_spec)
        samples = [s for g in groups for s in g]
        return samples, {**self.service.metrics(), **metrics}

    def mark_trained(self, samples, step: int) -> None:
        """Record that ``samples`` were trained in ``step`` (exactly-once bookkeeping)."""
        self.service.data_source.mark_trained(samples, step)

    def release(self, samples) -> None:
        """Return samples of a failed step to the queue."""
        self.service.data_source.release(samples)

    def publish_weights(self, path: str, version: int) -> int:
        """Send new weights to serving; returns the served version."""
        return self.service.publish_weights(path, version)

    def metrics(self) -> dict:
        """Current service counters (judges, data source, backlog)."""
        return self.service.metrics()

    def shutdown(self) -> None:
        """Stop judges and the server."""
        self.service.close()


@ray.remote(num_cpus=0)
class TrainActor:
    """The policy trainer (wraps :class:`slime.backend.TrainingBackend`)."""

    def __init__(self, cfg):
        logging.basicConfig(level=logging.INFO)
        _use_all_cores()
        from slime.backend import TrainingBackend

        loss_fn = None
        spec = cfg.custom_loss_function_path
        if not spec and cfg.extra.get("distill_topk"):  # OPD's top-K reverse-KL loss plugin
            spec = "openclaw_rl/opd/topk_loss.py:topk_reverse_kl_loss"
        if spec:  # any of the three conventions, see slime.loss_plugins
            from slime.loss_plugins import load_loss_plugin
            loss_fn = load_loss_plugin(spec, cfg)
        self.cfg = cfg
        self.backend = TrainingBackend(cfg, loss_fn=loss_fn)
        self.export_root = Path(cfg.save or "outputs") / "published"

    def score_teacher(self, samples):
        """OPD / Combine: fill teacher and student log-probs (``--opd-teacher``); returns the samples."""
        from openclaw_rl.opd.teacher import score_teacher
        return score_teacher(self.backend, samples, self.cfg.extra.get("opd_teacher", "base"),
                             self.cfg.extra.get("distill_topk"))

    def resume(self) -> int | None:
        """Load ``--resume-from-checkpoint`` if given; returns its step (None otherwise)."""
        if not self.cfg.resume_from_checkpoint:
            return None
        state = self.backend.load(self.cfg.resume_from_checkpoint)
        return int(state.step)

    def train_step(self, samples) -> dict:
        """One optimizer step per global batch of ``samples``; returns the last step's metrics."""
        gbs = self.cfg.global_batch_size or len(samples)
        metrics: dict = {}
        for i in range(0, len(samples), gbs):
            metrics = self.backend.train_step(samples[i:i + gbs])
        return metrics

    def save(self, step: int, data_cursor=None) -> str:
        """Write ``<save>/checkpoint-<step>``; returns its path."""
        return str(self.backend.save(self.cfg.save, step=step, data_cursor=data_cursor))

    def export_weights(self) -> tuple[str, int]:
        """Export the current weights for serving; returns ``(path, weight_version)``."""
        version = self.backend.weight_version
        path = self.backend.export_weights(self.export_root / f"version-{version}")
        for old in self.export_root.glob("version-*"):  # keep the two newest exports
            if old.name not in (f"version-{version}", f"version-{version - 1}"):
                shutil.rmtree(old, ignore_errors=True)
        return str(path), version
