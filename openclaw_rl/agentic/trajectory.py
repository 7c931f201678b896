"""Samples from an agent episode, token-exactly (DESIGN.md invariants 1 and 6).

Two layouts, chosen by ``--dynamic-history``:

* **One sample per trajectory** (default). Step ``k``'s prompt ids extend step ``k-1``'s prompt
  + response ids token for token (the server's continuation), so the trajectory is
  ``prompt_1 + action_1 + obs_1 + action_2 + ... + action_K``: the actions are the sampled ids
  with their sampling logprobs and loss mask 1; the observation ids between them (tool results,
  the template's separators, an end-of-turn token the server appended) are taken from the next
  prompt's ids with loss mask 0 and logprob 0.0 (never trained, so the placeholder is never
  read). Where a step's prompt does *not* extend the previous ids (a template that re-renders
  history differently), nothing is re-tokenised: the trajectory is split there into separate
  samples, and ``metadata["prefix_break_steps"]`` records where.
* **One sample per step** (``--dynamic-history``): each step's exact prompt ids and sampled ids.

Every sample carries the :class:`slime.record.sample.Trajectory` the trainer reads (GRPO's grouping and
the step-wise estimator, :mod:`slime.methods.step_wise`): its ``id``, ``group_index`` (the
rollout's ``metadata["group_index"]``), ``step_spans`` (``[start, end)`` of each action in
response coordinates), ``step_indices`` (the step number of each span) and ``step_scores``
(aligned with the spans; set when a step PRM scored the episode). Its ``metadata`` (for plugins
and reports) holds the episode's ``trajectory_id``, ``env_score``, ``finish``, ``num_steps``,
``tool_calls`` (count), ``final_response``, ``session_id``, ``turn_ids`` and the family's
``env_info`` (``Episode.info``). ``Sample.reward`` is preset to the
environment's score (the reward plugin may replace it; every sample of a trajectory gets the
same outcome).
"""

from __future__ import annotations

import copy
import uuid
from collections.abc import Sequence

from openclaw_rl.agentic.agent_loop import AgentStep, Episode, StopReason
from openclaw_rl.capture.images import multimodal_train_inputs
from slime.record.sample import LogprobSource, Sample, SampleStatus, Trajectory

__all__ = ["UPSTREAM_TRAJECTORY_KEYS", "episode_samples", "lift_upstream_trajectory"]


def _base_metadata(episode: Episode, trajectory_id: str) -> dict:
    return {"trajectory_id": trajectory_id, "env_score": episode.score, "finish": str(episode.finish),
            "num_steps": len(episode.steps), "tool_calls": episode.num_tool_calls,
            "final_response": episode.final_response, "session_id": episode.session_id,
            **({"episode_error": episode.error} if episode.error else {}),
            **({"env_info": dict(episode.info)} if episode.info else {})}


def _group_index(template: Sample) -> int | None:
    """The prompt group of the rollout's sample: its trajectory's, else the prompt rollout's
    ``metadata["group_index"]`` (:mod:`openclaw_rl.rollout.prompt_rollout`), else None."""
    if template.trajectory is not None:
        return template.trajectory.group_index
    group = template.metadata.get("group_index")
    return None if group is None else int(group)


class _Segment:
    """A run of steps whose ids concatenate: built left to right."""

    def __init__(self, step: AgentStep, index: int):
        t = step.turn
        self.prompt = list(t.prompt_ids)
        self.response = list(t.response_ids)
        self.logprobs = [float(x) for x in t.response_logprobs]
        self.mask = [1] * len(t.response_ids)
        self.spans = [[0, len(t.response_ids)]]
        self.indices = [index]
        self.steps = [step]

    def tokens(self) -> list[int]:
        return self.prompt + self.response

    def extend(self, step: AgentStep, index: int) -> bool:
        """Append ``step`` when its prompt extends this segment's ids; False otherwise."""
        t, prev = step.turn, self.tokens()
        if len(t.prompt_ids) < len(prev) or list(t.prompt_ids[:len(prev)]) != prev:
            return False
        obs = list(t.prompt_ids[len(prev):])
        self.response += obs
        self.logprobs += [0.0] * len(obs)
        self.mask += [0] * len(obs)
        start = len(self.response)
        self.response += list(t.response_ids)
        self.logprobs += [float(x) for x in t.response_logprobs]
        self.mask += [1] * len(t.response_ids)
        self.spans.append([start, len(self.response)])
        self.indices.append(index)
        self.steps.append(step)
        return True


def _sample(template: Sample, seg: _Segment, meta: dict, prm: Sequence[float] | None, last: bool,
            episode: Episode, processor=None) -> Sample:
    turns = [s.turn for s in seg.steps]
    s = copy.deepcopy(template)
    images = turns[-1].images  # the last prompt extends the others: its images are the segment's
    if images:
        if processor is None:
            raise ValueError(f"episode {episode.session_id} has screenshots but no image processor was given")
        s.multimodal_train_inputs = multimodal_train_inputs(processor, images)
    s.tokens, s.response_length = seg.tokens(), len(seg.response)
    s.rollout_log_probs, s.loss_mask = seg.logprobs, seg.mask
    s.sampling_temperature, s.sampling_top_p = turns[0].temperature, turns[0].top_p
    s.logprob_source = (LogprobSource.CONSTRAINED if any(t.constrained for t in turns) else LogprobSource.ENGINE)
    s.weight_version = min(int(t.weight_version) for t in turns)
    s.session_id, s.turn_id = episode.session_id, turns[0].turn_uid
    s.response = "\n".join(part for st in seg.steps for part in (st.action_text, st.observation_text) if part)
    s.status = (SampleStatus.TRUNCATED if last and episode.finish == StopReason.LENGTH else SampleStatus.COMPLETED)
    s.reward = episode.score
    s.metadata = {**template.metadata, **meta, "turn_ids": [t.id for t in turns],
                  "weight_versions": [int(t.weight_version) for t in turns]}
    s.trajectory = Trajectory(meta["trajectory_id"], _group_index(template), [tuple(x) for x in seg.spans],
                              list(seg.indices), None if prm is None else [float(prm[k]) for k in seg.indices])
    s.validate()
    return s


def episode_samples(episode: Episode, template: Sample, *, dynamic_history: bool = False,
                    step_prm_scores: Sequence[float] | None = None,
                    trajectory_id: str | None = None, processor=None) -> list[Sample]:
    """The training samples of ``episode`` (module docstring).

    Args:
        episode: the finished episode.
        template: the rollout's sample for this prompt (``prompt``, ``label``, ``metadata`` with
            the prompt rollout's ``group_index``); copied, never changed.
        dynamic_history: one sample per step instead of one per trajectory.
        step_prm_scores: the step PRM's score of each step (``len == len(episode.steps)``), or None.
        trajectory_id: default a fresh uuid.
        processor: a vision-language policy's processor; needed when the steps' prompts carry
            images (screenshots): each sample's ``multimodal_train_inputs`` are rebuilt from its
            last turn's stored images (the segment's prompt ids extend to that prompt, so its
            images are all of the sample's, in order; :mod:`openclaw_rl.capture.images`).

    Returns:
        The samples in step order, each with its ``trajectory``. An episode with no step (it failed
        before the first reply) gives one ``FAILED`` sample with no tokens, a trajectory without
        spans and ``metadata["error"]``.

    Raises:
        ValueError: ``step_prm_scores`` of the wrong length; steps with images and no ``processor``.
    """
    if step_prm_scores is not None and len(step_prm_scores) != len(episode.steps):
        raise ValueError(f"step_prm_scores has {len(step_prm_scores)} scores for {len(episode.steps)} steps")
    meta = _base_metadata(episode, trajectory_id or uuid.uuid4().hex)
    if not episode.steps:
        s = copy.deepcopy(template)
        s.tokens, s.response_length, s.rollout_log_probs, s.loss_mask = [], 0, [], []
        s.status = SampleStatus.FAILED
        s.metadata = {**template.metadata, **meta,
                      "error": episode.error or f"episode ended ({episode.finish}) before the first step"}
        s.trajectory = Trajectory(meta["trajectory_id"], _group_index(template))
        return [s]
    segments: list[_Segment] = []
    breaks: list[int] = []
    for k, step in enumerate(episode.steps):
        if dynamic_history or not segments or not segments[-1].extend(step, k):
            if segments and not dynamic_history:
                breaks.append(k)
            segments.append(_Segment(step, k))
    if breaks:
        meta["prefix_break_steps"] = breaks
    return [_sample(template, seg, meta, step_prm_scores, i == len(segments) - 1, episode, processor)
            for i, seg in enumerate(segments)]


#: the sample metadata keys upstream OpenClaw-RL's agent generate functions write for the step-wise
#: estimator; :func:`lift_upstream_trajectory` reads them into ``Sample.trajectory``
UPSTREAM_TRAJECTORY_KEYS = ("trajectory_id", "group_index", "step_spans", "step_indices", "step_prm_scores")


def lift_upstream_trajectory(sample: Sample) -> Sample:
    """Give a sample from an upstream-style generate plugin its typed trajectory.

    A ``--custom-generate-function-path`` written for upstream OpenClaw-RL keeps a step-sample's
    trajectory in ``metadata`` (:data:`UPSTREAM_TRAJECTORY_KEYS`); the trainer reads only
    ``Sample.trajectory``. When the sample has none and its metadata has ``trajectory_id`` or
    ``step_spans``, this sets it from them (the keys stay in ``metadata``, which is the plugin's).

    Args:
        sample: a generated sample (changed in place).

    Returns:
        ``sample``.

    Raises:
        ValueError: the metadata's values do not make a valid trajectory (lists that do not align,
            spans outside the response), naming the key.
    """
    md = sample.metadata
    if sample.trajectory is not None or not ("trajectory_id" in md or "step_spans" in md):
        return sample
    tid = md.get("trajectory_id")
    try:
        sample.trajectory = Trajectory(uuid.uuid4().hex if tid is None or tid == "" else str(tid),
                                       md.get("group_index"), md.get("step_spans") or [], md.get("step_indices"),
                                       md.get("step_prm_scores"))
        sample.validate()
    except ValueError as exc:
        sample.trajectory = None
        raise ValueError(f"the generate plugin's metadata ({', '.join(k for k in UPSTREAM_TRAJECTORY_KEYS if k in md)}) "
                         f"does not make a trajectory: {exc} (step_scores is the metadata's step_prm_scores)") from exc
    return sample
