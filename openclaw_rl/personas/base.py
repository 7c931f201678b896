"""The simulated-user interface: a persona that opens a conversation, rates a reply and answers it.

Rule-based by default: each persona has a few named checks of its stated preference; the rating is
``1 + 4 * passed / len(checks)`` on a 1-5 scale (an empty reply is 1), and the answer names the
first failed check as a person would, or thanks the assistant. Whatever the preference, a reply a
person could not use is rated 1 like an empty one and corrected for what is wrong with it
(:meth:`Persona.person_problem`: a repetition loop, garbled characters, one word again and again,
the same tool call again and again; the trainer's own checks, :mod:`slime.guards.behaviour`), so a
degenerate reply never meets a preference by its letter. Deterministic, so runs compare.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from dataclasses import dataclass

from slime.guards.behaviour import Problem, behaviour_problems

_NUMBER = re.compile(r"(?<![\w.])-?\d[\d,]*(?:\.\d+)?")


class RatingError(RuntimeError):
    """A simulated user could not produce a rating (e.g. an LLM user's answer held no 1-5 digit)."""


@dataclass(frozen=True)
class Rating:
    """A user's rating of one reply.

    score: 1 (very unsatisfied) .. 5 (fully satisfied). failed: names of the failed checks (rules)
    or ``()``. by: ``"rules"`` or ``"llm:<model>"``. reply_to_agent: what the user says next.
    """

    score: float
    failed: tuple[str, ...] = ()
    by: str = "rules"
    reply_to_agent: str = ""


def numbers_in(text: str) -> list[float]:
    """All numbers written in ``text`` (``1,234`` and ``-3.5`` included), as floats, in order."""
    out = []
    for m in _NUMBER.finditer(text):
        try:
            out.append(float(m.group().replace(",", "")))
        except ValueError:
            continue
    return out


def word_count(text: str) -> int:
    """Number of whitespace-separated words."""
    return len(text.split())


#: what a person says to a reply with a :meth:`Persona.person_problem` (each one a correction the
#: judges read as negative)
PERSON_CORRECTIONS = {
    Problem.REPETITION_LOOP.value: "You're repeating yourself. Please just answer the question.",
    Problem.RARE_CHAR_RUN.value: "That reply is garbled; please try again.",
    Problem.OVER_APPLICATION.value: "You don't need to repeat the same word all the time. Just answer the question.",
    Problem.TOOL_CALL_LOOP.value: "You keep making the same call again and again. Please stop and answer.",
    Problem.MIXED_SCRIPT.value: "That reply is garbled; please try again.",
}


class Persona(ABC):
    """A simulated user with a stated preference.

    Subclasses set ``name``, ``preference`` (the sentence the user states), ``description`` (who
    the user is, for an LLM playing it) and ``checks`` (rule names, each with the user's
    correction in ``corrections``), and implement :meth:`opening` and :meth:`failed_checks`.
    """

    name: str = ""
    preference: str = ""
    description: str = ""
    checks: tuple[str, ...] = ()
    corrections: dict[str, str] = {}
    thanks: str = "Thanks, that's exactly what I wanted."
    empty_reply: str = "You did not answer anything. Could you try again?"

    @abstractmethod
    def opening(self, item: dict) -> list[dict]:
        """The chat messages the user sends first for ``item`` (they state the preference)."""

    @abstractmethod
    def failed_checks(self, reply: str, item: dict) -> list[str]:
        """Names of the checks (from ``checks``) that ``reply`` fails, in ``checks`` order."""

    def person_problem(self, reply: str) -> str | None:
        """What any person objects to in ``reply`` whatever they asked for, or None: the first
        :class:`slime.guards.behaviour.Problem` value :func:`slime.guards.behaviour.behaviour_problems` finds
        (a repetition loop, a run of garbled characters, one word again and again, a repeated
        tool call)."""
        found = behaviour_problems(reply)
        return next((p.value for p in Problem if p in found), None)

    def rate(self, reply: str, item: dict) -> Rating:
        """Rate ``reply`` by the rules: ``1 + 4 * passed / len(checks)``; an empty reply, or one
        with a :meth:`person_problem`, is 1 with every check failed and that problem's correction."""
        if not reply.strip():
            return Rating(1.0, self.checks, "rules", self.empty_reply)
        if self.person_problem(reply) is not None:
            return Rating(1.0, self.checks, "rules", self.feedback(reply, item))
        failed = tuple(self.failed_checks(reply, item))
        score = 1.0 + 4.0 * (len(self.checks) - len(failed)) / len(self.checks)
        return Rating(score, failed, "rules", self.feedback(reply, item))

    def feedback(self, reply: str, item: dict) -> str:
        """The user's next message: the correction of a :meth:`person_problem`, else the correction
        for the first failed check, else thanks."""
        if not reply.strip():
            return self.empty_reply
        problem = self.person_problem(reply)
        if problem is not None:
            return PERSON_CORRECTIONS[problem]
        failed = self.failed_checks(reply, item)
        return self.corrections[failed[0]] if failed else self.thanks
