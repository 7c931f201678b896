"""Combine: Binary RL and OPD on the same turns (the recommended default).

Per main turn the PRM votes +1 / -1 / 0 and the hint judge accepts (with a hint) or rejects; the
dispatch table (:func:`openclaw_rl.opd.advantages.dispatch_branch`) sends the turn to OPD, RL,
both or neither, and each branch is normalised over its own tokens before the weighted mix
(``--combine-w-opd`` / ``--combine-w-rl``; :func:`openclaw_rl.opd.advantages.combine_advantages`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from openclaw_rl.methods.hint_flags import HintFlags, check_local_model
from slime.config.flags import flag
from slime.methods.base import Method
from slime.record.sample import Sample

__all__ = ["Combine", "CombineFlags"]


@dataclass(frozen=True)
class CombineFlags(HintFlags):
    """Combine's flags: the hint judge and teacher (:class:`HintFlags`) plus the branch weights."""

    combine_w_opd: float = flag(1.0, "weight of the OPD branch", env="OPENCLAW_COMBINE_W_OPD", ge=0)
    combine_w_rl: float = flag(1.0, "weight of the Binary RL branch", env="OPENCLAW_COMBINE_W_RL", ge=0)
    combine_rl_baseline: Literal["none", "batch-mean"] = flag(
        "none", "subtract the batch's mean RL reward from each RL-branch reward before normalising (a REINFORCE "
        "baseline: the few accepted replies are not outweighed by the many rejected), or train rewards as they "
        "are", env="OPENCLAW_COMBINE_RL_BASELINE")


class Combine(Method):
    """``--advantage-estimator combine`` (module docstring)."""

    name = "combine"
    Flags = CombineFlags

    def validate(self) -> None:
        """A local ``--judge-model-path`` must exist."""
        check_local_model("--judge-model-path", self.flags.judge_model_path)

    def build_judge(self, service: Any) -> Any:
        """The Combine turn judge: the PRM and the hint judge (sharing weights when they are the
        same local model) on every turn."""
        from openclaw_rl.opd.judge import CombineTurnJudge
        from openclaw_rl.rollout.turn_judges import build_hint_judge, build_prm
        from openclaw_rl.models import load_tokenizer

        prm = build_prm(self.cfg)
        return CombineTurnJudge(prm, build_hint_judge(self.cfg, self.flags, prm), load_tokenizer(self.cfg.model_path))

    def prepare_samples(self, backend: Any, samples: Sequence[Sample]) -> list[Sample]:
        """Teacher log-probs for the samples with an accepted hint."""
        from openclaw_rl.opd.teacher import score_teacher

        return score_teacher(backend, samples, self.flags.opd_teacher, None)

    def compute_advantages(self, samples: Sequence[Sample]) -> tuple[list[Sample], dict[str, float]]:
        """Combine advantages (:func:`openclaw_rl.opd.advantages.combine_advantages`)."""
        from openclaw_rl.opd.advantages import combine_advantages

        return combine_advantages(samples, self.flags.combine_w_opd, self.flags.combine_w_rl, self.flags.opd_adv_clip,
                                  rl_baseline=self.flags.combine_rl_baseline)
