"""The OpenClaw rollout function (slime's ``generate_rollout`` convention).

Live conversations are the rollouts: this function only collects ``rollout_batch_size`` judged,
trainable turns from the store (group size 1: each turn is its own group) and reports rollout
metrics. It never generates: serving already did, token-exactly.
"""

from __future__ import annotations

import statistics

from tqdm import tqdm

from openclaw_rl.rollout.flags import service_flags


def generate_rollout(args, rollout_id: int, data_source, evaluation: bool = False):
    """Collect one rollout batch.

    Args:
        args: the run's SlimeConfig (``rollout_batch_size``, ``--rollout-timeout-s``).
        rollout_id: index of this rollout (used for the progress bar label).
        data_source: a :class:`openclaw_rl.rollout.data_source.StoreDataSource`.
        evaluation: unsupported for live traffic (evaluation runs through ``openclaw-test``).

    Returns:
        ``(groups, metrics)``: ``groups`` is a list of one-sample lists; metrics hold
        ``reward/mean``, ``reward/pos``, ``reward/neg``, ``rollout/staleness_mean`` and ``_max``.

    Raises:
        ValueError: ``evaluation=True``.
        openclaw_rl.rollout.data_source.RolloutTimeout: not enough judged turns in time.
    """
    if evaluation:
        raise ValueError("the OpenClaw rollout has no evaluation mode; use openclaw-test/run_eval.sh")
    n = int(args.rollout_batch_size)
    bar = tqdm(total=n, desc=f"rollout {rollout_id}: judged turns", leave=False, mininterval=30.0)

    def progress(have: int, _n: int) -> None:
        bar.update(have - bar.n)

    try:
        samples = data_source.take(n, timeout_s=service_flags(args).rollout_timeout_s, progress=progress)
    finally:
        bar.close()
    rewards = [float(s.reward) for s in samples if s.reward is not None]
    stale = [int(s.metadata.get("staleness", 0)) for s in samples]
    metrics = {"reward/mean": statistics.fmean(rewards) if rewards else 0.0,
               "reward/pos": sum(r > 0 for r in rewards), "reward/neg": sum(r < 0 for r in rewards),
               "rollout/staleness_mean": statistics.fmean(stale) if stale else 0.0,
               "rollout/staleness_max": max(stale, default=0), "rollout/samples": len(samples)}
    return [[s] for s in samples], metrics
