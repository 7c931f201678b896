"""What the trainer does to a step's samples before their advantages: the length limit, replies
cut at ``max_tokens``, and rollout log-probs the engine could not give.

:func:`admit` runs once per step on the train actor (:meth:`slime.orchestration.ray_actors.TrainActor.admit`),
right after the rollout, so the method's per-step work and advantages see the samples as they
will be trained (the degenerate-reply filter is the first guard of :mod:`slime.guards.collapse`:
what a collapsing policy writes never becomes training data):

1. **Context limit** (``--rollout-max-context-len``, slime's name; default the model's context
   window, ``max_position_embeddings``): a sample whose prompt + response is longer is cut to the
   limit (``--context-overflow truncate``, the default: the prompt and the start of the response
   are kept, the rest of the response is not trained) or dropped (``--context-overflow drop``);
   a sample whose prompt alone leaves no room for one response token is always dropped. Each is
   counted and logged with a warning naming the turn.
2. **Replies cut at the token limit** (``status == truncated``: the engine stopped at
   ``max_tokens`` / ``--rollout-max-response-len``, ``finish_reason = "length"``):
   ``--truncated-replies mask`` zeroes their loss mask (counted, never trained: the judge saw a
   reply the model did not finish), ``train`` trains them like complete replies. Default: ``mask``
   for a rollout of judged live turns, ``train`` for a rollout that generates
   (``--prompt-data``, ``--rollout-function-path``), whose reward already judges the cut reply
   (slime's prompt rollouts train truncated samples too).
3. **Degenerate replies** (``--degenerate-samples``, default ``mask``): each sample's response
   ids are decoded with the policy's tokenizer and checked with
   :func:`slime.guards.behaviour.behaviour_problems` (a repetition loop, a run of rare or replacement
   characters, one content word over-applied, the same tool call again and again); a special
   token inside the reply (anywhere but its last token, e.g. ``<|im_start|>`` or padding) or an
   id outside the vocabulary counts as ``garbage_tokens``. Such a sample, unless its reward is
   negative, has its loss mask and advantages zeroed (it stays in the batch, so a GRPO group keeps
   its size and its reward still counts in the group's baseline, but none of its tokens is
   trained): a degeneracy is never reinforced. One the judge rejected (reward < 0) is trained as
   the negative example it is (the main job's over-applied replies, which the user corrects: masked,
   they could not teach the policy away from name spam). All are counted per problem
   (``samples/degenerate``, ``samples/degenerate_<problem>``) and named in one warning. ``train``
   counts and warns the same but trains them. Without a tokenizer the check is skipped.
4. **Rejected replies that repeat a word** (``--rejected-repeat-credit``, default ``onset``): a
   reply the judge rejected (reward < 0) that uses one content word three times or more
   (:func:`slime.guards.behaviour.repeat_onset`) is trained as a negative example only from that word's
   second use on; the tokens before it are masked. Its reward is one number for the whole reply,
   but the likeliest fault is the repetition, and its opening may be exactly what the user asked
   for: the main job's user rejects "Alex, ... Alex ... Alex" with "once is enough", and a -1 on
   every token also pushed down the first "Alex", which the same user demands (measured: the
   default run's satisfaction fell after four such replies were trained). ``whole`` trains every
   token. Counted (``samples/rejected_repeat_onset``).
5. **Rollout log-probs** of samples with ``logprob_source`` other than ``engine`` (constrained
   decoding, or tokens built from text) are replaced by the policy's own log-probs at the step's
   weights (:meth:`slime.trainer.backend.TrainingBackend.policy_logprobs`, each sample at its sampling
   temperature / top-p): the PPO ratio's old log-probs are recomputed anyway, TIS weighs these
   tokens 1, and methods that read ``rollout_log_probs`` (OPD's advantage) get the policy's
   log-probs instead of placeholders or of a constrained distribution.

Every count is a metric of the step (``samples/*``).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from slime.guards.behaviour import Problem, repeat_onset
from slime.guards.degenerate import GARBAGE_TOKENS, control_token_ids, reply_problems
from slime.record.sample import LogprobSource, Sample, SampleStatus

__all__ = ["AdmissionPolicy", "DEGENERATE_PROBLEMS", "admit", "credit_from_repeat_onset", "fit_context", "turn_name"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class AdmissionPolicy:
    """The resolved policy of :func:`admit`.

    max_context_len: most prompt + response tokens a trained sample may hold (None: no limit).
    context_overflow: ``truncate`` or ``drop`` a longer sample.
    truncated_replies: ``mask`` or ``train`` replies cut at the token limit.
    degenerate_samples: ``mask`` or ``train`` samples with a degenerate reply.
    rejected_repeat_credit: ``onset`` (train a rejected reply that repeats a word from the word's
        second use on) or ``whole`` (every token).
    """

    max_context_len: int | None = None
    context_overflow: Literal["truncate", "drop"] = "truncate"
    truncated_replies: Literal["mask", "train"] = "mask"
    degenerate_samples: Literal["mask", "train"] = "mask"
    rejected_repeat_credit: Literal["onset", "whole"] = "onset"

    @classmethod
    def from_config(cls, cfg: Any, model_context: int | None, generates: bool) -> "AdmissionPolicy":
        """The policy of a run: ``--rollout-max-context-len`` (else ``model_context``),
        ``--context-overflow``, ``--truncated-replies`` (else ``train`` when the rollout
        ``generates``, ``mask`` otherwise), ``--degenerate-samples``, ``--rejected-repeat-credit``."""
        limit = cfg.rollout_max_context_len or model_context
        return cls(max_context_len=limit, context_overflow=cfg.context_overflow,
                   truncated_replies=cfg.truncated_replies or ("train" if generates else "mask"),
                   degenerate_samples=cfg.degenerate_samples,
                   rejected_repeat_credit=cfg.rejected_repeat_credit)


def turn_name(sample: Sample, index: int) -> str:
    """How a warning names a sample: its turn id, else its session, else its position."""
    return sample.turn_id or (f"session {sample.session_id}" if sample.session_id else f"sample #{index}")


def fit_context(sample: Sample, max_len: int) -> Sample | None:
    """``sample`` cut to ``max_len`` tokens (a copy; every per-response-token field is cut the
    same way, and an agent step-sample's step spans with them), itself when it fits, or None when its prompt leaves no room for a response token.

    Raises:
        ValueError: ``max_len < 2``.
    """
    if max_len < 2:
        raise ValueError(f"--rollout-max-context-len must be >= 2, got {max_len}")
    if len(sample.tokens) <= max_len:
        return sample
    keep = max_len - sample.prompt_length  # response tokens that fit
    if keep < 1:
        return None
    data = sample.to_dict()
    data["tokens"] = data["tokens"][:max_len]
    data["response_length"] = keep
    for name in ("rollout_log_probs", "loss_mask", "advantages", "teacher_log_probs", "teacher_topk_ids",
                 "teacher_topk_log_probs"):
        if data[name] is not None:
            data[name] = data[name][:keep]
    data["metadata"] = {**data["metadata"], "context_cut_from": len(sample.tokens)}
    if sample.trajectory is not None:
        data["trajectory"] = sample.trajectory.cut(keep)
    return Sample.from_dict(data)


#: the problem names a degenerate reply is counted under (``samples/degenerate_<name>``)
DEGENERATE_PROBLEMS = (*(p.value for p in Problem), GARBAGE_TOKENS)


def _count_degenerate(s: Sample, index: int, problems: dict[str, str], policy: AdmissionPolicy,
                      counts: dict[str, int]) -> None:
    """Count a degenerate sample, warn once naming it, and zero its loss under ``mask``."""
    counts["degenerate"] += 1
    for name in problems:
        counts[f"degenerate_{name}"] += 1
    # a degenerate reply the judge rejected is a negative example: trained, it teaches the policy away
    # from the degeneracy (the user's "stop saying my name" is the signal against name spam); one
    # rewarded or neutral is masked, so a degeneracy is never reinforced
    negative = s.reward is not None and s.reward < 0
    masked = policy.degenerate_samples == "mask" and s.num_loss_tokens > 0 and not negative
    what = "; ".join(f"{name}: {hit[:60]!r}" for name, hit in problems.items())
    log.warning("%s: degenerate reply (%s): %s (--degenerate-samples %s)", turn_name(s, index), what,
                "not trained" if masked else "trained as a negative example" if negative else "trained",
                policy.degenerate_samples)
    if masked:
        s.loss_mask = [0] * s.response_length
        if s.advantages is not None:
            s.advantages = [0.0] * s.response_length
        counts["degenerate_masked"] += 1


def credit_from_repeat_onset(s: Sample, tokenizer: Any) -> str | None:
    """Mask the loss of a rejected reply's tokens before it starts repeating a word (step 4).

    Args:
        s: a sample with reward < 0; its ``loss_mask`` (and ``advantages``, when set) are zeroed in
            place for the response tokens before the token holding the repeated word's second use.
        tokenizer: the policy's tokenizer (``decode``, ``len``).

    Returns:
        The repeated word, or None (nothing repeated three times; the sample is left as it was).
    """
    vocab = len(tokenizer)
    ids = [int(i) for i in s.response_tokens if 0 <= int(i) < vocab]
    if len(ids) != s.response_length:
        return None  # garbage ids: step 3 names them; no offsets to map
    hit = repeat_onset(tokenizer.decode(ids, skip_special_tokens=True))
    if hit is None:
        return None
    word, offset = hit
    lo, hi = 0, len(ids)  # the fewest tokens whose decoded text reaches past the offset
    while lo < hi:
        mid = (lo + hi) // 2
        if len(tokenizer.decode(ids[:mid + 1], skip_special_tokens=True)) > offset:
            hi = mid
        else:
            lo = mid + 1
    s.loss_mask = [0] * lo + list(s.loss_mask[lo:])
    if s.advantages is not None:
        s.advantages = [0.0] * lo + list(s.advantages[lo:])
    return word


def admit(samples: Sequence[Sample], policy: AdmissionPolicy, backend: Any = None) -> tuple[list[Sample], dict]:
    """Apply ``policy`` to a step's samples (module docstring, steps 1-5).

    Args:
        samples: the rollout's samples, in order.
        policy: the run's :class:`AdmissionPolicy`.
        backend: a :class:`slime.trainer.backend.TrainingBackend` for steps 3 (its ``tokenizer``) and 4;
            None skips them.

    Returns:
        ``(samples, metrics)``: the samples to go on with (order kept, dropped ones left out) and
        ``samples/over_context_truncated``, ``samples/over_context_dropped``, ``samples/truncated``,
        ``samples/truncated_masked``, ``samples/degenerate`` (samples with any problem),
        ``samples/degenerate_<problem>`` (one per problem name, :data:`DEGENERATE_PROBLEMS`),
        ``samples/degenerate_masked``, ``samples/rejected_repeat_onset``, ``samples/constrained``, ``samples/without_logprobs``,
        ``samples/rollout_logprobs_recomputed``.
    """
    counts = dict.fromkeys(("over_context_truncated", "over_context_dropped", "truncated", "truncated_masked",
                            "degenerate", *(f"degenerate_{p}" for p in DEGENERATE_PROBLEMS), "degenerate_masked",
                            "rejected_repeat_onset", "constrained", "without_logprobs", "rollout_logprobs_recomputed"), 0)
    tokenizer = getattr(backend, "tokenizer", None)
    control = control_token_ids(tokenizer) if tokenizer is not None else frozenset()
    out: list[Sample] = []
    for i, s in enumerate(samples):
        if policy.max_context_len is not None and len(s.tokens) > policy.max_context_len:
            cut = None if policy.context_overflow == "drop" else fit_context(s, policy.max_context_len)
            what = "dropped" if cut is None else f"cut to {policy.max_context_len} tokens"
            log.warning("%s has %d tokens (prompt %d), more than --rollout-max-context-len %d: %s",
                        turn_name(s, i), len(s.tokens), s.prompt_length, policy.max_context_len, what)
            counts["over_context_dropped" if cut is None else "over_context_truncated"] += 1
            if cut is None:
                continue
            s = cut
        if s.status == SampleStatus.TRUNCATED:
            counts["truncated"] += 1
            if policy.truncated_replies == "mask" and s.num_loss_tokens:
                s.loss_mask = [0] * s.response_length
                if s.advantages is not None:
                    s.advantages = [0.0] * s.response_length
                counts["truncated_masked"] += 1
        if tokenizer is not None and s.response_length:
            problems = reply_problems(s.response_tokens, tokenizer, control, s.loss_mask)
            if problems:
                _count_degenerate(s, i, problems, policy, counts)
            if (policy.rejected_repeat_credit == "onset" and s.reward is not None and s.reward < 0
                    and s.num_loss_tokens > 0):
                word = credit_from_repeat_onset(s, tokenizer)
                if word is not None:
                    counts["rejected_repeat_onset"] += 1
                    log.info("%s: rejected reply repeats %r: trained from its second use on "
                             "(--rejected-repeat-credit onset)", turn_name(s, i), word)
        counts["constrained"] += s.logprob_source == LogprobSource.CONSTRAINED
        counts["without_logprobs"] += s.logprob_source == LogprobSource.NONE
        out.append(s)
    redo = [s for s in out if s.logprob_source != LogprobSource.ENGINE and s.response_length and s.prompt_length]
    if backend is not None and redo:
        for s, lps in zip(redo, backend.policy_logprobs(redo)):
            s.rollout_log_probs = [float(x) for x in lps]
            s.metadata["rollout_logprobs_recomputed_at"] = int(backend.weight_version)
            s.validate()
        counts["rollout_logprobs_recomputed"] = len(redo)
    return out, {f"samples/{k}": float(v) for k, v in counts.items()}
