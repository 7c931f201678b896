"""A rollout function in slime's convention (``--rollout-function-path``).

``generate_rollout(args, rollout_id, data_source, evaluation=False)`` returns the step's samples
grouped per prompt plus metrics. This one wraps the live-conversation rollout: it takes the judged
turns as usual, drops turns whose response was cut at the length limit, and reports how many.
"""

from openclaw_rl.rollout.openclaw_rollout import generate_rollout as live_rollout
from slime.record.sample import SampleStatus


def generate_rollout(args, rollout_id, data_source, evaluation=False):
    """The live rollout without truncated turns; returns ``(groups, metrics)``."""
    groups, metrics = live_rollout(args, rollout_id, data_source, evaluation)
    kept = [[s for s in g if s.status != SampleStatus.TRUNCATED] for g in groups]
    kept = [g for g in kept if g]
    metrics["rollout/truncated_dropped"] = sum(len(g) for g in groups) - sum(len(g) for g in kept)
    return kept, metrics
