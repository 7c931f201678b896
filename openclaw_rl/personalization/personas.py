"""The personalization benchmark's users: who asks what, with which rule, behind one registry.

A :class:`BenchPersona` is the main job's simulated user (:class:`openclaw_rl.main_job.user.UserDriver`)
with a :class:`openclaw_rl.preferences.Preference` and the training questions it asks. The rule is
the preference's ``check``; a reply passes when :meth:`Preference.satisfied` holds: the rule, and
nothing a person rejects whatever they asked for (a degenerate reply, :mod:`slime.guards.behaviour`; a reply
that leaves the question), exactly as the main job's user and its held-out measure decide.

Registered personas (:data:`PERSONAS`; :func:`register_persona` adds one):

* the reference paper's three (OpenClaw-RL, second version, personal-agent table):

  - ``student`` asks grade-school homework (GSM8K) and wants answers that do not look machine-made:
    no bold text, no numbered list, no boxed answer (``\\boxed{}``);
  - ``ta`` asks open questions (MT-bench) and wants detailed answers: more than ``N`` tokens of the
    served model's tokenizer, where ``N`` is the paper's 100, or half the run's reply budget when
    that is smaller (:func:`ta_min_tokens`: a 32-token budget gives 16), so that a finished reply
    can pass at all (a reply cut by the budget is rejected as cut off, as by every user here);
    the report says which ``N`` a run used;
  - ``teacher`` asks homework questions (GSM8K) and wants warmth: one of :data:`WARM_PHRASES`
    ("well done!", "great job", ...);

* each of the project's own preferences (:data:`openclaw_rl.preferences.PREFERENCES`) under its own
  name (``name-alex``, ``no-markdown``, ...), asking every training question, as the main job does.

These are not the evaluation's users (:mod:`openclaw_rl.personas`, whose ``student`` and ``teacher``
rate GSM8K work 1-5 on several checks): a benchmark persona has one rule, passed or not, and talks
through the main job's user so that what trains is what the main job trains on.

A persona is built per run from a :class:`ReplyBudget` (the reply budget and the served model's
token counter): the TA's rule depends on both.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass

from openclaw_rl.main_job.questions import Question
from openclaw_rl.preferences import PREFERENCES, Preference

__all__ = ["BenchPersona", "PAPER_PERSONAS", "PERSONAS", "ReplyBudget", "WARM_PHRASES", "get_persona",
           "register_persona", "ta_min_tokens"]

_BOLD = re.compile(r"\*\*[^*\n]+\*\*|__[^_\n]+__")
_NUMBERED = re.compile(r"^\s*\d+[.)]\s+", re.MULTILINE)
_BOXED = re.compile(r"\\boxed\b|\\fbox\b")
#: the Teacher's warm, encouraging phrases (one is enough; case-insensitive)
WARM_PHRASES = ("well done", "great job", "good job", "nice work", "great work", "good work", "keep it up",
                "keep up the good work", "you've got this", "you got this", "proud of you", "great effort",
                "excellent work", "you're doing great", "keep going", "nicely done", "way to go")
#: the paper's TA threshold in tokens
PAPER_TA_TOKENS = 100
_THANKS = ("Thanks, that's exactly what I wanted.", "Perfect, thank you!", "Great, that works for me.")


@dataclass(frozen=True)
class ReplyBudget:
    """What a run's rules may depend on: ``max_tokens`` (the reply budget) and ``count_tokens``
    (text -> number of tokens of the served model's tokenizer)."""

    max_tokens: int
    count_tokens: Callable[[str], int]


@dataclass(frozen=True)
class BenchPersona:
    """One simulated user of the benchmark.

    Attributes:
        name: the registry name (``--persona``).
        preference: what the user states and how it reacts (instruction, rule, corrections, praises).
        source: which training questions it asks (``"gsm8k"``, ``"mt-bench"``) or None for all.
        rule: the rule in words, for the report (the TA's says its ``N``).
    """

    name: str
    preference: Preference
    source: str | None
    rule: str

    def questions(self, pool: list[Question]) -> list[Question]:
        """The questions of ``pool`` this persona asks (in the pool's order).

        Raises:
            ValueError: none of ``pool`` is of this persona's source.
        """
        mine = [q for q in pool if self.source is None or q.source == self.source]
        if not mine:
            raise ValueError(f"persona {self.name!r}: no {self.source} question among the training questions")
        return mine

    def passes(self, reply: str, question: str | None = None, *, cut: bool = False) -> bool:
        """True when ``reply`` (to ``question``, its text; ``cut``: it ended on the token budget)
        meets the rule and a person accepts it (:meth:`Preference.satisfied`)."""
        return self.preference.satisfied(reply, question, cut=cut)

    def miss_reason(self, reply: str, question: str | None = None, *, cut: bool = False) -> str | None:
        """Why ``reply`` (to ``question``; ``cut``: it ended on the token budget) does not pass, or
        None when it does, in the order of the user's reaction (:meth:`Preference.feedback`):
        ``"empty"``; ``"rule"`` when the persona's rule fails (the user restates it, whatever else
        is wrong); else the :meth:`Preference.quality_problem` a person objects to (``"cut_off"``,
        ``"no_answer"``, ``"repetition_loop"``, ...)."""
        if not reply.strip():
            return "empty"
        if not self.preference.check(reply):
            return "rule"
        return self.preference.quality_problem(reply, question, cut=cut)


def ta_min_tokens(max_tokens: int) -> int:
    """The TA's threshold ``N`` for a reply budget of ``max_tokens`` tokens: the paper's 100, or
    ``ceil(max_tokens / 2)`` when that is smaller. A passing reply has more than ``N`` tokens and
    ends before the budget (a reply cut by the budget is rejected as cut off,
    :meth:`Preference.quality_problem`), so the window ``N+1 .. max_tokens-1`` must be wide."""
    return min(PAPER_TA_TOKENS, math.ceil(max_tokens / 2))


def _student_ok(reply: str) -> bool:
    return not (_BOLD.search(reply) or _NUMBERED.search(reply) or _BOXED.search(reply))


def _warm(reply: str) -> bool:
    low = reply.lower().replace("\u2019", "'")
    return any(re.search(r"\b" + re.escape(p) + r"\b", low) for p in WARM_PHRASES)


def student(budget: ReplyBudget) -> BenchPersona:
    """The paper's Student (module docstring)."""
    pref = Preference(
        "student", "Please answer like a classmate would: no bold text, no numbered lists and no boxed answer.",
        _student_ok,
        ("No, that looks machine-made. No bold, no numbered lists, no boxed answer, please.",
         "Please redo it without bold text, numbered steps or a boxed answer.",
         "That's not what I asked: write it plainly, no bold, no numbered list, no box."),
        _THANKS, ("bold", "numbered", "boxed", "plainly"))
    return BenchPersona("student", pref, "gsm8k", "no bold text, no numbered list, no boxed answer")


def ta(budget: ReplyBudget) -> BenchPersona:
    """The paper's TA, with ``N`` from :func:`ta_min_tokens` counted by the served tokenizer."""
    n = ta_min_tokens(budget.max_tokens)
    count = budget.count_tokens
    pref = Preference(
        "ta", "Please give me a detailed, thorough answer, not a short one.",
        lambda r: count(r) > n,
        ("That's too short. Please give me a detailed, thorough answer.",
         "Please redo it with more detail; I want a thorough answer.",
         "No, I asked for a detailed answer, not a short one."),
        _THANKS, ("detailed", "detail", "thorough", "longer"))
    rule = f"more than {n} tokens" + ("" if n == PAPER_TA_TOKENS else
                                      f" (the paper's {PAPER_TA_TOKENS}, scaled to half the "
                                      f"{budget.max_tokens}-token reply budget)")
    return BenchPersona("ta", pref, "mt-bench", rule)


def teacher(budget: ReplyBudget) -> BenchPersona:
    """The paper's Teacher (module docstring)."""
    pref = Preference(
        "teacher", "Please be warm and encouraging in your answer, for example say 'well done!'.",
        _warm,
        ("Please be warmer and more encouraging, say something like 'well done!'.",
         "That feels cold. Please add some encouragement, like 'great job!'.",
         "No, I asked you to be encouraging, for example 'well done!'."),
        _THANKS, ("encouraging", "warm", "well done", "great job"))
    return BenchPersona("teacher", pref, "gsm8k", "a warm, encouraging phrase (" + ", ".join(WARM_PHRASES[:3])
                        + ", ...)")


def _project(name: str) -> Callable[[ReplyBudget], BenchPersona]:
    def build(budget: ReplyBudget) -> BenchPersona:
        """The project's preference ``name`` as a persona asking every training question."""
        pref = PREFERENCES[name]
        return BenchPersona(name, pref, None, pref.instruction)

    return build


#: the reference paper's personas, in its order (the Done-when table trains them jointly)
PAPER_PERSONAS = ("student", "ta", "teacher")
#: every persona by name: a builder that takes the run's :class:`ReplyBudget`
PERSONAS: dict[str, Callable[[ReplyBudget], BenchPersona]] = {
    "student": student, "ta": ta, "teacher": teacher, **{name: _project(name) for name in PREFERENCES}}


def register_persona(name: str, build: Callable[[ReplyBudget], BenchPersona]) -> None:
    """Add a persona under ``name``: ``build(budget)`` returns its :class:`BenchPersona`.

    Raises:
        ValueError: ``name`` is taken.
    """
    if name in PERSONAS:
        raise ValueError(f"persona {name!r} is already registered")
    PERSONAS[name] = build


def get_persona(name: str, budget: ReplyBudget) -> BenchPersona:
    """The persona called ``name`` for a run with ``budget``.

    Raises:
        KeyError: unknown name (the message lists the known ones).
    """
    try:
        build = PERSONAS[name]
    except KeyError:
        raise KeyError(f"unknown persona {name!r}; choose from {', '.join(PERSONAS)}") from None
    return build(budget)
