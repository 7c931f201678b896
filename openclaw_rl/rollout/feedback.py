"""What a person said about a turn, applied when the turn becomes a training sample.

:class:`PersonOverrides` is called by the data source (:class:`openclaw_rl.rollout.data_source.StoreDataSource`)
for every claimed turn, with the judge's reward and judgement details, before the sample is built:

1. **Lessons** (:mod:`openclaw_rl.capture.lessons`): when the judge's accepted hint was filed as a
   lesson that a person since deleted, the hint is dropped (no teacher prompt: OPD gives the
   sample no gradient, Combine keeps only its RL branch); when they edited it, the teacher prompt
   is rendered again from the edited text.
2. **Explicit feedback** (:mod:`openclaw_rl.capture.feedback`): the rating replaces the judge's
   reward (Binary RL: the sample's reward is the rating), and a correction becomes the turn's
   hint (teacher prompt rendered from it). ``details`` keep the judge's reward
   (``judge_reward``) and record ``explicit_rating``.

A Combine judgement's ``branch`` is dispatched again from the result
(:func:`openclaw_rl.opd.advantages.dispatch_branch`). Teacher prompts are rendered with the
policy's chat template exactly as the OPD judge renders them
(:func:`openclaw_rl.opd.hint_prompt.teacher_prompt_ids`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from openclaw_rl.capture.feedback import FeedbackBook
from openclaw_rl.capture.lessons import LessonBook
from openclaw_rl.capture.records import TurnRecord
from openclaw_rl.opd.advantages import dispatch_branch
from openclaw_rl.opd.hint_prompt import teacher_prompt_ids

__all__ = ["PersonOverrides"]

log = logging.getLogger(__name__)


class PersonOverrides:
    """Apply lessons' edits and deletions and explicit ratings to a claimed turn (module docstring).

    Args:
        store: the trajectory store.
        tokenizer: a callable returning the policy's tokenizer (loaded on first need), or None:
            then a correction or an edited lesson cannot be rendered as a teacher prompt (logged;
            the rating still applies).
    """

    def __init__(self, store, tokenizer: Callable[[], Any] | None = None):
        self.feedback, self.lessons, self.tokenizer = FeedbackBook(store), LessonBook(store), tokenizer

    def _render(self, turn: TurnRecord, hint: str) -> list[int] | None:
        if self.tokenizer is None:
            # the turn's id only: a log line never quotes conversation text (forget scrubs logs by ids)
            log.warning("turn %s: no tokenizer to render its hint as a teacher prompt", turn.turn_uid)
            return None
        return teacher_prompt_ids(self.tokenizer(), turn.messages, turn.tools, hint, turn.prompt_ids)

    def apply(self, turn: TurnRecord, reward: float | None, details: dict | None) -> tuple[float | None, dict, bool]:
        """The reward and judgement details a turn is trained with.

        Args:
            turn: the claimed turn. reward: the judge's reward (None: none). details: the judge's
                details (not changed; a copy is returned).

        Returns:
            ``(reward, details, rated)``; ``rated``: an explicit rating was applied.
        """
        details = dict(details or {})
        changed = False
        if details.get("hint_accepted") and details.get("hint"):
            filed, text = self.lessons.hint_of_turn(turn.id)
            if filed and text is None:
                details.update(hint_accepted=False, hint_deleted=True)
                details.pop("teacher_prompt_ids", None)
                changed = True
            elif filed and text != details["hint"]:
                ids = self._render(turn, text)
                if ids is not None:
                    details.update(hint=text, hint_edited=True, teacher_prompt_ids=ids)
                    changed = True
        fb = self.feedback.for_turn(turn.id)
        if fb is not None:
            details.update(judge_reward=reward, explicit_rating=fb.rating)
            reward = float(fb.rating)
            if fb.correction:
                ids = self._render(turn, fb.correction)
                if ids is not None:
                    details.update(hint=fb.correction, hint_accepted=True, hint_source="feedback",
                                   teacher_prompt_ids=ids)
            changed = True
        if changed and "branch" in details:
            verdict = 0 if not reward else (1 if reward > 0 else -1)
            details["branch"] = dispatch_branch(bool(details.get("hint_accepted")), verdict)
        return reward, details, fb is not None
