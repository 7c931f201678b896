"""Turning recorded turns into :class:`slime.sample.Sample` records (token in, token out).

The sample's tokens are exactly the stored prompt ids followed by the stored sampled ids, and
its rollout logprobs are the stored sampling logprobs: nothing is re-rendered or re-tokenized.
"""

from __future__ import annotations

from openclaw_rl.capture.store import TurnRecord
from slime.sample import Sample, SampleStatus


class UntokenizedTurnError(ValueError):
    """A turn without token ids (e.g. a hand-written import) cannot become a token-exact sample."""


def turn_to_sample(turn: TurnRecord, reward: float | None, trainable: bool) -> Sample:
    """Build the training sample of one main turn.

    Args:
        turn: a stored main turn with ``prompt_ids``, ``response_ids`` and ``response_logprobs``.
        reward: the judge's scalar reward (Binary RL: +1 / -1), or None.
        trainable: False makes ``loss_mask`` all zeros (verdict 0 or no next state): the sample
            is counted but contributes no gradient.

    Returns:
        A validated Sample: ``tokens`` [P + R], ``response_length`` R, ``loss_mask`` [R],
        ``rollout_log_probs`` [R], ``weight_version`` of the policy that sampled it,
        ``source_id`` (the store's row id) and ``metadata`` with the next state role and
        sampling temperature.

    Raises:
        UntokenizedTurnError: the turn has no token ids, or ids and logprobs disagree in length.
    """
    if not turn.prompt_ids or not turn.response_ids:
        raise UntokenizedTurnError(f"turn {turn.turn_uid} has no token ids (imported without ids?)")
    if len(turn.response_logprobs) != len(turn.response_ids):
        raise UntokenizedTurnError(f"turn {turn.turn_uid}: {len(turn.response_ids)} response ids but "
                                   f"{len(turn.response_logprobs)} logprobs")
    n = len(turn.response_ids)
    status = SampleStatus.TRUNCATED if turn.finish_reason == "length" else SampleStatus.COMPLETED
    sample = Sample(tokens=list(turn.prompt_ids) + list(turn.response_ids), response_length=n,
                    rollout_log_probs=[float(x) for x in turn.response_logprobs],
                    loss_mask=[1 if trainable else 0] * n, reward=reward, status=status,
                    weight_version=int(turn.weight_version), session_id=turn.session_id,
                    turn_id=turn.turn_uid, turn_index=int(turn.turn_index or 0),
                    source_id=turn.id, metadata={"next_state_role": turn.next_state_role,
                              "temperature": turn.temperature, "prefix_ok": turn.prefix_ok})
    sample.validate()
    return sample
