"""Rewards in slime's reward convention (``--custom-rm-path``).

``reward`` scores one sample, ``batched_reward`` a list at once (detected from the parameter
name ``samples``). A sample carries exact token ids (``tokens``, ``response_length``), the text
(``prompt``, ``response``) and ``metadata`` (``next_state`` for live turns); prompt-dataset
samples carry their ``label``.
"""


async def reward(args, sample, **kwargs) -> float:
    """+1 when the response contains the label (or, without a label, is non-empty), else -1."""
    if sample.label is not None:
        return 1.0 if str(sample.label).strip().lower() in sample.response.lower() else -1.0
    return 1.0 if sample.response.strip() else -1.0


async def batched_reward(args, samples, **kwargs) -> list[float]:
    """Group-relative length reward: +1 for responses shorter than the batch median, else -1."""
    lengths = sorted(s.response_length for s in samples)
    median = lengths[len(lengths) // 2]
    return [1.0 if s.response_length < median else -1.0 for s in samples]
