"""Ray orchestration: the rollout manager and the train actor (slime's two actor roles).

* :class:`RolloutManager` owns the serving side through a rollout *service*
  (``--rollout-service``, :class:`slime.plugins.hooks.RolloutService`; the installed default serves,
  records and judges live conversations) and calls the rollout function to turn what the service
  collected into samples. The run's method builds the service's judge side
  (:meth:`slime.methods.Method.build_judge`).
* :class:`TrainActor` owns the policy (transformers, optionally peft LoRA) and the optimizer
  (:class:`slime.trainer.backend.TrainingBackend`) with the loss (``--custom-loss-function-path``, else
  the method's, else PPO), runs the method's per-step sample preparation, checkpoints, and exports
  weights for serving.

Ray stays on loopback: a local cluster is started with node IP 127.0.0.1 unless ``RAY_ADDRESS``
points at a running one (as under ``ray job submit``). Both actors take 0 CPUs so they fit a
laptop; each sets torch's thread count to the cores it may use (its CPU affinity). The rollout manager is a threaded
actor, so ``shutdown`` and ``metrics`` are answered while a rollout is being collected.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import signal
import sys
import threading
from pathlib import Path

import ray

from slime.guards.admission import AdmissionPolicy, admit
from slime.plugins.calls import call_sync
from slime.trainer.checkpoint_layout import RUN_CONFIG, find_checkpoint_of_version, resume_point  # noqa: F401 (RUN_CONFIG re-exported)
from slime.guards.collapse import act_on_collapse
from slime.orchestration.fault_points import reached
from slime.methods.registry import load_method_class
from slime.config.paths import CALLER_CWD_ENV, published_dir
from slime.config.run_args import job_runtime_env
from slime.guards.promotion import GateData, measure_version
from slime.plugins.rollout import load_rollout_function, normalize_rollout_output, rollout_choice, rollout_spec
from slime.orchestration.services import load_service_class
from slime.trainer.registry import load_train_backend
from slime.omp import usable_cores

log = logging.getLogger(__name__)


#: set by Ray in a submitted job's entrypoint (the job's runtime_env and metadata)
JOB_CONFIG_ENV = "RAY_JOB_CONFIG_JSON_ENV_VAR"


def driver_runtime_env() -> dict:
    """The Ray ``runtime_env`` of a driver started by hand on a running cluster
    (``RAY_ADDRESS=<cluster> python slime/train.py``): what a launch script gives a submitted job
    (:func:`slime.config.run_args.job_runtime_env`: the environment fallbacks set, the variables
    ``SLIME_JOB_ENV`` names) and the working directory as ``SLIME_CALLER_CWD`` (unless set), read
    from this process; returns ``{"env_vars": {...}}``. The run's actors
    live in the cluster's worker processes, which inherit neither this process's environment nor
    its working directory: without it a run with no ``--save`` put its trajectory store in the
    head's directory, and a plugin's variables were unset in the actors."""
    runtime_env = job_runtime_env()
    runtime_env["env_vars"].setdefault(CALLER_CWD_ENV, str(Path.cwd()))  # unless the caller named one
    return runtime_env


def init_ray() -> None:
    """Connect to ``RAY_ADDRESS`` (by hand, with :func:`driver_runtime_env`; in a submitted job,
    with the job's) or start a private local cluster bound to 127.0.0.1."""
    if ray.is_initialized():
        return
    if os.environ.get("RAY_ADDRESS"):
        ray.init(address=os.environ["RAY_ADDRESS"], log_to_driver=True,
                 runtime_env=None if JOB_CONFIG_ENV in os.environ else driver_runtime_env())
    else:
        ray.init(address="local", _node_ip_address="127.0.0.1", include_dashboard=False,
                 num_cpus=os.cpu_count() or 1,
                 log_to_driver=True)
    _python_sigterm_handler_back()


def _python_sigterm_handler_back() -> None:
    """Ray's core worker installs absl's failure-signal handler for SIGTERM when the driver
    connects: it logs "SIGTERM received" and aborts, so no ``finally`` runs and the policy server
    and the Ray cluster a job started outlive it. Put the Python-level handler back (Ray's own,
    ``sys.exit(15)``, or the caller's, e.g. the main job's ``sigterm_unwinds``) so that SIGTERM
    unwinds. Only in the main thread (where ``signal.signal`` works)."""
    handler = signal.getsignal(signal.SIGTERM)
    if threading.current_thread() is threading.main_thread() and handler is not None:
        signal.signal(signal.SIGTERM, handler)


def _use_all_cores(share: int = 1, threads: int = 0) -> None:
    """Ray starts workers niced and with OMP_NUM_THREADS=1; a trainer wants the cores it may use
    (:func:`slime.omp.usable_cores`; its ``1 / share`` when ``share`` processes train on them side
    by side), or ``threads`` when given (``--train-threads``)."""
    _undo_ray_niceness()
    _size_torch_threads(share, threads)


def _undo_ray_niceness() -> None:
    """Run at normal priority, as the processes this one starts then do (Ray starts workers niced)."""
    try:
        os.setpriority(os.PRIO_PROCESS, 0, 0)
    except OSError:  # not allowed to lower niceness: keep Ray's priority
        pass


def _size_torch_threads(share: int = 1, threads: int = 0) -> None:
    """torch's intra-op threads: ``threads``, else the usable cores over ``share`` (see :func:`_use_all_cores`)."""
    import torch
    torch.set_num_threads(threads or max(1, usable_cores() // max(1, share)))


@ray.remote(num_cpus=0, max_concurrency=4)
class RolloutManager:
    """Serving + collection + judging side of a run.

    Args:
        cfg: the run's SlimeConfig.
        resume_step: step of the checkpoint the trainer resumed from (None for a fresh run).
    """

    def __init__(self, cfg, resume_step: int | None = None):
        logging.basicConfig(level=logging.INFO)
        _undo_ray_niceness()  # before the service starts its server, which inherits the priority
        self.cfg = cfg
        self.method = load_method_class(cfg.advantage_estimator)(cfg)
        self.service = load_service_class(cfg.rollout_service)(cfg, resume_step, self.method)
        # torch is here only for a judge model the service runs in this process (a PRM, a
        # classifier); an offline run judged by a reward plugin never loads it (~1.5 s of a core)
        if "torch" in sys.modules:
            _size_torch_threads()
        self.rollout_spec = rollout_spec(cfg)
        self.rollout_fn = load_rollout_function(self.rollout_spec)
        self.args = self.service.rollout_args()

    def placement(self) -> dict:
        """Where the serving side runs: ``node_ip``, ``gpu_ids`` (Ray's) and ``CUDA_VISIBLE_DEVICES``
        (the rollout engines' GPUs first, then the service's own, see :mod:`slime.orchestration.placement`)."""
        return {"node_ip": ray.util.get_node_ip_address(), "gpu_ids": [str(i) for i in ray.get_gpu_ids()],
                "CUDA_VISIBLE_DEVICES": os.environ.get("CUDA_VISIBLE_DEVICES")}

    def server_url(self) -> str | None:
        """Base URL the service serves at (no ``/v1``), or None when it serves nothing."""
        return getattr(self.service, "server_url", None)

    def generate(self, rollout_id: int, evaluation: bool = False):
        """Run the rollout function; returns ``(samples flattened, metrics)``.

        Raises:
            slime.plugins.loader.PluginError: the rollout function returned something else than sample
                groups (see :func:`slime.plugins.rollout.normalize_rollout_output`).
            slime.plugins.failures.PluginFailureError: too many samples of the step failed.
        """
        out = call_sync(self.rollout_fn, self.args, rollout_id, self.service.data_source, evaluation=evaluation)
        groups, metrics = normalize_rollout_output(out, self.rollout_spec)
        samples = [s for g in groups for s in g]
        return samples, {**self.service.metrics(), **metrics}

    def mark_trained(self, samples, step: int) -> None:
        """Record that ``samples`` were trained in ``step`` (exactly-once bookkeeping)."""
        self.service.data_source.mark_trained(samples, step)

    def release(self, samples) -> None:
        """Return samples of a failed step to the data source."""
        self.service.data_source.release(samples)

    def publish_weights(self, path: str, version: int, gate: dict | None = None) -> int:
        """Send new weights to serving (with the promotion gate's metrics of that version, which
        the service may record); returns the served version."""
        if gate is None:
            return self.service.publish_weights(path, version)
        return self.service.publish_weights(path, version, gate=gate)

    def served_version(self) -> int | None:
        """The version serving runs now, when the service can tell (its ``served_version()``)."""
        fn = getattr(self.service, "served_version", None)
        return fn() if fn is not None else None

    def gate_data(self):
        """The promotion gate's items (:class:`slime.guards.promotion.GateData`): the service's
        ``gate_data()``, or nothing to measure when the service has none."""
        fn = getattr(self.service, "gate_data", None)
        return fn() if fn is not None else GateData()

    def metrics(self) -> dict:
        """Current service counters."""
        return self.service.metrics()

    def shutdown(self) -> None:
        """Stop the service (judges, server)."""
        self.service.close()


@ray.remote(num_cpus=0)
class TrainActor:
    """The policy trainer (wraps :class:`slime.trainer.backend.TrainingBackend`): train rank ``rank`` of
    ``world_size`` (:class:`slime.orchestration.train_group.TrainGroup` starts them; every method but
    :meth:`address` runs after :meth:`setup`). With ``world_size > 1`` every rank receives each
    call with the same arguments (collectives inside) and trains its share of each global batch."""

    def __init__(self, cfg, rank: int = 0, world_size: int = 1):
        logging.basicConfig(level=logging.INFO)
        self.cfg, self.rank, self.world_size = cfg, int(rank), int(world_size)

    def address(self) -> str:
        """``host:port`` for the process group's TCP store: this node's IP and a free port."""
        import socket

        with socket.socket() as sock:
            sock.bind(("", 0))
            port = sock.getsockname()[1]
        return f"{ray.util.get_node_ip_address()}:{port}"

    def placement(self) -> dict:
        """Where this rank runs: ``rank``, ``node_ip``, ``gpu_ids`` (Ray's), ``CUDA_VISIBLE_DEVICES``,
        ``device`` and ``dtype`` of the policy (after :meth:`setup`)."""
        backend = getattr(self, "backend", None)
        return {"rank": self.rank, "node_ip": ray.util.get_node_ip_address(),
                "gpu_ids": [str(i) for i in ray.get_gpu_ids()],
                "CUDA_VISIBLE_DEVICES": os.environ.get("CUDA_VISIBLE_DEVICES"),
                "device": str(backend.device) if backend else None,
                "dtype": str(backend.param_dtype).replace("torch.", "") if backend else None}

    def setup(self, address: str | None = None) -> None:
        """Build the policy, optimizer and loss: on this actor's GPU in bfloat16 when Ray gave it
        one and torch sees CUDA, else on CPU in float32; with ``world_size > 1`` first join the
        process group at ``address`` (rank 0's :meth:`address`) and shard the policy (FSDP2)."""
        _use_all_cores(share=self.cfg.actor_num_gpus_per_node, threads=self.cfg.train_threads)
        cfg = self.cfg
        self.method = load_method_class(cfg.advantage_estimator)(cfg)
        # the training stack loads here, in the actor's process, by --train-backend (the driver,
        # which imports this module for the actor classes, never loads torch)
        self.backend = load_train_backend(cfg.train_backend).for_rank(
            cfg, self.method, self.rank, self.world_size, address, gpu_assigned=bool(ray.get_gpu_ids()))
        self.export_root = published_dir(cfg)
        model_config = getattr(self.backend.model, "config", None)
        self.admission = AdmissionPolicy.from_config(
            cfg, getattr(model_config, "max_position_embeddings", None), rollout_choice(cfg).generates)
        log.info("sample admission: %s", self.admission)
        if cfg.save and self.rank == 0:  # what the run was started with (before_after.sh reads the base model from it)
            Path(cfg.save).mkdir(parents=True, exist_ok=True)
            (Path(cfg.save) / RUN_CONFIG).write_text(json.dumps(cfg.to_dict(), indent=2, default=str))

    def admit(self, samples):
        """The context limit, the truncated-reply policy and the rollout log-probs of samples
        without engine log-probs (:func:`slime.guards.admission.admit`); returns ``(samples, metrics)``."""
        return admit(samples, self.admission, self.backend)

    def prepare_samples(self, samples):
        """The method's per-step work with the policy (:meth:`slime.methods.Method.prepare_samples`)."""
        return self.method.prepare_samples(self.backend, samples)

    def policy_logprobs(self, samples):
        """The policy's log-probs of each sample's response (:meth:`slime.trainer.backend.TrainingBackend.policy_logprobs`)."""
        return self.backend.policy_logprobs(samples)

    def resume(self) -> int | None:
        """Load ``--resume-from-checkpoint`` if given; returns its step (None otherwise)."""
        if not self.cfg.resume_from_checkpoint:
            return None
        if resume_point(self.cfg.resume_from_checkpoint) is None:  # died before its first checkpoint
            log.info("%s holds no checkpoint yet: resuming at step 0 from the base model",
                     self.cfg.resume_from_checkpoint)
            return 0
        state = self.backend.load(self.cfg.resume_from_checkpoint)
        self.backend.remember_initial_weights()  # a resumed run started from these
        return int(state.step)

    def train_step(self, samples, step: int | None = None) -> dict:
        """One optimizer step per global batch of ``samples`` (train step ``step`` of the run, for
        :func:`slime.orchestration.fault_points.reached`); returns the last step's metrics.

        When the collapse guard reports a collapse (``guard/collapse``,
        :mod:`slime.guards.collapse`), ``--on-collapse rollback`` restores the last good weights
        (:meth:`restore_last_good`) and lowers the learning rate; ``pause`` stops here with
        ``guard/pause = 1`` in the metrics (the run loop then ends). Either way ``guard/event``
        holds the one line that said so."""
        if step is not None:
            reached("train_step", step)
        gbs = self.cfg.global_batch_size or len(samples)
        metrics: dict = {}
        for i in range(0, len(samples), gbs):
            metrics = self.backend.train_step(samples[i:i + gbs])
            if metrics.get("guard/collapse"):
                metrics.update(act_on_collapse(self.backend, self.restore_last_good, step))
                if metrics["guard/pause"]:
                    break
        return metrics

    def restore_last_good(self) -> dict:
        """Restore the newest checkpoint under ``--save`` (weights and optimizer state), or the
        weights the run started with when there is none (optimizer state reset); the step count and
        ``weight_version`` keep counting up (:meth:`slime.trainer.backend.TrainingBackend.restore_last_good`).
        Returns ``{"restored": path or "initial", "step": ..., "weight_version": ...}``."""
        return self.backend.restore_last_good(self.cfg.save)

    def restore_version(self, version: int) -> dict:
        """Go back to the weights of served version ``version`` (serving was rolled back to it,
        ``POST /admin/rollback``): its checkpoint under ``--save`` (weights and optimizer state), or
        the weights the run started with when ``version`` is the one it started from; the step
        count and ``weight_version`` keep counting up. Returns what
        :meth:`slime.trainer.backend.TrainingBackend.restore_last_good` returns, plus ``"version"``.

        Raises:
            FileNotFoundError: no checkpoint holds ``version`` (e.g. pruned, or never saved).
        """
        ckpt = find_checkpoint_of_version(self.cfg.save, version) if self.cfg.save else None
        if ckpt is None and version != self.backend.initial_version:
            raise FileNotFoundError(f"no checkpoint of weight version {version} under {self.cfg.save}")
        out = self.backend.restore_last_good(None, checkpoint=ckpt)
        return {**out, "version": int(version)}

    def save(self, step: int, data_cursor=None) -> str:
        """Write ``<save>/checkpoint-<step>`` (the run's config in its trainer state); returns its path."""
        reached("save", step)
        extra = {"config": json.loads(json.dumps(self.cfg.to_dict(), default=str))}
        return str(self.backend.save(self.cfg.save, step=step, data_cursor=data_cursor, extra=extra))

    def weight_version(self) -> int:
        """The version of the trainer's current weights."""
        return self.backend.weight_version

    def gate_measure(self, data, skip=frozenset()):
        """Measure the current weights for the promotion gate
        (:func:`slime.guards.promotion.measure_version` on ``data``'s items not in ``skip``)."""
        reached("gate", self.backend.weight_version)  # a fault test may kill the trainer here
        return measure_version(self.backend, data, set(skip), canary_max_tokens=self.cfg.gate_canary_max_tokens,
                               temperature=self.cfg.rollout_temperature, seed=self.cfg.seed)

    def export_weights(self) -> tuple[str, int]:
        """Export the current weights for serving to ``<save>/published/version-<N>``; returns
        ``(path, weight_version)``. Older exports stay until :meth:`prune_published`."""
        version = self.backend.weight_version
        path = self.backend.export_weights(self.export_root / f"version-{version}")
        return str(path), version

    def prune_published(self, served: int) -> list[str]:
        """Delete published versions older than the newest ``--keep-published-versions``, once
        serving runs version ``served`` (the engine holds the weights it serves in memory and
        loaded no older folder since, so no request reads them); returns the deleted folder names."""
        return prune_published(self.export_root, served, self.cfg.keep_published_versions)


def prune_published(root: Path, served: int, keep: int) -> list[str]:
    """Delete ``root/version-<N>`` folders except the ``keep`` newest that are not newer than
    ``served`` (and any newer than ``served``, not yet swapped in); returns the deleted names."""
    versions = []
    for folder in Path(root).glob("version-*"):
        try:
            versions.append((int(folder.name.split("-", 1)[1]), folder))
        except ValueError:
            continue
    kept = {v for v, _ in sorted((x for x in versions if x[0] <= served), reverse=True)[:keep]}
    gone = []
    for v, folder in sorted(versions):
        if v <= served and v not in kept:
            shutil.rmtree(folder, ignore_errors=True)
            gone.append(folder.name)
    return gone
