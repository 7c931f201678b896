"""On-policy distillation with hindsight hints (OPD).

A hint judge reads each main turn's next state and, when it shows how the turn should have gone,
writes a 1-3 sentence hint (else the turn is not trained); the same model with the hint appended
to the last user message is the teacher, scored on the student's exact response ids on the train
actor; ``A_t = log p_teacher(y_t) - log p_old(y_t)`` (:mod:`openclaw_rl.opd.advantages`); PPO
clipped loss, or with ``--distill-topk K`` the top-K reverse-KL loss
(:mod:`openclaw_rl.opd.topk_loss`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from openclaw_rl.methods.hint_flags import HintFlags, check_local_model
from slime.config.flags import flag
from slime.methods.base import Method
from slime.record.sample import Sample

__all__ = ["OPD", "OPDFlags", "TOPK_LOSS"]

#: the ``--distill-topk`` loss (typed convention)
TOPK_LOSS = "openclaw_rl.opd.topk_loss.topk_reverse_kl_loss"


@dataclass(frozen=True)
class OPDFlags(HintFlags):
    """OPD's flags: the hint judge and teacher (:class:`HintFlags`) plus ``--distill-topk``."""

    distill_topk: int | None = flag(None, "train with reverse KL over the teacher's top-K tokens plus a tail bin",
                                    ge=1, default_text="off (PPO on the OPD advantages)")


class OPD(Method):
    """``--advantage-estimator opd`` (module docstring)."""

    name = "opd"
    Flags = OPDFlags

    def validate(self) -> None:
        """A local ``--judge-model-path`` must exist."""
        check_local_model("--judge-model-path", self.flags.judge_model_path)

    def build_judge(self, service: Any) -> Any:
        """The OPD turn judge: the hint judge, with the policy's tokenizer for the teacher prompt."""
        from openclaw_rl.opd.judge import OPDTurnJudge
        from openclaw_rl.rollout.turn_judges import build_hint_judge
        from openclaw_rl.models import load_tokenizer

        return OPDTurnJudge(build_hint_judge(self.cfg, self.flags), load_tokenizer(self.cfg.model_path))

    def prepare_samples(self, backend: Any, samples: Sequence[Sample]) -> list[Sample]:
        """Teacher log-probs (and top-K) for the hinted samples (:func:`openclaw_rl.opd.teacher.score_teacher`)."""
        from openclaw_rl.opd.teacher import score_teacher

        return score_teacher(backend, samples, self.flags.opd_teacher, self.flags.distill_topk)

    def compute_advantages(self, samples: Sequence[Sample]) -> tuple[list[Sample], dict[str, float]]:
        """OPD advantages (:func:`openclaw_rl.opd.advantages.opd_advantages`)."""
        from openclaw_rl.opd.advantages import opd_advantages

        return opd_advantages(samples, self.flags.opd_adv_clip)

    def loss_function(self) -> str | None:
        """The top-K reverse-KL loss with ``--distill-topk``, else PPO."""
        return TOPK_LOSS if self.flags.distill_topk else None
