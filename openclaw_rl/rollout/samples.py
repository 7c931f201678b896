"""Turning recorded turns into :class:`slime.record.sample.Sample` records (token in, token out).

The sample's tokens are exactly the stored prompt ids followed by the stored sampled ids, and
its rollout logprobs are the stored sampling logprobs: nothing is re-rendered or re-tokenized.
A turn imported as text got its ids once, from the chat template
(:mod:`openclaw_rl.capture.text_turns`), and is marked so (``logprob_source = "none"``).
"""

from __future__ import annotations

from openclaw_rl.capture.images import ImageRecordError, multimodal_train_inputs
from openclaw_rl.capture.store import TurnRecord
from slime.record.sample import LogprobSource, Sample, SampleStatus


class UntokenizedTurnError(ValueError):
    """A turn without token ids (e.g. a hand-written import) cannot become a token-exact sample."""


def turn_to_sample(turn: TurnRecord, reward: float | None, trainable: bool, processor=None) -> Sample:
    """Build the training sample of one main turn.

    Args:
        turn: a stored main turn with ``prompt_ids``, ``response_ids`` and ``response_logprobs``.
        reward: the judge's scalar reward (Binary RL: +1 / -1), or None.
        trainable: False makes ``loss_mask`` all zeros (verdict 0 or no next state): the sample
            is counted but contributes no gradient.
        processor: the policy's vision-language processor; needed for a turn with images, whose
            ``multimodal_train_inputs`` are rebuilt from the stored image bytes
            (:mod:`openclaw_rl.capture.images`).

    Returns:
        A validated Sample: ``tokens`` [P + R], ``response_length`` R, ``loss_mask`` [R],
        ``rollout_log_probs`` [R], ``weight_version`` of the policy that sampled it,
        ``source_id`` (the store's row id), the turn's ``sampling_temperature`` /
        ``sampling_top_p``, ``logprob_source`` (``engine``; ``constrained`` for a turn decoded
        under a grammar; ``none`` with placeholder zeros for a turn whose ids were made from text,
        :mod:`openclaw_rl.capture.text_turns`) and ``metadata`` with the next state role,
        sampling temperature and finish reason.

    Raises:
        UntokenizedTurnError: the turn has no token ids, or ids and logprobs disagree in length.
        ImageRecordError: the turn has images but no ``processor`` is given, or they do not decode.
    """
    if not turn.prompt_ids or not turn.response_ids:
        raise UntokenizedTurnError(f"turn {turn.turn_uid} has no token ids (imported without ids, and the "
                                   "chat template could not render it)")
    n = len(turn.response_ids)
    if turn.ids_from_text:
        source, logprobs = LogprobSource.NONE, [0.0] * n  # placeholders: the trainer computes them
    else:
        if len(turn.response_logprobs) != n:
            raise UntokenizedTurnError(f"turn {turn.turn_uid}: {n} response ids but "
                                       f"{len(turn.response_logprobs)} logprobs")
        source = LogprobSource.CONSTRAINED if turn.constrained else LogprobSource.ENGINE
        logprobs = [float(x) for x in turn.response_logprobs]
    status = SampleStatus.TRUNCATED if turn.finish_reason == "length" else SampleStatus.COMPLETED
    sample = Sample(tokens=list(turn.prompt_ids) + list(turn.response_ids), response_length=n,
                    rollout_log_probs=logprobs, loss_mask=[1 if trainable else 0] * n, reward=reward,
                    status=status, weight_version=int(turn.weight_version), session_id=turn.session_id,
                    turn_id=turn.turn_uid, turn_index=int(turn.turn_index or 0), source_id=turn.id,
                    sampling_temperature=turn.temperature, sampling_top_p=turn.top_p, logprob_source=source,
                    metadata={"next_state_role": turn.next_state_role, "temperature": turn.temperature,
                              "prefix_ok": turn.prefix_ok, "finish_reason": turn.finish_reason})
    if turn.images:
        if processor is None:
            raise ImageRecordError(f"turn {turn.turn_uid} has {len(turn.images)} images but the policy has no "
                                   "image processor (a text-only model)")
        sample.multimodal_train_inputs = multimodal_train_inputs(processor, turn.images)
    sample.validate()
    return sample
