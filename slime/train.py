"""The train loop: rollout -> samples -> the method's per-step preparation (train actor) -> the
method's advantages -> loss -> optimizer step -> checkpoint -> publish weights.
``python slime/train.py ...`` from the repository root (as the launch scripts' ``ray job submit
--working-dir <repo> -- python slime/train.py`` does).

The method (``--advantage-estimator``: a registered name or ``path/to/method.py:Class``) and the
rollout service (``--rollout-service``) are found by name or path (:mod:`slime.methods.registry`,
:mod:`slime.orchestration.services`); this loop names neither (docs/architecture.md, "The seams").

Two variants, both plain code below:

* synchronous (default): each rollout is collected after the previous weights were published;
* ``--async-train`` (slime's ``train_async.py``): the next rollout is collected while the current
  step trains, so judging/serving and training overlap; samples are then at most one weight
  version stale, which the staleness metrics and ``--max-staleness`` account for.

Serving never pauses in either: the rollout service answers throughout and swaps weights in
between requests.
"""

from __future__ import annotations

import json
import logging
import signal
import sys
import time
import traceback
from pathlib import Path

if __package__ in (None, ""):  # `python slime/train.py`: the repository, not slime/, is on the path
    sys.path[0] = str(Path(__file__).resolve().parent.parent)

from slime.orchestration.actor_death import ActorDied, actor_death_line  # noqa: E402
from slime.config.arguments import ConfigError  # noqa: E402
from slime.trainer.checkpoint_layout import resume_point, resume_step  # noqa: E402
from slime.errors import one_line, root_cause_line  # noqa: E402,F401 (part of this module's API)
from slime.methods.registry import load_method_class  # noqa: E402
from slime.orchestration.monitor import MetricsLogger  # noqa: E402
from slime.orchestration.placement import actor_options, rollout_gpu_request  # noqa: E402
from slime.plugins.check import check_plugins  # noqa: E402
from slime.plugins.failures import plugin_error_message  # noqa: E402
from slime.guards.promotion import GateFailureAction, GateThresholds, PromotionGate  # noqa: E402
from slime.orchestration.publish import Publisher  # noqa: E402
from slime.orchestration.ray_actors import RolloutManager, init_ray  # noqa: E402
from slime.plugins.rollout import rollout_choice  # noqa: E402
from slime.config.run_args import parse_run_args, with_absolute_paths  # noqa: E402
from slime.orchestration.services import load_service_class  # noqa: E402
from slime.orchestration.train_group import TrainGroup  # noqa: E402
from slime.trainer.models import check_model_path  # noqa: E402

log = logging.getLogger("slime.train")


def check_run(cfg) -> list[str]:
    """Every start-up check of a run, before Ray or any model starts: the rollout service's checks
    (its flags and data files), all plugins (:func:`slime.plugins.check.check_plugins`), the
    method's own checks, and the flag combinations that involve the method.

    Returns:
        One line per plugin in use (what was loaded, in which convention).

    Raises:
        ConfigError / ValueError: a bad flag or combination, a ``--model-path`` that names no model
            (one-line message).
        slime.plugins.loader.PluginError: a plugin, method or service that does not load or check.
    """
    check_model_path(cfg.model_path)
    service_cls = load_service_class(cfg.rollout_service)
    for warning in service_cls.check(cfg):
        log.warning("%s", warning)
    if cfg.resume_from_checkpoint:
        try:
            resume_point(cfg.resume_from_checkpoint)
        except FileNotFoundError as exc:
            raise ConfigError(f"--resume-from-checkpoint {cfg.resume_from_checkpoint}: {exc}") from None
    if not cfg.num_rollout and num_rollout(cfg) is None:
        raise ConfigError("--num-rollout is required (the number of train steps; only offline data has a default)")
    method = load_method_class(cfg.advantage_estimator)(cfg)
    lines = check_plugins(cfg, method)
    method.validate()
    if cfg.n_samples_per_prompt >= 2 and not rollout_choice(cfg).groups:
        raise ConfigError(f"--n-samples-per-prompt {cfg.n_samples_per_prompt}: a live turn has one response, the "
                          "one its user saw and answered, so there is no group of responses to one prompt to "
                          "sample or compare; use 1 (each turn its own sample) or --prompt-data for groups")
    if "loss_type" in cfg.explicit and cfg.loss_type == "policy_loss" and method.loss_function():
        raise ConfigError(f"--loss-type policy_loss contradicts --advantage-estimator {cfg.advantage_estimator}, "
                          f"whose loss is {method.loss_function()}; drop --loss-type")
    return lines


def num_rollout(cfg) -> int | None:
    """The run's number of steps: ``--num-rollout``, else the rollout service's default
    (``default_num_rollout(cfg)``, e.g. one pass over offline data), else None."""
    if cfg.num_rollout:
        return int(cfg.num_rollout)

    default = getattr(load_service_class(cfg.rollout_service), "default_num_rollout", None)
    return default(cfg) if default is not None else None


def train(cfg, logger: MetricsLogger | None = None) -> dict:
    """Check the run (:func:`check_run`), then run the loop for ``cfg.num_rollout`` steps.

    Returns:
        A summary dict.

    Raises:
        ConfigError / ValueError / slime.plugins.loader.PluginError: from :func:`check_run`, before
            anything starts.
        slime.orchestration.actor_death.ActorDied: an actor's process died (its one-line message names it, the
            step and how to resume), after the service is shut down.
        Other exceptions from the actors propagate after the service is shut down.
    """
    for line in check_run(cfg):
        log.info("plugin %s", line)
    return run_loop(cfg, logger)


def run_loop(cfg, logger: MetricsLogger | None = None) -> dict:
    """The loop itself, for a config that passed :func:`check_run`; returns a summary dict
    (``paused``: the collapse guard's line, when ``--on-collapse pause`` stopped training)."""
    import ray
    from ray.exceptions import RayActorError

    if not cfg.num_rollout:
        cfg = cfg.replace(num_rollout=num_rollout(cfg))
        log.info("--num-rollout %d (the rollout service's default)", cfg.num_rollout)
    init_ray()
    method = load_method_class(cfg.advantage_estimator)(cfg)  # lives for the whole run
    logger = logger or MetricsLogger(cfg.log_dir)
    # the train ranks (asked for first, so they get their GPUs first) and the rollout manager start
    # together: each loads the model, and neither needs the other until the first rollout
    trainer = TrainGroup(cfg, wait=False)
    resumed_at = resume_step(cfg.resume_from_checkpoint)
    manager = RolloutManager.options(**rollout_manager_options(cfg)).remote(cfg, resumed_at)
    start = resumed_at or 0
    summary = {"steps": 0, "versions_published": 0, "samples_trained": 0, "start_step": start}
    working_step = start + 1
    t0 = time.time()
    try:
        trainer.wait_ready()
        loaded = trainer.resume()
        if loaded != resumed_at:
            raise RuntimeError(f"--resume-from-checkpoint {cfg.resume_from_checkpoint}: the train actors loaded step "
                               f"{loaded}, its trainer_state.json says {resumed_at}")
        publisher = Publisher(trainer, manager, served=None if resumed_at else 0,
                              gate=PromotionGate(cfg.promotion_gate, GateThresholds(
                                  cfg.gate_logprob_margin, cfg.gate_max_nll_rise, cfg.gate_max_new_problems)),
                              on_gate_failure=GateFailureAction(cfg.on_gate_failure))
        if resumed_at is not None:  # serve the resumed weights: new turns and staleness count from them
            publisher.publish()
            summary["resumed_weight_version"] = trainer.weight_version()
        pending = manager.generate.remote(start)
        saved_step, cursor = start, None
        for rollout_id in range(start, cfg.num_rollout):
            working_step = rollout_id + 1
            rollout_samples, rollout_metrics = ray.get(pending)
            if not rollout_samples:  # a finite source (offline data) is used up
                log.info("the rollout returned no samples (its data is used up): stopping after step %d", rollout_id)
                if cfg.save and saved_step != rollout_id:
                    trainer.save(rollout_id, cursor)
                summary["stopped_early"] = True
                break
            last = rollout_id + 1 == cfg.num_rollout
            if cfg.async_train and not last:
                pending = manager.generate.remote(rollout_id + 1)  # overlaps with training
            try:
                samples, admit_metrics = trainer.admit(rollout_samples)
                if method.prepares_samples():
                    samples = trainer.prepare_samples(samples)
                samples, adv_metrics = method.compute_advantages(samples)
                gate_metrics = publisher.before_step()  # the last good weights on the gate's new items
                train_metrics = trainer.train_step(samples, rollout_id + 1)
            except Exception:
                ray.get(manager.release.remote(rollout_samples))
                raise
            step = rollout_id + 1
            ray.get(manager.mark_trained.remote(rollout_samples, step))  # dropped ones too: consumed
            cursor = max([s.source_id or 0 for s in rollout_samples] + ([cursor] if cursor is not None else []))
            if train_metrics.get("guard/pause"):  # the collapse guard paused training: nothing saved or published
                summary["paused"] = train_metrics.get("guard/event")
                logger.log(step, {**trainer_metrics(train_metrics), **rollout_metrics, **admit_metrics,
                                  **adv_metrics, "elapsed_s": time.time() - t0})
                break
            save_now = bool(cfg.save) and bool((cfg.save_interval and step % cfg.save_interval == 0) or last)

            def save(step=step, cursor=cursor):  # a promoted version is checkpointed before it is served
                nonlocal saved_step
                if cfg.save and saved_step != step:
                    trainer.save(step, cursor)
                    saved_step = step

            # gated (a rejected version is never exported); a failed publish is counted, never fatal
            publish_metrics = {**gate_metrics, **publisher.publish(step, save if publisher.gating else None)}
            if save_now or (publisher.paused and cfg.save):
                save()
            rollout_metrics = {**rollout_metrics, **admit_metrics}
            summary["steps"] += 1
            summary["versions_published"] += publish_metrics["publish/ok"]
            summary["samples_trained"] += len(samples)
            metrics = {**trainer_metrics(train_metrics), **rollout_metrics, **adv_metrics,
                       "loss": train_metrics.get("loss", float("nan")), **publish_metrics,
                       "elapsed_s": time.time() - t0}
            logger.log(step, metrics)
            if publisher.paused:
                summary["paused"] = publisher.paused
                break
            if not cfg.async_train and not last:
                pending = manager.generate.remote(rollout_id + 1)
        summary["final_metrics"] = ray.get(manager.metrics.remote())
        summary["publish_failures"] = publisher.failures
        if publisher.gate is not None:
            summary["promotion_gate"] = {**publisher.gate.to_dict(), "rejected": publisher.rejected,
                                         "versions": publisher.gate.history}
    except RayActorError as exc:  # an actor's process is gone (SIGKILL, OOM killer, crash): one line
        raise ActorDied(actor_death_line(exc, cfg, working_step)) from exc
    finally:
        try:
            ray.get(manager.shutdown.remote(), timeout=120)
        except Exception as exc:  # keep the original error
            log.warning("shutdown failed: %s", one_line(exc, 300))
        summary["plot"] = str(logger.close())
    summary["wall_s"] = round(time.time() - t0, 1)
    return summary


def trainer_metrics(train_metrics: dict) -> dict:
    """A train step's metrics as the run logs them: ``train/<name>``, except the collapse guard's
    ``guard/*`` (:mod:`slime.guards.collapse`), which keep their names."""
    return {(k if k.startswith("guard/") else f"train/{k}"): v for k, v in train_metrics.items()}


def rollout_manager_options(cfg) -> dict:
    """Ray options of the run's rollout manager: the GPUs of the rollout engines and of the
    service's own models (:func:`slime.orchestration.placement.rollout_gpu_request`), pinned to
    ``--rollout-gpu-ids`` (and the service's ids) when given."""
    return actor_options(*rollout_gpu_request(cfg, load_service_class(cfg.rollout_service)))


def _interrupt_on_sigterm() -> None:
    """SIGTERM (``ray job stop``, the launch scripts' Ctrl-C) raises KeyboardInterrupt in the main
    thread, so :func:`run_loop` shuts the rollout service down (the server it started, the judges)
    before the process ends."""
    def handler(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")

    try:
        signal.signal(signal.SIGTERM, handler)
    except ValueError:  # not the main thread: leave the default
        pass


def main(argv: list[str] | None = None, prog: str = "slime/train.py") -> int:
    """CLI entry point; returns the exit code (2 on a configuration error). ``prog`` names the
    script in usage and error lines (``slime/train_async.py`` when run as that).

    Every path flag is made absolute against the caller's directory before anything starts
    (:func:`slime.config.run_args.with_absolute_paths`), so the actors, the server the rollout service
    starts and a Ray job's copy of the repository all read and write where the caller meant."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        cfg = with_absolute_paths(parse_run_args(argv, prog=prog))  # once, against the caller's directory
        for line in check_run(cfg):  # a bad flag or plugin fails here, before Ray starts
            log.info("plugin %s", line)
    except ValueError as exc:  # ConfigError and PluginError are ValueErrors
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return 2
    _interrupt_on_sigterm()
    try:
        summary = run_loop(cfg)
    except KeyboardInterrupt:  # Ctrl-C, or SIGTERM from `ray job stop`: run_loop shut the service down
        print(f"{prog}: stopped; the rollout service (server, judges) was shut down", file=sys.stderr)
        return 130
    except Exception as exc:  # one line naming the cause; the full traceback goes to a file
        message = plugin_error_message(exc)  # already names the plugin and what it did
        if message is None:
            message = str(exc) if isinstance(exc, ActorDied) else root_cause_line(exc)
            where = Path(cfg.log_dir) / "error.log"
            try:
                where.parent.mkdir(parents=True, exist_ok=True)
                where.write_text("".join(traceback.format_exception(exc)))
                message += f" (traceback: {where})"
            except OSError:
                pass
        print(f"{prog}: error: {message}", file=sys.stderr)
        return 1
    print(json.dumps(summary, indent=2, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
