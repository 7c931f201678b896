"""Step-wise advantages (``--advantage-estimator step_wise``), GRPO under ``--dynamic-history``, and
the new flags of issue 13: every expected number is worked by hand in the comments."""

from __future__ import annotations

import math
import uuid

import pytest

from slime.config.flags import ConfigError
from slime.methods import StepWiseMethod, load_method_class
from slime.methods.grpo import GRPOMethod
from slime.methods.step_wise import step_wise_advantages
from slime.config.run_args import parse_run_args
from slime.record.sample import Sample, SampleStatus, Trajectory


def _s(reward, mask, group_index=None, trajectory_id=None, step_spans=None, step_indices=None,
       step_prm_scores=None) -> Sample:
    """A sample with prompt ids [1, 2] and ``len(mask)`` response ids, the given loss mask and, when
    a trajectory id or step spans are given, a :class:`Trajectory` (a fresh id when none is given);
    a ``group_index`` alone goes to the metadata, where the trainer must not read it."""
    R = len(mask)
    traj = None
    if trajectory_id is not None or step_spans is not None:
        traj = Trajectory(trajectory_id or uuid.uuid4().hex, group_index, step_spans or [], step_indices,
                          step_prm_scores)
    return Sample(tokens=[1, 2] + list(range(10, 10 + R)), response_length=R, rollout_log_probs=[-1.0] * R,
                  loss_mask=list(mask), reward=reward, trajectory=traj,
                  metadata={} if traj is not None or group_index is None else {"group_index": group_index})


def _cfg(*extra: str):
    return parse_run_args(["--advantage-estimator", "step_wise", "--n-samples-per-prompt", "2", *extra])


SQRT_2_3 = math.sqrt(2 / 3)  # population std of (1, 0, -1)


def test_uneven_groups_single_and_dropped_buckets_removed_samples():
    # --prm-step-coef 0.5; r_k = reward + 0.5 * score_k
    # group 0, trajectory a (2 steps: action 2 tok, observation 2 tok, action 2 tok), reward 1, scores (1, -1):
    #   r = (1.5, 0.5)
    a = _s(1.0, [1, 1, 0, 0, 1, 1], group_index=0, trajectory_id="a", step_spans=[[0, 2], [4, 6]],
           step_indices=[0, 1], step_prm_scores=[1.0, -1.0])
    # trajectory b (3 one-token steps, observations between), reward 0, scores (1, 1, 1): r = (0.5, 0.5, 0.5)
    b = _s(0.0, [1, 0, 1, 0, 1], group_index=0, trajectory_id="b", step_spans=[[0, 1], [2, 3], [4, 5]],
           step_indices=[0, 1, 2], step_prm_scores=[1.0, 1.0, 1.0])
    # trajectory c (1 step), reward 0, score -1: r = (-0.5,)
    c = _s(0.0, [1, 1], group_index=0, trajectory_id="c", step_spans=[[0, 2]], step_prm_scores=[-1.0])
    # group 1: two one-step trajectories with the same reward 1 and no PRM score -> one constant bucket
    d = _s(1.0, [1, 1, 1], group_index=1, trajectory_id="d", step_spans=[[0, 3]])
    e = _s(1.0, [1], group_index=1, trajectory_id="e", step_spans=[[0, 1]])
    out, m = step_wise_advantages([a, b, c, d, e], coef=0.5, n_per_prompt=3)
    # bucket (0, 0) = (1.5, 0.5, -0.5): mean 0.5, centred (1, 0, -1), population std sqrt(2/3)
    A = 1 / (SQRT_2_3 + 1e-6)  # 1.2247...
    # bucket (0, 1) = (0.5, 0.5): all equal -> dropped (a's and b's step 1 leave the loss)
    # bucket (0, 2) = (0.5,): one trajectory -> raw 0.5
    # bucket (1, 0) = (1, 1): dropped -> d and e have no step left -> removed
    assert out == [a, b, c]
    assert a.advantages == pytest.approx([A, A, 0, 0, 0, 0]) and a.loss_mask == [1, 1, 0, 0, 0, 0]
    assert b.advantages == pytest.approx([0, 0, 0, 0, 0.5]) and b.loss_mask == [1, 0, 0, 0, 1]
    assert c.advantages == pytest.approx([-A, -A]) and c.loss_mask == [1, 1]
    # steps 2+3+1+1+1 = 8; buckets (0,0) (0,1) (0,2) (1,0); |A| over the 6 loss tokens: (4 * 1.2247 + 0.5) / 6
    assert m["step_wise/steps"] == 8 and m["step_wise/buckets"] == 4
    assert m["step_wise/single_buckets"] == 1 and m["step_wise/dropped_buckets"] == 2
    assert m["step_wise/removed_samples"] == 2 and m["step_wise/unspanned_tokens"] == 0
    assert m["step_wise/adv_abs_mean"] == pytest.approx((4 * A + 0.5) / 6)


def test_coefficient_applied_once_and_raw_rewards():
    # --disable-rewards-normalization: advantages are the raw step rewards r_k = 1 + 2 * score_k
    # scores (0.5, -0.25) -> (2.0, 0.5): the coefficient once (not 1 + 4 * 0.5 = 3, not 1 + 0.5 = 1.5)
    s = _s(1.0, [1, 1, 0, 1], group_index=0, trajectory_id="t", step_spans=[[0, 2], [3, 4]],
           step_prm_scores=[0.5, -0.25])
    out, m = step_wise_advantages([s], coef=2.0, n_per_prompt=1, normalize=False)
    assert out[0].advantages == pytest.approx([2.0, 2.0, 0.0, 0.5])
    cfg = _cfg("--prm-step-coef", "2", "--disable-rewards-normalization")
    s2 = _s(1.0, [1, 1, 0, 1], step_spans=[[0, 2], [3, 4]], step_prm_scores=[0.5, -0.25])
    assert StepWiseMethod(cfg).compute_advantages([s2])[0][0].advantages == pytest.approx([2.0, 2.0, 0.0, 0.5])


def test_masks_respected_and_tokens_outside_spans():
    # span [0, 4) covers an observation token (mask 0 at 2): it keeps advantage 0 and mask 0;
    # token 5 is a loss token outside every span: it leaves the loss (counted as unspanned)
    x = _s(1.0, [1, 1, 0, 1, 0, 1], group_index=0, trajectory_id="x", step_spans=[[0, 4]])
    y = _s(0.0, [1, 1], group_index=0, trajectory_id="y", step_spans=[[0, 2]])
    out, m = step_wise_advantages([x, y], coef=1.0, n_per_prompt=2)
    # bucket (0, 0) = (1, 0): mean 0.5, std 0.5 -> +-0.5 / 0.500001
    a = 0.5 / (0.5 + 1e-6)
    assert x.advantages == pytest.approx([a, a, 0, a, 0, 0]) and x.loss_mask == [1, 1, 0, 1, 0, 0]
    assert y.advantages == pytest.approx([-a, -a])
    assert m["step_wise/unspanned_tokens"] == 1


def test_fallbacks_without_metadata_groups_by_n_samples_per_prompt():
    # no step metadata: one step over the whole response; groups are consecutive chunks of 2
    s = [_s(r, [1, 1]) for r in (1.0, -1.0, 3.0, 3.0)]
    out, m = StepWiseMethod(_cfg()).compute_advantages(s)
    # group 0 (1, -1): mean 0, population std 1 -> +-1 / 1.000001; group 1 (3, 3): dropped, both removed
    assert out == s[:2] and s[0].advantages == pytest.approx([1 / 1.000001] * 2)
    assert s[1].advantages == pytest.approx([-1 / 1.000001] * 2) and m["step_wise/removed_samples"] == 2


def test_dynamic_history_each_trajectory_step_counted_once():
    # one sample per step (response = that step's action); a: reward 1, two steps; b: reward 0, three steps,
    # PRM score 1 on its last step. A duplicate step-sample of a's step 0 must not count twice.
    def step(traj, reward, k, score=0.0):
        return _s(reward, [1, 1, 0], group_index=0, trajectory_id=traj, step_spans=[[0, 3]], step_indices=[k],
                  step_prm_scores=[score])
    a0, a0_dup, a1 = step("a", 1.0, 0), step("a", 1.0, 0), step("a", 1.0, 1)
    b0, b1, b2 = step("b", 0.0, 0), step("b", 0.0, 1), step("b", 0.0, 2, 1.0)
    out, m = StepWiseMethod(_cfg("--dynamic-history")).compute_advantages([a0, a0_dup, a1, b0, b1, b2])
    # buckets (0,0) and (0,1) = (1, 0): +-0.5 / 0.500001 (counting a twice would give (1,1,0): 0.7071)
    v = 0.5 / (0.5 + 1e-6)
    for s in (a0, a0_dup, a1):
        assert s.advantages == pytest.approx([v, v, 0])
    assert b0.advantages == pytest.approx([-v, -v, 0]) == b1.advantages
    # bucket (0,2) = (0 + 1 * 1,): single -> raw 1.0
    assert b2.advantages == pytest.approx([1.0, 1.0, 0]) and len(out) == 6
    assert m["step_wise/buckets"] == 3 and m["step_wise/single_buckets"] == 1


def test_a_bad_trajectory_is_a_clear_error():
    with pytest.raises(ValueError, match="no trajectory"):  # a group index in the metadata is not read
        StepWiseMethod(_cfg("--dynamic-history")).compute_advantages([_s(1.0, [1], group_index=0)])
    with pytest.raises(ValueError, match="align"):
        step_wise_advantages([_s(1.0, [1, 1], step_spans=[[0, 1], [1, 2]], step_prm_scores=[1.0])],
                             coef=1.0, n_per_prompt=1)
    with pytest.raises(ValueError, match="not inside"):
        step_wise_advantages([_s(1.0, [1, 1], step_spans=[[1, 3]])], coef=1.0, n_per_prompt=1)
    with pytest.raises(ValueError, match="two rewards"):
        step_wise_advantages([_s(1.0, [1], group_index=0, trajectory_id="t", step_spans=[[0, 1]]),
                              _s(0.0, [1], group_index=0, trajectory_id="t", step_spans=[[0, 1]])],
                             coef=1.0, n_per_prompt=2)


def test_failed_samples_stay_out_of_the_buckets():
    ok1 = _s(1.0, [1], group_index=0, trajectory_id="p", step_spans=[[0, 1]])
    ok2 = _s(0.0, [1], group_index=0, trajectory_id="q", step_spans=[[0, 1]])
    bad = _s(0.0, [0], group_index=0, trajectory_id="r", step_spans=[[0, 1]])
    bad.status = SampleStatus.FAILED
    out, m = step_wise_advantages([ok1, ok2, bad], coef=1.0, n_per_prompt=3)
    # bucket (0,0) = (1, 0) only: +-0.999998; the failed sample trains nothing
    assert ok1.advantages == pytest.approx([0.5 / 0.500001]) and bad.advantages == [0.0] and len(out) == 3


def test_grpo_dynamic_history_normalises_over_trajectories_not_step_samples():
    cfg = parse_run_args(["--advantage-estimator", "grpo", "--n-samples-per-prompt", "3", "--dynamic_history"])

    def step(group, traj, reward, mask=(1, 1)):
        return _s(reward, mask, group_index=group, trajectory_id=traj)
    a = [step(0, "a", 1.0), step(0, "a", 1.0, (1, 1, 0))]          # 2 step-samples
    b = [step(0, "b", 0.0) for _ in range(3)]                       # 3 step-samples
    c = [step(0, "c", 0.0)]                                         # 1 step-sample
    d = [step(1, "d", 1.0)]                                         # a group of one trajectory
    out, _ = GRPOMethod(cfg).compute_advantages(a + b + c + d)
    # group 0 outcomes (1, 0, 0): mean 1/3, centred (2/3, -1/3, -1/3), unbiased std sqrt((4+1+1)/9/2) = sqrt(1/3)
    std = math.sqrt(1 / 3)
    pos, neg = (2 / 3) / (std + 1e-6), (-1 / 3) / (std + 1e-6)      # 1.1547, -0.5774
    # (over the 6 step-samples (1,1,0,0,0,0) the values would be 1.29 / -0.65 instead)
    assert a[0].advantages == pytest.approx([pos, pos]) and a[1].advantages == pytest.approx([pos, pos, 0])
    assert all(s.advantages == pytest.approx([neg, neg]) for s in b + c)
    assert d[0].advantages == [0.0, 0.0]  # one trajectory: no group signal
    with pytest.raises(ValueError, match="no trajectory"):
        GRPOMethod(cfg).compute_advantages([_s(1.0, [1], group_index=0)])


def test_grpo_counts_a_trajectory_split_at_a_prefix_break_once():
    # without --dynamic-history an agent trajectory split at a template prefix break is 2 samples;
    # groups of n=2 trajectories: group 0 = (a: 1.0 split in two, b: -1.0), group 1 = (c: 1.0, d: 1.0)
    cfg = parse_run_args(["--advantage-estimator", "grpo", "--n-samples-per-prompt", "2"])

    def piece(group, traj, reward):
        return _s(reward, (1, 1), group_index=group, trajectory_id=traj)
    a1, a2, b, c, d = piece(0, "a", 1.0), piece(0, "a", 1.0), piece(0, "b", -1.0), piece(1, "c", 1.0), piece(1, "d", 1.0)
    out, _ = GRPOMethod(cfg).compute_advantages([a1, a2, b, c, d])  # 5 samples: not 2 groups of 2
    # group 0 outcomes (1, -1): centred (1, -1), unbiased std sqrt(2) -> +-1/sqrt(2); group 1 all equal -> 0
    one = 1 / (math.sqrt(2) + 1e-6)
    assert a1.advantages == pytest.approx([one, one]) == a2.advantages
    assert b.advantages == pytest.approx([-one, -one])
    assert c.advantages == [0.0, 0.0] == d.advantages
    # unsplit trajectories keep plain GRPO over consecutive samples
    e, f = piece(0, "e", 1.0), piece(0, "f", 0.0)
    GRPOMethod(cfg).compute_advantages([e, f])
    # (1, 0): centred (0.5, -0.5), unbiased std sqrt(1/2) -> +-1/sqrt(2) again
    assert e.advantages == pytest.approx([one, one]) and f.advantages == pytest.approx([-one, -one])


def test_new_flags_parse_with_aliases_and_env():
    cfg = parse_run_args(["--advantage-estimator", "step_wise", "--n-samples-per-prompt", "2",
                          "--metadata-key", "meta", "--reward-key", "score", "--dynamic_history",
                          "--prm-enable", "--prm-m", "5", "--prm-temperature", "0.6", "--prm-max-new-tokens", "256",
                          "--prm-num-gpus", "4", "--prm-num-gpus-per-engine", "2", "--prm-step-coef", "0.25"],
                         environ={})
    assert (cfg.metadata_key, cfg.reward_key, cfg.dynamic_history) == ("meta", "score", True)
    assert (cfg.prm_enable, cfg.prm_m, cfg.prm_temperature, cfg.prm_max_new_tokens) == (True, 5, 0.6, 256)
    assert (cfg.prm_num_gpus, cfg.prm_num_gpus_per_engine, cfg.prm_step_coef) == (4, 2, 0.25)
    assert parse_run_args(["--dynamic-history"], environ={}).dynamic_history is True
    d = parse_run_args(["--advantage-estimator", "step_wise"], environ={})
    assert (d.metadata_key, d.reward_key, d.dynamic_history, d.prm_enable, d.prm_m, d.prm_temperature,
            d.prm_max_new_tokens, d.prm_num_gpus, d.prm_num_gpus_per_engine, d.prm_step_coef) == \
        ("metadata", None, False, False, 3, 1.0, 4096, 0, 0, 1.0)
    env = {"PRM_ENABLE": "1", "PRM_M": "7", "PRM_STEP_COEF": "0.5", "PRM_TEMPERATURE": "0.3",
           "PRM_MAX_NEW_TOKENS": "64"}
    e = parse_run_args(["--advantage-estimator", "step_wise"], environ=env)
    assert (e.prm_enable, e.prm_m, e.prm_step_coef, e.prm_temperature, e.prm_max_new_tokens) == (True, 7, 0.5, 0.3, 64)
    assert parse_run_args(["--advantage-estimator", "step_wise", "--prm-m", "2"], environ=env).prm_m == 2
    assert load_method_class("step_wise") is StepWiseMethod
    with pytest.raises(ConfigError, match="--prm-step-coef needs --advantage-estimator step_wise"):
        parse_run_args(["--prm-step-coef", "1"], environ={})
    with pytest.raises(ConfigError, match="--prm-m must be >= 1"):
        parse_run_args(["--prm-m", "0"], environ={})
    with pytest.raises(ConfigError, match="PRM_M must be an integer"):
        parse_run_args([], environ={"PRM_M": "many"})
