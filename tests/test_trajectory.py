"""Samples from constructed episodes: concatenation, observation masks, spans, prefix breaks,
dynamic history (hand-built turns, so every id is known)."""

from __future__ import annotations

import pytest

from openclaw_rl.agentic.agent_loop import AgentStep, Episode
from openclaw_rl.agentic.trajectory import episode_samples, lift_upstream_trajectory
from openclaw_rl.capture.records import TurnRecord
from slime.guards.admission import fit_context
from slime.record.sample import LogprobSource, Sample, SampleStatus, Trajectory


def _turn(i: int, prompt: list[int], response: list[int], version: int = 0, constrained: bool = False) -> TurnRecord:
    return TurnRecord(session_id="agent:x", turn_type="side", messages=[], prompt_text="", prompt_ids=prompt,
                      response_ids=response, response_logprobs=[-0.1 * (k + 1) for k in range(len(response))],
                      response_text="", finish_reason="stop", weight_version=version, turn_uid=f"u{i}", id=i,
                      temperature=1.0, top_p=1.0, constrained=constrained)


def _episode(turns: list[TurnRecord], finish: str = "answered", score: float = 1.0) -> Episode:
    steps = [AgentStep(turn=t, content=f"a{k}", tool_calls=[], observations=[f"o{k}"] if k < len(turns) - 1 else [])
             for k, t in enumerate(turns)]
    return Episode(session_id="agent:x", task="task", steps=steps, final_response="a_last", finish=finish,
                   score=score)


def _template() -> Sample:
    return Sample(tokens=[], response_length=0, rollout_log_probs=[], prompt="p", metadata={"group_index": 3})


def test_three_steps_concatenate_with_observations_masked():
    t1 = _turn(1, [1, 2, 3], [10, 11])
    t2 = _turn(2, [1, 2, 3, 10, 11, 50, 51], [12], version=1)            # obs 50 51
    t3 = _turn(3, [1, 2, 3, 10, 11, 50, 51, 12, 60], [13, 14, 15], version=2)  # obs 60
    [s] = episode_samples(_episode([t1, t2, t3]), _template(), step_prm_scores=[1.0, -1.0, 0.5])
    assert s.tokens == [1, 2, 3, 10, 11, 50, 51, 12, 60, 13, 14, 15]
    assert s.prompt_length == 3 and s.response_length == 9
    assert s.loss_mask == [1, 1, 0, 0, 1, 0, 1, 1, 1]
    assert s.rollout_log_probs == pytest.approx([-0.1, -0.2, 0, 0, -0.1, 0, -0.1, -0.2, -0.3])
    assert s.trajectory.step_spans == [(0, 2), (4, 5), (6, 9)]
    assert s.trajectory.step_indices == [0, 1, 2]
    assert s.trajectory.step_scores == [1.0, -1.0, 0.5]
    assert s.trajectory.group_index == 3 and s.metadata["num_steps"] == 3
    assert s.trajectory.id == s.metadata["trajectory_id"]
    assert not {"step_spans", "step_indices", "step_prm_scores"} & set(s.metadata)  # typed, not in metadata
    assert s.weight_version == 0 and s.metadata["weight_versions"] == [0, 1, 2]
    assert s.reward == 1.0 and s.status == SampleStatus.COMPLETED
    assert "prefix_break_steps" not in s.metadata


def test_a_prefix_break_splits_the_trajectory_without_retokenising():
    t1 = _turn(1, [1, 2], [10])
    t2 = _turn(2, [1, 2, 99, 50], [12])     # the template re-rendered step 1 differently
    t3 = _turn(3, [1, 2, 99, 50, 12, 60], [13])
    a, b = episode_samples(_episode([t1, t2, t3]), _template())
    assert a.tokens == [1, 2, 10] and a.trajectory.step_indices == [0]
    assert b.tokens == [1, 2, 99, 50, 12, 60, 13] and b.loss_mask == [1, 0, 1]
    assert b.trajectory.step_indices == [1, 2] and b.trajectory.step_spans == [(0, 1), (2, 3)]
    assert a.metadata["prefix_break_steps"] == [1] == b.metadata["prefix_break_steps"]
    assert a.trajectory.id == b.trajectory.id and a.trajectory.group_index == b.trajectory.group_index == 3


def test_dynamic_history_gives_one_exact_sample_per_step():
    t1 = _turn(1, [1, 2, 3], [10, 11])
    t2 = _turn(2, [1, 2, 3, 10, 11, 50], [12], constrained=True)
    a, b = episode_samples(_episode([t1, t2], finish="length"), _template(), dynamic_history=True)
    assert (a.tokens, a.response_length) == ([1, 2, 3, 10, 11], 2)
    assert (b.tokens, b.response_length) == ([1, 2, 3, 10, 11, 50, 12], 1)
    assert a.trajectory.step_spans == [(0, 2)] and b.trajectory.step_indices == [1]
    assert a.status == SampleStatus.COMPLETED and b.status == SampleStatus.TRUNCATED
    assert b.logprob_source == LogprobSource.CONSTRAINED and a.logprob_source == LogprobSource.ENGINE


def test_bad_prm_scores_and_empty_episodes():
    t1 = _turn(1, [1], [2])
    with pytest.raises(ValueError, match="1 steps"):
        episode_samples(_episode([t1]), _template(), step_prm_scores=[1.0, 1.0])
    empty = Episode(session_id="s", task="", steps=[], final_response="", finish="error", score=None,
                    error="ConnectionError: refused")
    [s] = episode_samples(empty, _template())
    assert s.status == SampleStatus.FAILED and s.tokens == [] and "refused" in s.metadata["error"]


def test_episode_metrics_count_each_trajectory_once():
    from openclaw_rl.agentic.metrics import episode_metrics

    t1, t2 = _turn(1, [1, 2], [10]), _turn(2, [1, 2, 10, 50], [12])
    a = episode_samples(_episode([t1, t2], score=1.0), _template(), dynamic_history=True)  # 2 samples, 1 episode
    b = episode_samples(_episode([t1], finish="length", score=-1.0), _template())
    m = episode_metrics(a + b + [_template()])
    assert m["agent/episodes"] == 2 and m["agent/steps"] == 1.5 and m["agent/env_score"] == 0.0
    assert m["agent/finish/answered"] == 0.5 and m["agent/finish/length"] == 0.5 and m["agent/prefix_breaks"] == 0
    assert episode_metrics([_template()]) == {}


def test_the_trajectory_record_round_trips_cuts_and_refuses_bad_spans():
    t1, t2 = _turn(1, [1, 2], [10, 11]), _turn(2, [1, 2, 10, 11, 50], [12, 13, 14])
    [s] = episode_samples(_episode([t1, t2]), _template(), step_prm_scores=[0.5, -1.0])
    assert Sample.from_dict(s.to_dict()) == s and s.to_dict()["trajectory"]["step_spans"] == [[0, 2], [3, 6]]
    # the context cut keeps what fits: step 2's span is clipped, a span past the cut is dropped
    cut = fit_context(s, 2 + 4)
    assert cut.trajectory.step_spans == [(0, 2), (3, 4)] and cut.trajectory.step_scores == [0.5, -1.0]
    assert fit_context(s, 2 + 3).trajectory == Trajectory(s.trajectory.id, 3, [(0, 2)], [0], [0.5])
    with pytest.raises(ValueError, match="not inside"):
        Sample(tokens=[1, 2, 3], response_length=1, rollout_log_probs=[0.0], trajectory=Trajectory("t", 0, [(0, 2)]))
    with pytest.raises(ValueError, match="align"):
        Trajectory("t", 0, [(0, 1), (1, 2)], step_scores=[1.0])
    with pytest.raises(ValueError, match="group_index"):
        Trajectory("t", -1)
    for bad in (dict(step_spans=[(0, 3), (2, 4)]), dict(step_spans=[5]), dict(step_spans=[(0, 1)], step_scores=[None]),
                dict(step_spans=[(0, 1)], step_scores=["high"]), dict(group_index=2.7), dict(group_index=True)):
        with pytest.raises(ValueError):  # overlapping spans, not a pair, not numbers: a ValueError naming it
            Trajectory("t", **{"group_index": 0, **bad})
    with pytest.raises(ValueError, match="fields"):
        Sample(tokens=[1, 2], response_length=1, rollout_log_probs=[0.0], trajectory={"id": "t", "bogus": 1})


def test_an_upstream_generate_plugins_metadata_is_lifted_into_the_trajectory():
    meta = {"trajectory_id": "ep-7", "group_index": 2, "step_spans": [[0, 1], [2, 3]], "step_prm_scores": [1.0, 0.0]}
    s = Sample(tokens=[1, 2, 3, 4, 5], response_length=3, rollout_log_probs=[0.0] * 3, metadata=dict(meta))
    assert lift_upstream_trajectory(s).trajectory == Trajectory("ep-7", 2, [(0, 1), (2, 3)], None, [1.0, 0.0])
    zero = Sample(tokens=[1, 2, 3], response_length=2, rollout_log_probs=[0.0] * 2,
                  metadata={"trajectory_id": 0, "group_index": 1, "step_spans": [[0, 1]]})
    assert lift_upstream_trajectory(zero).trajectory.id == "0"  # episode 0 keeps one id over its step-samples
    plain = Sample(tokens=[1, 2], response_length=1, rollout_log_probs=[0.0], metadata={"group_index": 0})
    assert lift_upstream_trajectory(plain).trajectory is None  # a single-turn sample stays one
    bad = Sample(tokens=[1, 2], response_length=1, rollout_log_probs=[0.0], metadata={"step_spans": [[0, 5]]})
    with pytest.raises(ValueError, match="step_spans"):
        lift_upstream_trajectory(bad)
    assert bad.trajectory is None
