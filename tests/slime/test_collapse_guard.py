"""The trainer's collapse guard (slime.guards.collapse): the spike detector, the skipped step, the
undone update, the clipped gradient, the rollback to the last good checkpoint and the pause. Each
test fails without the guard it checks (the "off" controls show what happens then)."""

from __future__ import annotations

import dataclasses
import math

import pytest
import torch

from slime.algorithms.losses import LossInputs, LossOutputs, PolicyLossConfig, policy_loss
from slime.config.arguments import parse_args
from slime.trainer.backend import TrainingBackend
from slime.trainer.checkpoint import OPTIMIZER_FILE, find_latest_checkpoint
from slime.guards.collapse import ACTIONS, GuardPolicy, SpikeDetector, act_on_collapse, grad_norm_per_advantage
from slime.record.sample import Sample

TINY_QWEN3 = "builtin:tiny-qwen3"
PROMPT = [151644, 872, 198, 9707, 0, 151645, 198, 151644, 77091, 198]
REPLY = [9707, 1879, 0, 9707, 1879, 0]


# ------------------------------------------------------------------------------------- detector
def _detector(**kw) -> SpikeDetector:
    return SpikeDetector(GuardPolicy(**{"spike_factor": 5.0, "spike_window": 4, "spike_min_history": 3,
                                        "max_spikes": 2, **kw}))


def _feed(detector: SpikeDetector, values: list[dict]) -> list:
    spikes = []
    for v in values:
        spike = detector.check(v)
        detector.record(v, spike)
        spikes.append(spike)
    return spikes


def test_a_value_far_above_the_median_of_its_history_is_a_spike():
    d = _detector()
    assert _feed(d, [{"grad_norm": g} for g in (3.0, 5.0, 4.0)]) == [None] * 3
    assert d.check({"grad_norm": 19.0}) is None  # 19 < 5 x median 4
    spike = d.check({"grad_norm": 2243.0})
    assert spike.signal == "grad_norm" and spike.value == 2243.0 and spike.baseline == 4.0
    assert "x561" in spike.line()


def test_grad_norm_needs_history_and_update_kl_is_judged_from_the_first_step():
    d = _detector()
    assert d.check({"grad_norm": 1e6, "logprob_gap": 50.0}) is None  # no scale of their own yet
    spike = d.check({"update_kl": 2.6})  # above 5 x its floor 0.5 at once
    assert spike.signal == "update_kl" and spike.baseline == 0.5
    assert d.check({"update_kl": 2.4}) is None


def test_floors_keep_tiny_values_from_tripping():
    d = _detector()
    _feed(d, [{"logprob_gap": 1e-4}] * 3)
    assert d.check({"logprob_gap": 0.4}) is None  # 4000 x the median, but under 5 x the floor 0.1
    assert d.check({"logprob_gap": 0.6}).signal == "logprob_gap"


def test_the_kl_to_the_reference_growing_as_a_run_learns_is_no_spike():
    """The default main job's kl_ref per step (0.01-0.05, then 0.26 at step 4), growing on: with a
    0.05 floor step 4 was skipped as a spike; a collapse's kl_ref is nats per token."""
    d = _detector(spike_window=8)
    assert _feed(d, [{"kl_ref": k} for k in (0.01, 0.03, 0.05, 0.26, 0.3, 0.45, 0.6, 0.7)]) == [None] * 8
    assert d.check({"kl_ref": 6.0}).signal == "kl_ref"


def test_non_finite_values_spike_and_never_enter_the_history():
    d = _detector()
    for bad in (float("nan"), float("inf")):
        assert d.check({"grad_norm": bad}).signal == "grad_norm"
    _feed(d, [{"grad_norm": float("nan")}])
    assert not d.history["grad_norm"]


def test_the_gradient_norm_is_judged_per_unit_of_advantage():
    """Run f1 (docs/learning.md): batch-mean advantages are 0 in an all-rejected batch, so the raw
    gradient norm of the first batch with an accepted reply (advantage ~0.4) was 6x the all-rejected
    ones' and skipped, each time. Per unit of advantage it is in line; a collapse (the norm up 100x
    at the same advantage) still spikes."""
    d = _detector()
    for g, a in ((0.09, 0.02), (0.08, 0.03), (0.10, 0.02), (0.09, 0.01)):  # all rejected: not judged
        signals = {"advantage": a, **({} if (v := grad_norm_per_advantage(g, a)) is None else {"grad_norm": v})}
        assert "grad_norm" not in signals
        _feed(d, [signals])
    learning = [{"advantage": a, "grad_norm": grad_norm_per_advantage(g, a)}
                for g, a in ((0.61, 0.44), (0.57, 0.31), (0.50, 0.44), (0.69, 0.44))]
    assert _feed(d, learning) == [None] * 4
    raw = _detector()  # the raw norm, as before: the first accepted reply is a x6.8 spike
    _feed(raw, [{"grad_norm": g} for g in (0.09, 0.08, 0.10, 0.09)])
    assert raw.check({"grad_norm": 0.61}).signal == "grad_norm"
    spike = d.check({"advantage": 0.44, "grad_norm": grad_norm_per_advantage(61.0, 0.44)})
    assert spike.signal == "grad_norm"
    assert grad_norm_per_advantage(float("inf"), 0.0) == float("inf")


def test_repeated_spikes_within_the_window_are_a_collapse():
    d = _detector()
    _feed(d, [{"update_kl": 0.01}] * 3)
    _feed(d, [{"update_kl": 5.0}])  # above 5 x the floor 0.5
    assert d.spikes == 1 and not d.collapsed()
    _feed(d, [{"update_kl": 0.01}] * 3 + [{"update_kl": 5.0}])  # the first spike left the window of 4
    assert d.spikes == 1 and not d.collapsed()
    _feed(d, [{"update_kl": 5.0}])
    assert d.spikes == 2 and d.collapsed()
    assert list(d.history["update_kl"]) == [0.01] * 3 + [0.01]  # spikes did not raise the baseline
    d.forget_spikes()
    assert not d.collapsed()


# ------------------------------------------------------------------------------------- backend
#: a healthy learning rate for the tiny model (updates move it by ~0.01-0.2 nats per token) and one
#: that breaks it at once (~250 nats per token: 1000 times as far, whatever the machine)
GOOD_LR, BREAKING_LR = 1e-4, 1e-1


def _backend(*extra: str, lr: float = GOOD_LR) -> TrainingBackend:
    """The tiny Qwen3 model trained with full weights (float32, CPU)."""
    return TrainingBackend(parse_args(["--rollout-batch-size", "1", "--model-path", TINY_QWEN3, "--lr", str(lr),
                                       *extra]))


def _sample(advantage: float = 1.0) -> Sample:
    return Sample(tokens=PROMPT + REPLY, response_length=len(REPLY), rollout_log_probs=[0.0] * len(REPLY),
                  advantages=[advantage] * len(REPLY), weight_version=0)


def _trainable(backend) -> list[torch.Tensor]:
    return [p.detach().clone() for p in backend.trainable_parameters]


def _same(a: list[torch.Tensor], b: list[torch.Tensor]) -> bool:
    return all(torch.equal(x, y) for x, y in zip(a, b))


def _optimizer_tensors(state_dict: dict) -> list[torch.Tensor]:
    return [v for s in state_dict["state"].values() for k, v in sorted(s.items()) if torch.is_tensor(v)]


def _huge_gradient_batch_after_three_normal_steps(*extra: str):
    backend = _backend(*extra)
    for _ in range(3):
        m = backend.train_step([_sample(1.0)])
        assert m["skipped"] == 0.0
    weights, version = _trainable(backend), backend.weight_version
    exp_avg = [t.clone() for t in _optimizer_tensors(backend.optimizer.state_dict())]
    m = backend.train_step([_sample(1e5)])  # the same reply, advantage 1e5: a 1e5-times gradient
    return backend, m, weights, version, exp_avg


@pytest.mark.parametrize("mode", ["on", "off"])
def test_a_huge_gradient_step_is_skipped_and_the_weights_stay(mode):
    backend, m, weights, version, exp_avg = _huge_gradient_batch_after_three_normal_steps("--collapse-guard", mode)
    if mode == "off":  # without the guard the step is taken (what the "on" case must prevent)
        assert m["skipped"] == 0.0 and backend.weight_version == version + 1
        assert not _same(_trainable(backend), weights)
        return
    # a broken reward: the advantage itself spikes (1e5 against its floor 1), before any update
    assert m["guard/spike"] == 1.0 and m["guard/spike_advantage"] == 1.0 and m["skipped"] == 1.0
    assert m["guard/spike_value"] == pytest.approx(1e5) and m["guard/spike_value"] > 1e3 * m["guard/spike_baseline"]
    assert m["guard/action"] == ACTIONS.index("skipped") and m["guard/update_kl"] == 0.0  # no update was made
    assert backend.weight_version == version and m["weight_version"] == version
    assert _same(_trainable(backend), weights)
    assert _same(_optimizer_tensors(backend.optimizer.state_dict()), exp_avg)
    assert all(p.grad is None for p in backend.trainable_parameters)


@pytest.mark.parametrize("mode", ["on", "off"])
def test_an_update_that_moves_the_policy_too_far_is_undone(mode):
    backend = _backend("--collapse-guard", mode, lr=BREAKING_LR)  # the first update already breaks it
    weights = _trainable(backend)
    m = backend.train_step([_sample(1.0)])
    if mode == "off":
        assert "guard/update_kl" not in m and backend.weight_version == 1 and not _same(_trainable(backend), weights)
        return
    assert m["guard/spike_update_kl"] == 1.0 and m["guard/update_kl"] > 0.5 and m["skipped"] == 1.0
    assert backend.weight_version == 0 and _same(_trainable(backend), weights)
    assert not backend.optimizer.state  # AdamW's moments as they were: none yet
    assert m["guard/update_kl"] > 20 * 2.5  # far beyond the first-step ceiling (5 x the floor 0.5)


def test_log_mode_detects_but_does_not_act():
    backend, m, weights, version, _ = _huge_gradient_batch_after_three_normal_steps("--collapse-guard", "log")
    assert m["guard/spike"] == 1.0 and m["skipped"] == 0.0 and backend.weight_version == version + 1
    assert m["guard/collapse"] == 0.0


# ------------------------------------------------------------------------------------- rollback
def _collapse(backend) -> dict:
    """Train at BREAKING_LR until the guard reports a collapse (2 spikes; the first step at that lr
    may still pass, as Adam's moments from the good steps damp it); the collapsing step's metrics."""
    lrs = [g["lr"] for g in backend.optimizer.param_groups]
    for g in backend.optimizer.param_groups:
        g["lr"] = BREAKING_LR
    for _ in range(4):
        m = backend.train_step([_sample(1.0)])
        if m["guard/collapse"]:
            break
    for g, lr in zip(backend.optimizer.param_groups, lrs):
        g["lr"] = lr
    assert m["guard/collapse"] == 1.0 and m["guard/spike_update_kl"] == 1.0 and m["skipped"] == 1.0
    return m


def test_repeated_spikes_roll_back_to_the_checkpoint_weights_and_optimizer_and_lower_the_lr(tmp_path):
    backend = _backend()
    for _ in range(2):
        backend.train_step([_sample(1.0)])
    ckpt = backend.save(tmp_path, step=2)
    saved_weights = _trainable(backend)
    saved_optimizer = torch.load(ckpt / OPTIMIZER_FILE, weights_only=True)
    for _ in range(2):  # good steps after the checkpoint: the weights and optimizer move on
        backend.train_step([_sample(-1.0)])
    assert not _same(_trainable(backend), saved_weights)

    _collapse(backend)
    version, steps = backend.weight_version, backend.step
    out = act_on_collapse(backend, lambda: backend.restore_last_good(tmp_path), step=7)
    assert out["guard/rollback"] == 1.0 and out["guard/pause"] == 0.0
    assert out["guard/action"] == ACTIONS.index("rolled_back")
    assert out["guard/lr"] == pytest.approx(GOOD_LR / 2) and backend.optimizer.param_groups[0]["lr"] == out["guard/lr"]
    assert str(find_latest_checkpoint(tmp_path)) in out["guard/event"] and "lr 0.0001 -> 5e-05" in out["guard/event"]
    assert "update_kl" in out["guard/event"] and "at step 7" in out["guard/event"]
    assert _same(_trainable(backend), saved_weights)
    assert _same(_optimizer_tensors(backend.optimizer.state_dict()), _optimizer_tensors(saved_optimizer))
    assert backend.weight_version == version + 1 and backend.step == steps  # counting on, never reused
    assert out["weight_version"] == version + 1
    assert not backend.detector.collapsed()  # spikes are counted afresh
    m = backend.train_step([_sample(1.0)])  # and training goes on from there
    assert m["skipped"] == 0.0 and backend.weight_version == version + 2


def test_without_a_checkpoint_the_initial_weights_come_back_with_a_fresh_optimizer():
    backend = _backend()
    initial = _trainable(backend)
    for _ in range(2):
        backend.train_step([_sample(1.0)])
    assert not _same(_trainable(backend), initial)
    info = backend.restore_last_good(None)
    assert info == {"restored": "initial", "step": 2, "weight_version": 3}
    assert _same(_trainable(backend), initial) and not backend.optimizer.state


def test_pause_changes_nothing_and_says_so():
    backend = _backend("--on-collapse", "pause")
    backend.train_step([_sample(1.0)])
    _collapse(backend)
    weights, version = _trainable(backend), backend.weight_version

    def no_restore():
        raise AssertionError("pause must not restore")

    out = act_on_collapse(backend, no_restore, step=3)
    assert out["guard/pause"] == 1.0 and out["guard/action"] == ACTIONS.index("paused")
    assert "training paused" in out["guard/event"] and math.isclose(backend.optimizer.param_groups[0]["lr"], GOOD_LR)
    assert _same(_trainable(backend), weights) and backend.weight_version == version


# ------------------------------------------------------------------------------------- clipping
class _ScaledLoss:
    """The default policy loss times ``scale``: the gradient at the same advantage, ``scale`` times."""

    def __init__(self):
        self.scale = 1.0

    def __call__(self, inputs: LossInputs, config: PolicyLossConfig) -> LossOutputs:
        out = policy_loss(inputs, config)
        return dataclasses.replace(out, loss=out.loss * self.scale)


def _scaled_backend(*extra: str):
    """The tiny model trained three ordinary steps with a :class:`_ScaledLoss` (returned) and
    ``--clip-grad 0``, so that only the guard clips."""
    loss = _ScaledLoss()
    backend = TrainingBackend(parse_args(["--rollout-batch-size", "1", "--model-path", TINY_QWEN3, "--lr", str(GOOD_LR),
                                          "--clip-grad", "0", *extra]), loss_fn=loss)
    for _ in range(3):
        m = backend.train_step([_sample(1.0)])
        assert m["skipped"] == 0.0 and m["guard/clipped"] == 0.0
    return backend, loss


def test_a_sustained_rise_of_the_gradient_norm_is_clipped_until_it_is_the_baseline():
    """A LoRA adapter's gradient norm per unit of advantage rises ~10x in its first steps, as B leaves
    zero, and stays there. Skipping every step above 5 baselines froze the baseline and skipped 15
    of 20 steps of the terminal family's learning run; clipping keeps each step and lets the
    clipped values raise the baseline."""
    backend, loss = _scaled_backend()
    loss.scale = 10.0
    rows = [backend.train_step([_sample(1.0)]) for _ in range(8)]
    assert [r["skipped"] for r in rows] == [0.0] * 8 and backend.weight_version == 3 + 8
    first = rows[0]
    assert first["guard/clipped"] == 1.0 and first["guard/action"] == ACTIONS.index("clipped")
    assert first["guard/spike_grad_norm"] == 1.0 and first["guard/spikes"] == 0.0  # no step towards a collapse
    assert first["guard/clip_scale"] == pytest.approx(5 * first["guard/spike_baseline"] / first["guard/spike_value"])
    assert 0.3 < first["guard/clip_scale"] < 0.7  # 10 baselines clipped to 5
    # the clipped values raise the median of the window: from the fourth step on the new level is in line
    assert [r["guard/clipped"] for r in rows[3:]] == [0.0] * 5
    assert rows[-1]["guard/baseline_grad_norm"] > 5 * first["guard/spike_baseline"]


def test_one_huge_gradient_is_clipped_to_the_limit_and_the_step_kept():
    backend, loss = _scaled_backend()
    exp_avg = [s["exp_avg"].clone() for s in backend.optimizer.state.values()]
    loss.scale = 1000.0
    m = backend.train_step([_sample(1.0)])
    assert m["skipped"] == 0.0 and m["guard/clipped"] == 1.0 and backend.weight_version == 4
    limit = 5 * m["guard/spike_baseline"]
    assert m["guard/spike_value"] > 500 * m["guard/spike_baseline"] and m["grad_norm"] == pytest.approx(m["guard/spike_value"])
    # the gradient AdamW took in has the limit's norm (advantage 1): exp_avg = b1 * old + (1 - b1) * g
    beta1 = backend.optimizer.param_groups[0]["betas"][0]
    taken = [(s["exp_avg"] - beta1 * old) / (1 - beta1) for s, old in zip(backend.optimizer.state.values(), exp_avg)]
    assert math.sqrt(sum(float(g.double().pow(2).sum()) for g in taken)) == pytest.approx(limit, rel=1e-3)
    loss.scale = 1.0
    after = backend.train_step([_sample(1.0)])  # the huge value did not enter the history, its limit did
    assert after["guard/clipped"] == 0.0 and after["skipped"] == 0.0
    assert after["guard/baseline_grad_norm"] <= limit


def test_log_mode_clips_nothing():
    backend, loss = _scaled_backend("--collapse-guard", "log")
    loss.scale = 1000.0
    m = backend.train_step([_sample(1.0)])
    assert m["guard/spike_grad_norm"] == 1.0 and m["guard/clipped"] == 0.0 and m["guard/clip_scale"] == 1.0
    assert m["skipped"] == 0.0 and m["guard/action"] == ACTIONS.index("trained")
