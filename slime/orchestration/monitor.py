"""Run monitoring: ``training.log``, a metrics JSONL, TensorBoard events, W&B and a PNG plot.

Every step's metrics dict (flat ``name -> number``) goes to all sinks. W&B is used only when
``WANDB_PROJECT`` (or another ``WANDB_*`` variable) is set and ``wandb`` is installed.
"""

from __future__ import annotations

import json
import logging
import math
import os
import time
from pathlib import Path

log = logging.getLogger("slime.train")


class MetricsLogger:
    """Writes step metrics to ``<log_dir>/training.log``, ``<log_dir>/<run>/metrics.jsonl``,
    TensorBoard events under ``<log_dir>/<run>/tb`` and, at :meth:`close`, a plot
    ``<log_dir>/<run>/reward_loss.png``.

    Args:
        log_dir: the ``--log-dir`` folder.
        run_name: sub-folder of this run (default a time stamp).
    """

    def __init__(self, log_dir: str | os.PathLike, run_name: str | None = None):
        self.log_dir = Path(log_dir)
        self.run_dir = self.log_dir / (run_name or time.strftime("run-%Y%m%d-%H%M%S"))
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self._jsonl = open(self.run_dir / "metrics.jsonl", "a", buffering=1)
        handler = logging.FileHandler(self.log_dir / "training.log")
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
        self._handler = handler
        log.addHandler(handler)
        log.setLevel(logging.INFO)
        self.history: list[dict] = []
        try:  # TensorBoard's own writer needs numpy only: the driver logs without loading torch
            from tensorboard.summary import Writer
            self._tb = Writer(str(self.run_dir / "tb"))
        except Exception as exc:  # tensorboard missing: keep the other sinks
            log.warning("TensorBoard disabled: %s", exc)
            self._tb = None
        self._wandb = None
        if any(k.startswith("WANDB_") for k in os.environ):
            try:
                import wandb
                self._wandb = wandb.init(project=os.environ.get("WANDB_PROJECT", "openclaw-rl"),
                                         dir=str(self.run_dir))
            except Exception as exc:
                log.warning("W&B disabled: %s", exc)

    def log(self, step: int, metrics: dict) -> None:
        """Record one step's metrics (non-numeric values go to the JSONL only)."""
        row = {"step": step, "time": time.time(), **metrics}
        self.history.append(row)
        self._jsonl.write(json.dumps(row, default=str) + "\n")
        numeric = {k: float(v) for k, v in metrics.items()
                   if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(float(v))}
        if self._tb is not None:
            for k, v in numeric.items():
                self._tb.add_scalar(k, v, step)
            self._tb.flush()
        if self._wandb is not None:
            self._wandb.log(numeric, step=step)
        keys = ("reward/mean", "loss", "train/pg_clipfrac", "train/approx_kl", "rollout/staleness_mean",
                "weight_version", "backlog/unjudged")
        log.info("step %d %s", step, " ".join(f"{k}={numeric[k]:.4g}" for k in keys if k in numeric))

    def plot(self) -> Path | None:
        """Write ``reward_loss.png`` (reward mean and loss per step; when the collapse guard
        reported, a second row: grad norm, train/rollout log-prob gap and update KL per step, each
        step's guard action shaded: skipped orange, rolled back red, paused grey, clipped gold); returns its path."""
        if not self.history:
            return None
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        steps = [r["step"] for r in self.history]
        guarded = any("guard/action" in r for r in self.history)
        fig, axes = plt.subplots(2 if guarded else 1, 2, figsize=(10, 7 if guarded else 3.5), squeeze=False)
        for ax, key in zip(axes[0], ("reward/mean", "loss")):
            ax.plot(steps, [r.get(key, float("nan")) for r in self.history], marker="o", ms=3)
            ax.set_title(key)
        if guarded:
            self._plot_guard(axes[1], steps)
        for ax in axes.flat:
            ax.set_xlabel("train step")
            ax.grid(alpha=0.3)
        fig.tight_layout()
        path = self.run_dir / "reward_loss.png"
        fig.savefig(path, dpi=100)
        plt.close(fig)
        return path

    def _plot_guard(self, axes, steps: list[int]) -> None:
        """The collapse guard's row of :meth:`plot` (:mod:`slime.guards.collapse`)."""
        series = {"grad norm (before clipping)": ("train/grad_norm",),
                  "train/rollout log-prob gap and update KL (nats/token)": ("train/train_rollout_logprob_abs_diff",
                                                                             "guard/update_kl")}
        colors = {1: ("tab:orange", "skipped"), 2: ("tab:red", "rolled back"), 3: ("grey", "paused"),
                  4: ("gold", "clipped")}
        for ax, (title, keys) in zip(axes, series.items()):
            for key in keys:
                values = [r.get(key, float("nan")) for r in self.history]
                ax.plot(steps, [v if isinstance(v, (int, float)) and v > 0 else float("nan") for v in values],
                        marker="o", ms=3, label=key)
            ax.set_yscale("log")
            shown = set()
            for step, row in zip(steps, self.history):
                action = int(row.get("guard/action", 0) or 0)
                if action in colors:
                    color, label = colors[action]
                    ax.axvspan(step - 0.4, step + 0.4, color=color, alpha=0.3,
                               label=None if label in shown else label)
                    shown.add(label)
            ax.set_title(title, fontsize=9)
            ax.legend(fontsize=7)

    def close(self) -> Path | None:
        """Flush and close every sink; returns the plot path."""
        path = self.plot()
        self._jsonl.close()
        if self._tb is not None:
            self._tb.close()
        if self._wandb is not None:
            self._wandb.finish()
        log.removeHandler(self._handler)
        self._handler.close()
        return path
