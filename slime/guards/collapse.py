"""The collapse guard's spike detector: is this train step's update out of line with the recent ones?

A collapsing policy shows it in a few numbers before its replies turn to garbage (the reference
system's public reproduction: gradient norms from 3-8 to 2243 within 34 steps). Each train step
(:meth:`slime.trainer.backend.TrainingBackend.train_step`) hands :meth:`SpikeDetector.check` its
**signals**, all measured before the step's update is kept:

* ``advantage``: the batch's mean ``|advantage|`` per loss token. Rewards of +-1 and their
  baselines keep it below 2; a reward plugin gone wrong (an advantage of 1e5) shows here first;
* ``grad_norm``: the global gradient norm before clipping (before ``optimizer.step()``) **per unit
  of advantage** (divided by ``advantage``), judged and recorded only for a batch whose advantage
  is at least :data:`ADVANTAGE_UNIT` (below it the gradient is the KL penalty's or nearly none,
  and says nothing about the scale of a learning step). The policy-gradient term scales
  with the advantages, so a raw norm calls every batch that carries a signal a spike when the
  batches before it carried none: with a batch-mean baseline and a user who rejects nearly
  everything, most batches are all -1 and their RL advantages are 0 (the gradient is the KL's and
  OPD's, ~0.09 on the embedded model), and the first batch with an accepted reply (advantages 1.75
  and -0.25, raw norm 0.5-0.7) was skipped as a x6 spike, each time, and rolled back (run f1,
  docs/learning.md). A collapse raises the norm with ordinary advantages, which this still shows;
* ``logprob_gap``: mean ``|trainer log-prob - rollout log-prob|`` of the batch's loss tokens at
  the current weights (before the step). Samples the engine produced at an older weight version
  carry the drift of the updates since: a broken update shows here at the latest one step later;
* ``kl_ref``: the KL penalty to the reference policy (only with ``--use-kl-loss``);
* ``update_kl``: how far the step's update moved the policy on the batch itself: the update is
  applied, the batch's log-probs recomputed (one no-grad pass) and the mean k3 estimate
  ``exp(d) - d - 1`` (``d`` = new - old log-prob per loss token; Schulman's low-variance KL
  estimator) compared. A spike here is undone at once (weights and optimizer state restored), so
  a collapsing update is caught within the update that starts it.

A value is a **spike** when it is not finite, or larger than ``--spike-factor`` times its
**baseline**: the median of the signal's last ``--spike-window`` healthy values, never below the
signal's floor (:data:`FLOORS`, so that tiny values cannot trip it). ``update_kl`` is judged from
the first step (before any history its floor is its baseline: an update that moves the policy by
more than ``spike_factor * 0.5`` nats per token on its own batch is never a healthy one; the floor
is that high because tiny random test models move ~0.2-0.6 nats per token at ordinary learning
rates, while a breaking update moves a real model several nats: SmolLM2-135M's LoRA at lr 0.1,
3.6 on its first step); the
others have no scale of their own (the grad norm depends on the model and the loss, the log-prob
gap's level on the engine, the KL to the reference grows as training goes), so they are judged
after ``--spike-min-history`` healthy steps. A spiking step's values are not added to the history.

A finite ``grad_norm`` spike is **clipped, not skipped** (:data:`CLIPPED`): the gradient is scaled
down to ``--spike-factor`` times its baseline, the step is kept, and the clipped value joins the
history, as adaptive clipping does (ZClip, Kumar et al. 2025, arXiv:2504.02507; AdaGC, Wang et al.
2025, arXiv:2502.11034). A skipped norm never entered the history, so a run whose gradient norm
rises for good froze its baseline at its first steps' level and skipped every step after: a LoRA
adapter's norm per unit of advantage grows ~10x in its first steps as ``B`` leaves zero (terminal
family, 15 of 20 steps skipped, ``grad_norm 0.2187 vs baseline 0.02054 (x10.6)``). A clipped
value raises the median, so a sustained level is the baseline within a few steps, while one huge
gradient enters the update and the optimizer's moment estimates at no more than ``--spike-factor``
times an ordinary one's norm. A clipped step is
no spike towards a collapse; what an update does to the policy is ``update_kl``'s to judge, and
its spike still undoes the step.

``--max-spikes`` spikes within the last ``--spike-window`` steps are a **collapse**:
``--on-collapse rollback`` restores the last good checkpoint (weights and optimizer state,
:meth:`slime.orchestration.ray_actors.TrainActor.restore_last_good`) and multiplies the learning rate by
``--collapse-lr-factor``; ``pause`` stops the run (:func:`slime.train.run_loop` ends cleanly and
says why in its summary). ``--collapse-guard log`` detects and records without acting, ``off``
does not measure.
"""

from __future__ import annotations

import logging
import math
import statistics
from collections import deque
from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["ACTIONS", "ADVANTAGE_UNIT", "CLIPPED", "FLOORS", "advantage_scale", "grad_norm_per_advantage", "GuardPolicy", "SIGNALS", "Spike", "SpikeDetector", "act_on_collapse",
           "guard_metrics", "update_kl_k3"]

log = logging.getLogger(__name__)

#: the signals, in the order they are checked
SIGNALS = ("advantage", "grad_norm", "logprob_gap", "kl_ref", "update_kl")
#: the smallest mean |advantage| of a batch whose gradient norm is judged (a batch whose advantages
#: are nearly all 0 has the KL penalty's gradient or none: no scale for a learning step)
ADVANTAGE_UNIT = 0.1
#: the smallest baseline of each signal (nats per token, except ``grad_norm``)
#: ``kl_ref``'s is high because the KL to the reference grows as a healthy run learns (the default
#: main job: 0.01-0.05 in its first three steps, 0.26 in its fourth, which a 0.05 floor called a spike
#: and skipped); a collapse moves it by nats per token
FLOORS = {"advantage": 1.0, "grad_norm": 1e-3, "logprob_gap": 0.1, "kl_ref": 0.5, "update_kl": 0.5}
#: signals judged before they have any history (their floor is the baseline): the size of an update
#: (not the advantage: OPD's token-level log-prob gaps are legitimately ~10 per token from the first
#: step, so the advantage is judged against its own history only)
#: has a scale of its own, whereas the log-prob gap's level depends on the engine (a bfloat16 engine's
#: is larger than a float32 one's) and the KL to the reference grows as training goes
SCALED = ("update_kl",)
#: signals whose finite spike is clipped to ``spike_factor`` baselines and kept, not skipped
CLIPPED = ("grad_norm",)
#: ``guard/action`` of a step is the index of its action here (``clipped``: a :data:`CLIPPED` spike)
ACTIONS = ("trained", "skipped", "rolled_back", "paused", "clipped")


@dataclass(frozen=True)
class GuardPolicy:
    """The resolved settings of the collapse guard (see module docstring).

    mode: ``on`` (skip spiking steps, act on a collapse), ``log`` (detect and record only),
        ``off`` (measure nothing). spike_factor: a spike is above this many baselines.
    spike_window: healthy values a baseline is the median of, and the steps spikes are counted
        over. spike_min_history: healthy values a signal without a scale of its own needs before
        it is judged (all but ``update_kl``).
    max_spikes: spikes within the window that make a collapse. on_collapse: ``rollback`` or
        ``pause``. collapse_lr_factor: the learning rate is multiplied by this at a rollback.
    """

    mode: Literal["on", "log", "off"] = "on"
    spike_factor: float = 5.0
    spike_window: int = 8
    spike_min_history: int = 3
    max_spikes: int = 2
    on_collapse: Literal["rollback", "pause"] = "rollback"
    collapse_lr_factor: float = 0.5

    @classmethod
    def from_config(cls, cfg: Any) -> "GuardPolicy":
        """The policy of a run: ``--collapse-guard``, ``--spike-factor``, ``--spike-window``,
        ``--spike-min-history``, ``--max-spikes``, ``--on-collapse``, ``--collapse-lr-factor``."""
        return cls(mode=cfg.collapse_guard, spike_factor=cfg.spike_factor, spike_window=cfg.spike_window,
                   spike_min_history=cfg.spike_min_history, max_spikes=cfg.max_spikes,
                   on_collapse=cfg.on_collapse, collapse_lr_factor=cfg.collapse_lr_factor)

    @property
    def acts(self) -> bool:
        """Whether a spike skips the step and a collapse rolls back or pauses."""
        return self.mode == "on"


@dataclass(frozen=True)
class Spike:
    """One spiking signal: its name, its value and the baseline it was compared with."""

    signal: str
    value: float
    baseline: float

    def line(self) -> str:
        """``grad_norm 2243 vs baseline 5.1 (x440)`` (what the log lines say)."""
        ratio = self.value / self.baseline if self.baseline > 0 and math.isfinite(self.value) else float("inf")
        return f"{self.signal} {self.value:.4g} vs baseline {self.baseline:.4g} (x{ratio:.3g})"


class SpikeDetector:
    """The recent history of each signal and of the spikes (see module docstring).

    Args:
        policy: the run's :class:`GuardPolicy`.
    """

    def __init__(self, policy: GuardPolicy):
        self.policy = policy
        self.history: dict[str, deque[float]] = {s: deque(maxlen=policy.spike_window) for s in SIGNALS}
        self.recent: deque[bool] = deque(maxlen=policy.spike_window)  # one entry per judged step

    def baseline(self, signal: str) -> float | None:
        """The baseline of ``signal`` now (median of its healthy history, at least its floor), or
        None while it is not judged yet (``grad_norm`` with too little history)."""
        past = self.history[signal]
        floor = FLOORS[signal]
        if not past:
            return floor if signal in SCALED else None
        if signal not in SCALED and len(past) < self.policy.spike_min_history:
            return None
        return max(statistics.median(past), floor)

    def check(self, signals: dict[str, float]) -> Spike | None:
        """The first spiking signal of ``signals`` (name -> value; a missing signal is not
        judged), or None. Records nothing: call :meth:`record` once the step is decided."""
        for name in SIGNALS:
            if name not in signals:
                continue
            value = float(signals[name])
            if not math.isfinite(value):
                return Spike(name, value, self.baseline(name) or FLOORS[name])
            base = self.baseline(name)
            if base is not None and value > self.policy.spike_factor * base:
                return Spike(name, value, base)
        return None

    def clip_limit(self, spike: Spike) -> float | None:
        """The value a spike of a :data:`CLIPPED` signal is clipped to (``spike_factor`` times its
        baseline), or None when it is not clipped (another signal, or a non-finite value: skipped)."""
        if spike.signal not in CLIPPED or not math.isfinite(spike.value):
            return None
        return self.policy.spike_factor * spike.baseline

    def record(self, signals: dict[str, float], spike: Spike | None) -> None:
        """Close one step: its healthy values join the history (none of a spiking step)."""
        self.recent.append(spike is not None)
        if spike is None:
            for name, value in signals.items():
                if name in self.history and math.isfinite(value):
                    self.history[name].append(float(value))

    @property
    def spikes(self) -> int:
        """Spikes within the last ``spike_window`` steps."""
        return sum(self.recent)

    def collapsed(self) -> bool:
        """Whether the recent spikes make a collapse (``>= max_spikes``)."""
        return self.spikes >= self.policy.max_spikes

    def forget_spikes(self) -> None:
        """Start counting spikes afresh (after a rollback); the healthy history stays."""
        self.recent.clear()


def advantage_scale(samples: Any) -> float:
    """Mean ``|advantage|`` over the loss tokens of ``samples`` (:class:`slime.record.sample.Sample` with
    ``advantages`` and ``loss_mask``, length ``R`` each); 0.0 without loss tokens."""
    total = tokens = 0.0
    for s in samples:
        for a, m in zip(s.advantages or (), s.loss_mask or ()):
            if m:
                total += abs(float(a))
                tokens += 1.0
    return total / tokens if tokens else 0.0


def grad_norm_per_advantage(grad_norm: float, advantage: float) -> float | None:
    """The ``grad_norm`` signal: the gradient norm divided by the batch's mean ``|advantage|``, or
    None (not judged) when that is below :data:`ADVANTAGE_UNIT`. A non-finite norm is returned
    as it is (always a spike)."""
    if not math.isfinite(grad_norm):
        return grad_norm
    return grad_norm / advantage if advantage >= ADVANTAGE_UNIT else None


def update_kl_k3(old_logprobs: Any, new_logprobs: Any, mask: Any) -> tuple[float, float]:
    """``(sum, count)`` of the k3 KL estimate ``exp(d) - d - 1`` (``d = new - old``) over the
    tokens where ``mask > 0``; tensors of one shape ``[B, T]`` (nats per token)."""
    d = (new_logprobs - old_logprobs).double()
    k3 = d.exp() - d - 1.0
    on = mask > 0
    return float(k3[on].sum()), float(on.sum())


def guard_metrics(detector: SpikeDetector, signals: dict[str, float], spike: Spike | None, skipped: bool,
                  lr: float, clipped: Spike | None = None, clip_scale: float = 1.0) -> dict[str, float]:
    """A train step's ``guard/*`` metrics: ``guard/spike`` (0/1), ``guard/spike_<signal>`` (0/1 per
    signal), ``guard/spike_value`` and ``guard/spike_baseline`` (0 without a spike),
    ``guard/baseline_<signal>`` (what the next step is compared with; 0 while not judged),
    ``guard/update_kl``, ``guard/skipped`` (the guard skipped or undid the step), ``guard/clipped``
    (0/1) and ``guard/clip_scale`` (what the gradient was multiplied by; 1 unclipped),
    ``guard/action`` (index into :data:`ACTIONS`), ``guard/spikes`` (in the window),
    ``guard/collapse`` (0/1: the spikes make a collapse and the guard acts) and ``guard/lr`` (the
    learning rate of the step).

    ``spike`` is the step's spike (it skipped the step when ``skipped``); ``clipped`` a
    :data:`CLIPPED` signal's spike whose gradient was clipped (reported as the spike when no other
    signal spiked) and ``clip_scale`` what its gradient was multiplied by."""
    shown = spike or clipped
    out = {"guard/spike": float(shown is not None), "guard/spike_value": shown.value if shown else 0.0,
           "guard/spike_baseline": shown.baseline if shown else 0.0,
           "guard/update_kl": float(signals.get("update_kl", 0.0)), "guard/skipped": float(skipped),
           "guard/clipped": float(clipped is not None and not skipped),
           "guard/clip_scale": float(clip_scale if clipped is not None and not skipped else 1.0),
           "guard/action": float(ACTIONS.index("skipped" if skipped else "clipped" if clipped else "trained")),
           "guard/spikes": float(detector.spikes),
           "guard/collapse": float(detector.policy.acts and detector.collapsed()), "guard/lr": float(lr)}
    for name in SIGNALS:
        out[f"guard/spike_{name}"] = float(shown is not None and shown.signal == name)
        out[f"guard/baseline_{name}"] = float(detector.baseline(name) or 0.0)
    return out


def act_on_collapse(backend: Any, restore: Any, step: int | None) -> dict[str, Any]:
    """Act on a collapse the last train step reported (``guard/collapse``): ``rollback`` calls
    ``restore()`` (:meth:`slime.orchestration.ray_actors.TrainActor.restore_last_good`: the last good checkpoint's
    weights and optimizer state), multiplies the learning rate by ``--collapse-lr-factor`` and starts
    counting spikes afresh; ``pause`` changes nothing (the caller stops training). Logs one line.

    Args:
        backend: the :class:`slime.trainer.backend.TrainingBackend` (its ``detector``, ``guard``,
            ``scale_lr``, ``last_spike``).
        restore: the restore to call for a rollback; returns a dict with ``restored`` and
            ``weight_version``.
        step: the run's train step, for the line.

    Returns:
        ``guard/action`` (:data:`ACTIONS` index), ``guard/rollback`` / ``guard/pause`` (0/1),
        ``guard/lr`` (after), ``weight_version`` (after a rollback: the restored weights' new
        version) and ``guard/event``: the log line (a string).
    """
    policy, detector = backend.guard, backend.detector
    spike = backend.last_spike
    why = (f"collapse guard: {detector.spikes} spikes in the last {len(detector.recent)} steps"
           f"{f' at step {step}' if step is not None else ''} (last: {spike.line() if spike else '?'})")
    if policy.on_collapse == "pause":
        line = f"{why}: training paused (--on-collapse pause); the weights stay at version {backend.weight_version}"
        log.warning("%s", line)
        return {"guard/action": float(ACTIONS.index("paused")), "guard/rollback": 0.0, "guard/pause": 1.0,
                "guard/event": line}
    old_lr = float(backend.optimizer.param_groups[0]["lr"])
    info = restore()
    new_lr = backend.scale_lr(policy.collapse_lr_factor)
    detector.forget_spikes()
    line = (f"{why}: rolled back to {info['restored']} (weights and optimizer state) as weight version "
            f"{info['weight_version']}; lr {old_lr:.3g} -> {new_lr:.3g}")
    log.warning("%s", line)
    return {"guard/action": float(ACTIONS.index("rolled_back")), "guard/rollback": 1.0, "guard/pause": 0.0,
            "guard/lr": new_lr, "weight_version": float(info["weight_version"]), "guard/event": line}
