"""The 12 original hand-written judge cases (tag ``original`` of the extended set) and the first
measurement made on them.

The cases live in the shipped case file (:data:`~openclaw_rl.judges.cases.DEFAULT_CASES_PATH`),
with 141 more; ``openclaw-rl judge-eval --tags original`` measures every mode on these twelve,
``openclaw-rl judge-eval`` on all of them (``docs/judges.md`` has the tables).
``python -m openclaw_rl.judges.eval_cases [judge-eval options]`` is ``judge-eval --tags original``.
"""

from __future__ import annotations

import sys

from openclaw_rl.judges.cases import JudgeCase, load_cases

__all__ = ["JudgeCase", "CASES", "evaluate", "MEASURED_SMOLLM2"]

#: the 12 original cases: 5 x (+1), 5 x (-1), 2 x 0 (chance ~33 %; "always +1" 41.7 %)
CASES: tuple[JudgeCase, ...] = tuple(load_cases(tags={"original"}))

#: The first measurement on these 12 cases (builtin:smollm2-135m, CPU, n=5 votes, threshold 0.5,
#: seed 0), before the next-state modes existed: ``generate`` (temperature 0.7, 48 new tokens)
#: wrote a parseable verdict in 5 of 60 answers. Contextual calibration (dividing by the verdict
#: distribution of an "N/A" prompt) and a five-example few-shot judge prompt gave 33 % and 41.7 %.
MEASURED_SMOLLM2: dict[str, dict] = {
    "logprob:argmax": {"accuracy": 5 / 12, "invalid_rate": 0.0},
    "logprob:sample": {"accuracy": 3 / 12, "invalid_rate": 0.0},
    "generate": {"accuracy": 2 / 12, "invalid_rate": 55 / 60},
}


async def evaluate(backend, cases=CASES, n: int = 5, threshold: float = 0.5) -> dict:
    """Judge every case with ``backend``: :func:`openclaw_rl.judges.judge_eval.evaluate_prm`
    (``accuracy``, ``balanced_accuracy``, ``invalid_rate``, ``confusion``, ``per_case``, ``seconds``)."""
    from openclaw_rl.judges.judge_eval import evaluate_prm

    return await evaluate_prm(backend, cases, n, threshold)


def main(argv=None) -> int:
    """``openclaw-rl judge-eval --tags original`` with ``argv`` appended."""
    from openclaw_rl.judges.judge_eval import main as judge_eval_main

    return judge_eval_main(["--tags", "original", *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    sys.exit(main())
