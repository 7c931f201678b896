"""Stated preferences for the main job's simulated user, each with the rule that checks a reply.

The main job's user appends one preference to every question and reacts to every reply the way a
person would: a correction (in one of several styles) when the reply misses the preference, thanks
or a move to the next topic when it meets it. Like a person, it also corrects a reply that meets
the letter of the preference but not its point (:meth:`Preference.quality_problem`): the
preference over-applied ("Alex, Alex, Alex!"), a repetition loop, garbled characters, or a reply
with nothing in it but the requested words. The rule and those checks together are the ground
truth the run measures the model and the judge against; the judge never sees them (it reads only
the next state). The behaviour checks are the trainer's own (:mod:`slime.guards.behaviour`), so the
user, the held-out measurement and the promotion gate call the same reply degenerate.

Which preference the main job uses was chosen by measuring (``python -m
openclaw_rl.main_job.baselines --model-path builtin:smollm2-135m``): a task has room to learn only where
the untrained model rarely meets it. The table of measured baselines is in
``docs/learning.md``; :data:`DEFAULT_PREFERENCE` names the chosen one.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Callable

from slime.guards.behaviour import Problem, behaviour_problems, on_topic, words

__all__ = ["Preference", "PREFERENCES", "DEFAULT_PREFERENCE", "get_preference", "addresses_by_name"]

_LIST_LINE = re.compile(r"^\s*(?:[-*+•]\s+|\d+[.)]\s+)")
_HEADING = re.compile(r"^\s*#{1,6}\s")
_SENTENCE_END = re.compile(r"[.!?](?:\s|$)")
_FRENCH = frozenset("le la les est et de une un des vous je pour en du que qui dans sur avec pas".split())


_GREETING = r"(?:hi|hello|hey|dear|thanks|thank you|sure|of course|okay|ok|great|yes|no|well|oh|welcome|good (?:morning|afternoon|evening))"


def addresses_by_name(reply: str, name: str) -> bool:
    """True when ``reply`` speaks to the user by ``name`` (a vocative), not merely contains it.

    A person who asks "address me by name" wants to be spoken to: "Alex, here is how...",
    "Sure, Alex!", "Hi Alex", "... I hope that helps, Alex." Three forms count: the name opening a
    sentence or line and followed by ``,`` or ``!``; the name after a greeting or acknowledgement
    word (hi, hello, dear, thanks, sure, ...); the name after a comma and followed by punctuation or
    the end. The name made the subject of the answer ("Alex bought 3 dozen donuts", the word
    problem's character renamed), a possessive ("Alex's"), a label ("Alex: 16 + 25") or the
    assistant calling itself by it ("I'm Alex") does not count: a run on the embedded model learned
    exactly that (14 of its 21 accepted held-out replies, docs/learning.md), and a person reads it
    as a wrong answer, not as being addressed.

    Args:
        reply: the assistant's reply text.
        name: the user's name, matched case-sensitively as a whole word.

    Returns:
        Whether one of the three forms occurs.
    """
    n = re.escape(name)
    patterns = (rf"(?:^|[.!?]\s+|\n)\s*{n}\s*[,!]",
                rf"(?i:\b{_GREETING}\b),?\s+{n}\b(?!['’]s)",
                rf",\s*{n}\s*(?:[,!.?:;)\-–—]|$)")
    return any(re.search(pattern, reply) for pattern in patterns)


def _no_markdown(reply: str) -> bool:
    lines = reply.splitlines()
    return not (any(_LIST_LINE.match(ln) or _HEADING.match(ln) for ln in lines) or "**" in reply or "__" in reply)


@dataclass(frozen=True)
class Preference:
    """One stated preference.

    Attributes:
        name: short id (``--preference``).
        instruction: the sentence the user appends to each question.
        check: ``check(reply) -> bool``, True when the reply meets the preference.
        corrections: what the user says when a reply misses it (several styles: explicit,
            indirect, repeating the request); one is picked per reply, deterministically.
        praises: what the user says when a reply meets it (thanks, or moving on).
        hint_terms: words a hindsight hint that names this preference contains (any one).
        over_terms: words the preference asks for that a person notices when they are
            over-applied (a name said three times in a short reply).
        paraphrase: the same wish in other words (never seen in training): whether what was
            learned generalises (:mod:`openclaw_rl.main_job.generalisation`).
    """

    name: str
    instruction: str
    check: Callable[[str], bool]
    corrections: tuple[str, ...]
    praises: tuple[str, ...]
    hint_terms: tuple[str, ...] = ()
    over_terms: tuple[str, ...] = ()
    paraphrase: str = ""

    def quality_problem(self, reply: str, question: str | None = None, *, cut: bool = False) -> str | None:
        """What a person would object to in ``reply`` beyond the stated rule, or None:
        a :class:`slime.guards.behaviour.Problem` value (``over_application``, ``repetition_loop``,
        ``rare_char_run``, ``tool_call_loop``, ``mixed_script``); ``"no_answer"``: the reply ignores the question,
        either with fewer than two words besides the requested ones or, when ``question`` (its
        text) is given, with no content word in common with it (:func:`slime.guards.behaviour.on_topic`:
        "Alex, how nice to meet you!" to an arithmetic question); or ``"cut_off"`` when ``cut``
        (the reply ended on the token budget, finish reason ``length``): the person sees a reply
        that stops mid-sentence, whatever it says. A length rule is otherwise met by exactly such
        replies (docs/learning.md, run m1: 14 of 21 accepted ``max-20-words`` replies were cut)."""
        found = behaviour_problems(reply, self.over_terms)
        if found:  # over-application first: it is what a person names ("stop saying my name")
            return (Problem.OVER_APPLICATION if Problem.OVER_APPLICATION in found else next(iter(found))).value
        if cut:
            return "cut_off"
        wanted = {t.lower() for t in self.over_terms}
        if len([w for w in words(reply) if w not in wanted and w.removesuffix("'s") not in wanted]) < 2:
            return "no_answer"
        if question is not None and not on_topic(reply, question, self.over_terms):
            return "no_answer"
        return None

    def satisfied(self, reply: str, question: str | None = None, *, cut: bool = False) -> bool:
        """True when ``reply`` meets the preference and a person would accept it: not empty, the
        rule holds and :meth:`quality_problem` (given ``question``, the text it answers, and
        ``cut``, whether the reply ended on the token budget) finds nothing."""
        return (bool(reply.strip()) and bool(self.check(reply))
                and self.quality_problem(reply, question, cut=cut) is None)

    def feedback(self, reply: str, key: str = "", question: str | None = None, *, cut: bool = False) -> str:
        """The user's next message after ``reply`` (to ``question``, its text, when given; ``cut``:
        it ended on the token budget): a correction or a praise, in a style picked by hashing
        ``key`` (e.g. the session id and turn index) and the reply. A reply that meets the rule but
        has a :meth:`quality_problem` gets that problem's correction ("You didn't answer my
        question.", "Your answer got cut off.")."""
        digest = hashlib.sha256(f"{key}\x00{reply}".encode()).digest()
        problem = self.quality_problem(reply, question, cut=cut) if reply.strip() else None
        if problem is not None and self.check(reply):
            options = _quality_corrections(problem, self.over_terms)
        else:
            options = self.praises if self.satisfied(reply, question, cut=cut) else self.corrections
        return options[digest[0] % len(options)]


_THANKS = ("Thanks, that's exactly what I wanted.", "Perfect, thank you!", "Great, that works for me.",
           "Nice, that's just right. Thanks!")


def _corrections(what: str, redo: str) -> tuple[str, ...]:
    return (f"No, that's not what I asked. {what}",
            f"Hmm, you forgot what I asked for. {what} Please try again.",
            f"That's not right: {redo}",
            f"Please redo it. {what}")


def _quality_corrections(problem: str, terms: tuple[str, ...]) -> tuple[str, ...]:
    """What a person says to a reply that meets the rule but has ``problem``."""
    if problem == Problem.OVER_APPLICATION.value:
        said = f"'{terms[0]}'" if terms else "the same word"
        name = terms[0] == "Alex" if terms else False
        return (("You don't need to say my name every sentence. Just answer the question.",
                 "Please stop repeating my name; once is enough. What about my question?")
                if name else (f"You don't need to repeat {said} all the time. Just answer the question.",
                              f"Why do you keep saying {said}? Please answer properly."))
    if problem == "cut_off":
        return ("Your answer got cut off; please try again.",
                "That stops mid-sentence. Please redo it, complete this time.")
    if problem == "no_answer":
        return ("You didn't answer my question.", "That doesn't answer anything. Please answer the question.")
    if problem == Problem.REPETITION_LOOP.value:
        return ("You're repeating yourself. Please just answer the question.",
                "That reply goes in circles; please try again and answer once, clearly.")
    return ("That reply is garbled; please try again.",
            "I can't read that, it's garbled. Please answer again properly.")


PREFERENCES: dict[str, Preference] = {p.name: p for p in (
    Preference("start-sure", "Please start your answer with 'Sure!'.",
               lambda r: r.lstrip().startswith("Sure!"),
               _corrections("Start your answer with 'Sure!'.", "your answer has to start with 'Sure!'."),
               _THANKS, ("Sure",), ("Sure",), paraphrase="Begin your reply with the word 'Sure!', please."),
    Preference("max-20-words", "Please answer in at most 20 words.",
               lambda r: len(r.split()) <= 20,
               _corrections("Answer in at most 20 words.", "that was far more than 20 words."),
               _THANKS, ("20 words", "twenty words", "short", "brief"),
               paraphrase="Keep it short: twenty words or fewer."),
    Preference("end-question", "Please end your answer with a question for me.",
               lambda r: r.rstrip().endswith("?"),
               _corrections("End your answer with a question for me.", "you did not end with a question for me."),
               _THANKS, ("question",), paraphrase="Finish by asking me something back."),
    Preference("one-sentence", "Please answer in one sentence.",
               lambda r: len(_SENTENCE_END.findall(r.strip())) <= 1,
               _corrections("Answer in one sentence only.", "that was more than one sentence."),
               _THANKS, ("one sentence", "single sentence"), paraphrase="A single sentence is all I want."),
    Preference("lowercase", "Please write your answer in lowercase letters only.",
               lambda r: r == r.lower(),
               _corrections("Write only lowercase letters.", "you used capital letters."),
               _THANKS, ("lowercase", "lower case", "capital"), paraphrase="No capital letters anywhere, please."),
    Preference("name-alex", "My name is Alex; please address me by name in your answer.",
               lambda r: addresses_by_name(r, "Alex"),
               _corrections("Address me by my name, Alex.", "you did not call me Alex."),
               _THANKS, ("Alex",), ("Alex",), paraphrase="I'm Alex, by the way. Use my name when you reply."),
    Preference("french", "Please answer in French.",
               lambda r: len({w.lower().strip(".,!?;:'\"") for w in r.split()} & _FRENCH) >= 3,
               _corrections("Answer in French, please.", "I asked for an answer in French."),
               _THANKS, ("French",), paraphrase="Réponds en français, s'il te plaît."),
    Preference("no-markdown", "Please answer in plain sentences, without markdown lists, headings or bold text.",
               _no_markdown,
               _corrections("Write plain sentences, without lists or markdown.",
                            "I asked for plain prose, no lists or bold text."),
               _THANKS, ("markdown", "list", "plain", "bold"),
               paraphrase="No bullet points, headings or bold, just ordinary prose."),
)}

#: the main job's preference (chosen by measured baseline; see the module docstring). Once the user
#: rejects replies cut by the 32-token budget, ``name-alex`` has no room left at that budget (the
#: base model's held-out rate 0.000, 37 of 40 replies cut), ``max-20-words`` 0.225 (docs/learning.md).
DEFAULT_PREFERENCE = "max-20-words"


def get_preference(name: str) -> Preference:
    """The preference called ``name``.

    Raises:
        KeyError: unknown name (the message lists the known ones).
    """
    try:
        return PREFERENCES[name]
    except KeyError:
        raise KeyError(f"unknown preference {name!r}; choose one of {', '.join(PREFERENCES)}") from None
