"""The train loop: rollout -> samples -> advantages -> loss -> optimizer step -> checkpoint ->
publish weights. ``python slime/train.py ...`` from the repository root (as the launch scripts'
``ray job submit --working-dir .. -- python slime/train.py`` does).

Two variants, both plain code below:

* synchronous (default): each rollout is collected after the previous weights were published;
* ``--async-train`` (slime's ``train_async.py``): the next rollout is collected while the current
  step trains, so judging/serving and training overlap; samples are then at most one weight
  version stale, which the staleness metrics and ``--max-staleness`` account for.

Serving never pauses in either: the intercept server answers throughout and swaps weights in
between requests.
"""

from __future__ import annotations

import argparse
import json
import logging
import re
import sys
import time
import traceback
from pathlib import Path

if __package__ in (None, ""):  # `python slime/train.py`: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from slime.advantages import compute_advantages  # noqa: E402
from slime.arguments import ConfigError, parse_args  # noqa: E402
from slime.monitor import MetricsLogger  # noqa: E402

log = logging.getLogger("slime.train")


def add_loop_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Flags of the loop itself (``--async-train``)."""
    g = parser.add_argument_group("loop")
    g.add_argument("--async-train", action="store_true",
                   help="collect the next rollout while the current step trains")
    g.add_argument("--rollout-service", default=None,
                   help="class owning serving/collection/judging (default: the OpenClaw service)")
    return parser


def default_arg_adders():
    """Argument groups of the loop and of the OpenClaw methods."""
    from openclaw_rl.rollout.args import add_openclaw_arguments
    return (add_loop_arguments, add_openclaw_arguments)


def _advantages(samples, cfg, trainer) -> tuple[list, dict]:
    """Per-token advantages: slime's estimators, or (``opd`` / ``combine``) the teacher scored by
    the train actor, then :func:`openclaw_rl.opd.advantages.compute_method_advantages`."""
    if cfg.advantage_estimator not in ("opd", "combine"):
        return compute_advantages(samples, cfg), {}
    import ray

    from openclaw_rl.opd.advantages import compute_method_advantages
    return compute_method_advantages(ray.get(trainer.score_teacher.remote(samples)), cfg)


def check_run(cfg) -> list[str]:
    """Every start-up check of a run, before Ray or any model starts: the OpenClaw flags, flag
    combinations, and all plugins (:func:`slime.plugin_check.check_plugins`).

    Returns:
        One line per plugin in use (what was loaded, in which convention).

    Raises:
        ConfigError / ValueError: a bad flag or combination (one-line message).
        slime.plugins.PluginError: a plugin that does not load or check.
    """
    from openclaw_rl.rollout.args import validate_openclaw
    from slime.plugin_check import check_plugins

    if not cfg.num_rollout:
        raise ConfigError("--num-rollout is required")
    validate_openclaw(cfg.extra)
    if cfg.extra.get("distill_topk") and cfg.advantage_estimator != "opd":
        raise ConfigError("--distill-topk needs --advantage-estimator opd")
    lines = check_plugins(cfg)
    if cfg.advantage_estimator == "grpo" and cfg.n_samples_per_prompt < 2 and not cfg.disable_rewards_normalization:
        raise ConfigError("--advantage-estimator grpo (the default) needs --n-samples-per-prompt >= 2; "
                          "live turns are single samples: use --advantage-estimator broadcast "
                          "(Binary RL), opd or combine")
    return lines


def train(cfg, logger: MetricsLogger | None = None) -> dict:
    """Check the run (:func:`check_run`), then run the loop for ``cfg.num_rollout`` steps.

    Returns:
        A summary dict.

    Raises:
        ConfigError / ValueError / slime.plugins.PluginError: from :func:`check_run`, before
            anything starts.
        Exceptions from the actors propagate after the server and judges are shut down.
    """
    for line in check_run(cfg):
        log.info("plugin %s", line)
    return run_loop(cfg, logger)


def run_loop(cfg, logger: MetricsLogger | None = None) -> dict:
    """The loop itself, for a config that passed :func:`check_run`; returns a summary dict."""
    import ray

    from slime.ray_actors import RolloutManager, TrainActor, init_ray

    init_ray()
    logger = logger or MetricsLogger(cfg.extra.get("log_dir") or "logs")
    trainer = TrainActor.remote(cfg)
    resume_step = ray.get(trainer.resume.remote())
    manager = RolloutManager.remote(cfg, resume_step)
    start = resume_step or 0
    summary = {"steps": 0, "versions_published": 0, "samples_trained": 0, "start_step": start}
    t0 = time.time()
    try:
        pending = manager.generate.remote(start)
        for rollout_id in range(start, cfg.num_rollout):
            samples, rollout_metrics = ray.get(pending)
            last = rollout_id + 1 == cfg.num_rollout
            if cfg.extra.get("async_train") and not last:
                pending = manager.generate.remote(rollout_id + 1)  # overlaps with training
            try:
                samples, adv_metrics = _advantages(samples, cfg, trainer)
                train_metrics = ray.get(trainer.train_step.remote(samples))
            except Exception:
                ray.get(manager.release.remote(samples))
                raise
            step = rollout_id + 1
            ray.get(manager.mark_trained.remote(samples, step))
            if cfg.save and ((cfg.save_interval and step % cfg.save_interval == 0) or last):
                ray.get(trainer.save.remote(step, max(s.metadata.get("store_id", 0) for s in samples)))
            path, version = ray.get(trainer.export_weights.remote())
            served = ray.get(manager.publish_weights.remote(path, version))
            summary["steps"] += 1
            summary["versions_published"] += 1
            summary["samples_trained"] += len(samples)
            metrics = {**{f"train/{k}": v for k, v in train_metrics.items()}, **rollout_metrics, **adv_metrics,
                       "loss": train_metrics.get("loss", float("nan")), "weight_version": served,
                       "elapsed_s": time.time() - t0}
            logger.log(step, metrics)
            if not cfg.extra.get("async_train") and not last:
                pending = manager.generate.remote(rollout_id + 1)
        summary["final_metrics"] = ray.get(manager.metrics.remote())
    finally:
        try:
            ray.get(manager.shutdown.remote(), timeout=120)
        except Exception as exc:  # keep the original error
            log.warning("shutdown failed: %s", exc)
        summary["plot"] = str(logger.close())
    summary["wall_s"] = round(time.time() - t0, 1)
    return summary


_ERROR_LINE = re.compile(r"^(?:[\w.]+\.)?(\w*(?:Error|Exception|Exit)\w*): (.+)$")


def root_cause_line(exc: BaseException) -> str:
    """One line for an exception that stopped a run: the innermost ``Name: message`` line of its
    (Ray task / actor) cause chain, else ``type: str(exc)``."""
    seen, e = set(), exc
    while getattr(e, "cause", None) is not None and id(e) not in seen:  # Ray task errors
        seen.add(id(e))
        e = e.cause
    text = "".join(traceback.format_exception(e)) if e is not exc else str(exc)
    lines = [m.group(1) + ": " + m.group(2) for m in map(_ERROR_LINE.match, text.splitlines()) if m]
    if e is exc and not lines:
        return f"{type(exc).__name__}: {' '.join(str(exc).split())}"
    return " ".join((lines[-1] if lines else f"{type(e).__name__}: {e}").split())


def main(argv: list[str] | None = None) -> int:
    """CLI entry point; returns the exit code (2 on a configuration error)."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        cfg = parse_args(argv, extra_arg_adders=default_arg_adders())
        for line in check_run(cfg):  # a bad flag or plugin fails here, before Ray starts
            log.info("plugin %s", line)
    except ValueError as exc:  # ConfigError and PluginError are ValueErrors
        print(f"slime/train.py: error: {exc}", file=sys.stderr)
        return 2
    from slime.plugin_failures import plugin_error_message
    try:
        summary = run_loop(cfg)
    except Exception as exc:  # one line naming the cause; the full traceback goes to a file
        message = plugin_error_message(exc)  # already names the plugin and what it did
        if message is None:
            message = root_cause_line(exc)
            where = Path(cfg.extra.get("log_dir") or "logs") / "error.log"
            try:
                where.parent.mkdir(parents=True, exist_ok=True)
                where.write_text("".join(traceback.format_exception(exc)))
                message += f" (traceback: {where})"
            except OSError:
                pass
        print(f"slime/train.py: error: {message}", file=sys.stderr)
        return 1
    print(json.dumps(summary, indent=2, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
