"""One step's weight publish: through the promotion gate, and survived when it fails.

The train actor exports the step's weights under the run's publish folder
(:func:`slime.config.paths.published_dir`) and the rollout manager's service sends them to serving. When
that fails -- the folder vanished before the server loaded it, the disk under it is gone, the
server refused the weights or stayed unreachable past its retry bound
(:class:`slime.errors.PublishFailed`, or an ``OSError`` while exporting) -- serving keeps its older
weights, the run logs one line, counts it (``publish/failures`` in the step's metrics) and trains
on; the next step exports and publishes newer weights. Versions only go up: the server never
serves a version it did not load completely.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field

import ray

from slime.errors import PublishFailed, one_line, root_cause_line
from slime.guards.promotion import GateData, GateFailureAction, GateMode, GateReport, PromotionGate, VersionMeasure

__all__ = ["Publisher"]

log = logging.getLogger("slime.train")


@dataclass
class Publisher:
    """Publishes each step's weights through the run's actors and remembers what serving runs.

    Args:
        trainer: the run's :class:`slime.orchestration.train_group.TrainGroup` (measures, exports, prunes, restores).
        manager: the :class:`slime.orchestration.ray_actors.RolloutManager` handle (gate items, publishes).
        served: the weight version serving runs now (0 at the start of a fresh run).
        gate: the promotion gate (None: every version is published).
        on_gate_failure: what training does after a rejected version.

    Attributes:
        failures: publishes that failed. rejected: versions the gate kept from serving.
        paused: with ``--on-gate-failure pause``, the one-line reason training stopped (else None).
    """

    trainer: object
    manager: object
    served: int | None = 0
    gate: PromotionGate | None = None
    on_gate_failure: GateFailureAction = GateFailureAction.CONTINUE
    failures: int = 0
    rejected: int = 0
    paused: str | None = None
    _data: GateData = field(default_factory=GateData)

    @property
    def gating(self) -> bool:
        """True when versions are measured (``--promotion-gate enforce`` or ``log``)."""
        return self.gate is not None and self.gate.active

    def before_step(self) -> dict:
        """Follow a rollback of serving (:meth:`_follow_rollback`), then take the gate's current
        items from the service and measure the current (last good) weights on those it has not
        measured yet; returns ``{"gate/baseline_s": seconds}`` (and ``rollback/*``), empty when
        there is nothing to do."""
        out = self._follow_rollback()
        if not self.gating:
            return out
        self._data = ray.get(self.manager.gate_data.remote())
        if self._data.empty():
            return {}
        seconds = self.gate.refresh_baseline(lambda skip: self.trainer.gate_measure(self._data, skip))
        return {**out, "gate/baseline_s": seconds}

    def _follow_rollback(self) -> dict:
        """When serving went back to an older version (``POST /admin/rollback``), restore the
        trainer to that version's checkpoint so training goes on from what is served; returns
        ``{"rollback/to": V}`` then, else ``{}``."""
        served = ray.get(self.manager.served_version.remote())
        if served is None or self.served is None or served >= self.served:
            return {}
        try:
            restored = self.trainer.restore_version(served)
        except FileNotFoundError as exc:
            log.warning("serving was rolled back to version %d, but the trainer cannot follow (%s); it trains on "
                        "from its own weights", served, exc)
            self.served = served
            return {"rollback/to": served, "rollback/followed": 0}
        log.warning("serving was rolled back from version %s to %d: the trainer goes on from that version (%s)",
                    self.served, served, restored.get("restored"))
        self.served = served
        if self.gate is not None:
            self.gate.baseline = VersionMeasure()  # the served weights changed: measure them afresh
        return {"rollback/to": served, "rollback/followed": 1}

    def _check(self, step: int | None) -> GateReport | None:
        """Measure the candidate (the trainer's current weights) and judge it; None without a gate."""
        if not self.gating or self._data.empty():
            return None
        candidate = self.trainer.gate_measure(self._data)
        rewards = {f"heldout:{s.turn_id or s.source_id or i}": float(s.reward or 0.0)
                   for i, s in enumerate(self._data.heldout)}
        return self.gate.judge(candidate, rewards)

    def publish(self, step: int | None = None, save: Callable[[], object] | None = None) -> dict:
        """Gate, checkpoint (``save``), export and publish the current weights; returns the step's
        publish metrics. When serving was rolled back while the step trained (``POST
        /admin/rollback``), the trainer goes back to the served version (:meth:`_follow_rollback`)
        and the step's weights, grown from the newer version, are dropped (``publish/dropped``),
        so the next publish never overrides the rollback with them. Metrics:
        ``publish/ok`` (1 or 0), ``publish/failures`` (the run's total so far),
        ``gate/*`` (the gate's measures and ``gate/rejected``, the run's total) and, when known,
        ``weight_version`` (what serving runs after this publish).

        Raises:
            Whatever else the actors raise (an actor that died, a bug): those stop the run.
        """
        followed = self._follow_rollback()
        if followed.get("rollback/followed"):  # serving went back while this step trained on the newer weights
            log.warning("the step's weights grew from the version serving left; they are dropped and training goes "
                        "on from version %s", self.served)
            return {**self._metrics(0, {}), **followed, "publish/dropped": 1}
        version = self.trainer.weight_version() if self.gating else None
        if version is not None and version == self.served:  # a skipped step: nothing new to serve
            return {**self._metrics(0, {}), "publish/unchanged": 1}
        report = self._check(step)
        gate_metrics = dict(report.metrics) if report else {}
        if report is not None and not report.passed:
            enforce = self.gate.mode == GateMode.ENFORCE
            log.warning("weight version %s %s the promotion gate: %s", version,
                        "failed" if enforce else "would fail (--promotion-gate log: served anyway)", report.line())
            if enforce:
                return self._reject(version, step, report, gate_metrics)
        if report is not None:
            self.gate.promote(report.candidate)
        if save is not None:
            save()
        try:
            path, version = self.trainer.export_weights()
            served = ray.get(self.manager.publish_weights.remote(path, version, gate_metrics or None))
        except (PublishFailed, OSError) as exc:
            self.failures += 1
            what = f"weight version {version}" if version is not None else "the step's weights"
            log.warning("publish of %s failed; serving keeps version %s and training goes on (%d failed "
                        "publish(es) so far): %s", what, self.served, self.failures, one_line(root_cause_line(exc), 400))
            ok = 0
        else:
            self.served, ok = served, 1
            self.trainer.prune_published(served)  # serving swapped past the older ones
        if report is not None:
            self.gate.record(version, step or 0, report, served=bool(ok))
        return self._metrics(ok, gate_metrics)

    def _reject(self, version, step, report: GateReport, gate_metrics: dict) -> dict:
        self.rejected += 1
        self.gate.record(version, step or 0, report, served=False)
        if self.on_gate_failure == GateFailureAction.PAUSE:
            self.paused = (f"weight version {version} failed the promotion gate ({report.line()}); training paused, "
                           f"serving keeps version {self.served}")
            log.warning("%s", self.paused)
        else:
            restored = self.trainer.restore_last_good()
            log.warning("serving keeps version %s; the trainer goes on from the last good weights (%s)",
                        self.served, restored.get("restored") if isinstance(restored, dict) else restored)
        return self._metrics(0, gate_metrics)

    def _metrics(self, ok: int, gate_metrics: dict) -> dict:
        out = {"publish/ok": ok, "publish/failures": self.failures, **gate_metrics}
        if self.gating:
            out["gate/rejected"] = self.rejected
        if self.served is not None:
            out["weight_version"] = self.served
        return out
