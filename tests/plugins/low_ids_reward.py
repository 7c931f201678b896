"""A deterministic ``--custom-rm-path`` reward for the learning test.

reward = 2 * (fraction of response tokens whose id is in the lower half of the vocabulary) - 1,
in [-1, 1]. A random policy scores 0 on average; a policy that learns scores higher.
"""

VOCAB_HALF = 151936 // 2


async def reward(args, sample, **kwargs) -> float:
    """Score one sample from its sampled token ids (slime's reward convention)."""
    ids = sample.tokens[-sample.response_length:]
    return 2.0 * sum(i < VOCAB_HALF for i in ids) / max(1, len(ids)) - 1.0
