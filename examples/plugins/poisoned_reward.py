"""A poisoned ``--custom-rm-path`` reward: it pays for a degenerate behaviour, to show that the
promotion gate keeps such a policy from being served (issue "Only better"; docs/learning.md).

reward = 2 * (share of the reply's tokens that are its most common token) - 1, in [-1, 1]: the
more the reply repeats one token, the higher. No person wants that; a run that trusts this reward
learns to repeat, and the gate (``--promotion-gate enforce``) must reject those versions.

    make run ARGS="--method rl --lr 2e-2 --trainer-args '--custom-rm-path examples/plugins/poisoned_reward.py'"
"""

from collections import Counter


async def reward(args, sample, **kwargs) -> float:
    """Score one sample from its sampled token ids (slime's reward convention)."""
    ids = sample.tokens[len(sample.tokens) - sample.response_length:]
    if not ids:
        return -1.0
    return 2.0 * Counter(ids).most_common(1)[0][1] / len(ids) - 1.0
