"""The lexical next-state PRM: a keyword verdict from the next state and its role alone.

Like the keyword reward model of the seed's plugin example, :func:`lexical_verdict` never reads
the assistant's reply, the request or any rule of a simulated user: only what happened next.

* **user** next state (any role other than ``"tool"`` is read the same way):

  - ``-1`` when it carries a correction, redo or complaint cue: "wrong", "incorrect", "not what I
    asked/meant", "you forgot", "try again", "redo", "I said ...", "you didn't ...", "doesn't
    work", "please don't", "too long", "shorter", an imperative that refers back to the reply
    ("make it ...", "write it ...", "keep it ..."), a message that starts with "No," / "Nope" /
    "Again" / "Still", ...
  - ``+1`` when it has no such cue and carries thanks, agreement or a move to a new request:
    "thanks", "perfect", "great", "exactly", "that worked", "makes sense", "got it", "now ...",
    "next question", "also ...", "what about ...", ...
  - ``0`` otherwise ("ok", "I see.", "Why?", a bare new question: without a cue a new question
    and a repeated one look the same).

  Correction cues win over praise ("Thanks, but that's wrong." is ``-1``); set phrases whose
  negative word is not a complaint are removed first ("no problem", "no worries", "not bad",
  "no doubt", "not at all").

* **tool** next state: ``-1`` on an error cue ("error", "Traceback", "exception", "not found",
  "permission denied", "invalid", "unknown tool", "failed", a non-zero exit code, an HTTP 4xx/5xx
  status, "timed out", ...), after removing "0 errors" / "no errors" / "0 failed"; ``0`` for an
  empty or pending result ("(no output)", ``[]``, "no results", "still running"); ``+1`` for any
  other output (a successful result).

:func:`lexical_cues` returns the cues that decided, for inspection and tests. The rules are
English-only keyword rules; they are measured with ``openclaw-rl judge-eval --modes lexical`` (see
``docs/judges.md``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from openclaw_rl.judges.backends import BackendScore, JudgeBackend, _check_n
from openclaw_rl.judges.prompts import VERDICTS, state_text

__all__ = ["LexicalVerdict", "lexical_verdict", "lexical_cues", "normalise", "LexicalBackend", "HybridBackend"]

_QUOTES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u201c": '"', "\u201d": '"', "\u00a0": " "})


def normalise(text: str | None) -> str:
    """Lower-case, straight quotes, single spaces; ``None`` becomes ``""``."""
    return " ".join((text or "").translate(_QUOTES).lower().split())


def _rx(*patterns: str) -> re.Pattern:
    return re.compile("|".join(f"(?:{p})" for p in patterns))


# ---------------------------------------------------------------------------------- user rules
#: phrases with a negative word that are not complaints; removed before the cues are searched
_USER_NEUTRALISE = _rx(r"\bno (problem|problemo|worries|worry|doubt)\b", r"\bnot (bad|too bad)\b",
                       r"\bnot at all\b", r"\bno need\b", r"\bcan't (thank|complain)\b",
                       r"\bcouldn't (be happier|have said it better|ask for more)\b",
                       r"\bnothing wrong\b", r"\bno complaints?\b", r"\bno (more )?questions\b",
                       r"\b(not|isn't|is not|wasn't) (a|an|any) (problem|issue|big deal)\b")

_USER_NEGATIVE = _rx(
    # explicit corrections
    r"\bwrong\b", r"\bincorrect\b", r"\binaccurate\b", r"\bmistakes?\b", r"\bmistaken\b",
    r"\bnot (quite )?(right|correct|true|it|accurate|helpful|useful|what i)\b",
    r"\b(isn't|is not|wasn't|was not|that's not|thats not|not) what i (asked|meant|wanted|needed|said|want|need|ordered)",
    r"\bi (said|asked for|asked you|asked about|told you|meant|already (said|asked|told))\b",
    r"\bmisunderst(ood|and)\b", r"\bmisread\b", r"\byou (also )?(forgot|missed|ignored)\b",
    r"\byou (didn't|did not|don't|do not|haven't|have not|never|still)\b", r"\banswer (my|the) question\b",
    r"\bnot (fixed|solved|working|helpful|useful|clear|enough)\b",
    r"\b(doesn't|does not|didn't|did not|won't|will not|can't|cannot|isn't|is not) (work|compile|run|help|answer|make sense|load|build)",
    r"\bnot working\b", r"\bbroken\b", r"\bare you sure\b", r"\b(close|almost|nearly),? but\b",
    r"\bbackwards\b", r"\bmixed up\b", r"\bthe other way (round|around)\b", r"\bcould be better\b",
    r"\b(that|this|it) (isn't|is not|wasn't|was not)\b", r", not (a |an |the )?\w+", r"\bstill (wrong|broken|not|the same|missing|too)\b",
    # retry / redo
    r"\btry again\b", r"\bre-?do\b", r"\bre-?write\b", r"\bre-?phrase\b", r"\bfix (it|this|that)\b",
    r"\bone more time\b", r"\bonce more\b", r"^again\b", r"\b(write|say|do|check|answer|read|look)\b[^.?!]{0,40}\bagain\b",
    r"\bstart over\b", r"\binstead\b", r"\brather than\b",
    # an imperative that points back at the reply ("make it shorter", "keep it to ...", "write it as ...")
    r"\b(make|keep|write|say|put|phrase|format|give|turn|change|cut) (it|that|this|them)\b",
    r"\bplease (don't|do not|stop|avoid)\b",
    r"\b(don't|do not) (use|write|add|include|put|give|start|end)\b",
    # complaints
    r"\btoo (long|short|generic|vague|formal|informal|complicated|complex|simple|verbose|wordy|technical|much|many|few|late|early|big|small|hard|difficult|casual)\b",
    r"\b(shorter|longer|simpler|more concise|less formal|more formal|clearer)\b",
    r"\bi was hoping\b", r"\bi (need|needed|want|wanted) (it|that|this|them) (in|to be|as|with|without|shorter|longer)\b", r"\bwhy did you\b", r"\bwhy would you\b",
    r"\byou sound\b", r"\bsounds like a (bot|chatbot|robot|machine)\b", r"\bcould discourage\b",
    r"\buseless\b", r"\bunhelpful\b", r"\bnonsense\b", r"\bugh+\b", r"\bseriously\?", r"\bhallucinat",
    r"\bthanks anyway\b", r"\bthank you anyway\b", r"\bnever ?mind\b",
    # a reply that opens with a refusal of the answer
    r"^(no|nope|nah|wrong|incorrect|again|still|not)\b",
)

_USER_POSITIVE = _rx(
    r"\bthanks?\b", r"\bthank you\b", r"\bthx\b", r"\bty\b", r"\bcheers\b", r"\bappreciate",
    r"\bperfect(ly)?\b", r"\bgreat\b", r"\bexactly\b", r"\bawesome\b", r"\bexcellent\b", r"\bnice\b",
    r"\bcool\b", r"\blove (it|this|that)\b", r"\blovely\b", r"\bbrilliant\b", r"\bwonderful\b",
    r"\bfantastic\b", r"\bamazing\b", r"\bspot on\b", r"\bjust right\b", r"\bwell done\b",
    r"\bthat (works|worked|helps|helped|did it|fixed it)\b", r"\b(it|this) (works|worked) (now|perfectly|great|fine)\b",
    r"\bworks (now|perfectly|great|fine)\b", r"\bruns now\b", r"\bfixed\b", r"\bsolved\b",
    r"\bmakes sense\b", r"(?<!you've )(?<!you have )(?<!you )\bgot it\b", r"\bsweet\b",
    r"\b(much|way|a lot|so much) better\b", r"\bhelpful\b", r"\bthat's (right|correct|it)\b",
    r"^(yes|yep|yeah|yup|correct|right|sure)\b", r"\bgood (answer|job|point|call)\b", r"\bsounds good\b",
    r"\bi'll (go with|use|take|check|try)\b",
    # moving on to a new request
    r"\bnext (question|one|task|up)\b", r"\bmoving on\b", r"\banother (question|one|thing)\b",
    r"(^|[.!?] )now\b", r"(^|[.!?] )next\b", r"\balso\b", r"(^|[.!?] )what about\b",
    r"\bnew (question|topic|task)\b", r"^(ok|okay|alright|all right),? (and|so|then|now)\b",
)

# ---------------------------------------------------------------------------------- tool rules
_TOOL_NEUTRALISE = _rx(r"\b(0|zero|no) (errors?|failures?|failed|warnings?|exceptions?)\b",
                       r"\berrors?: ?0\b", r"\bfailed: ?0\b", r"\bexit (code|status):? 0\b")
_TOOL_NEGATIVE = _rx(
    r"\berror\b", r"\berrors\b", r"\berrno\b", r"\w+error\b", r"\bexception\b", r"\btraceback\b",
    r"\bfailed\b", r"\bfailure\b", r"\bfatal\b", r"\bpanic\b", r"\bsegmentation fault\b",
    r"\bnot found\b", r"\bno such (file|directory|tool|command|table|column|key|user|host)\b",
    r"\bcommand not found\b", r"\bpermission denied\b", r"\baccess denied\b", r"\bforbidden\b",
    r"\bunauthori[sz]ed\b", r"\binvalid\b", r"\bunknown (tool|function|command|argument|parameter|option)\b",
    r"\bmissing (required )?(argument|parameter|field)\b", r"\bunexpected (argument|keyword|token)\b",
    r"\bexit (code|status):? ?[1-9]\d*\b", r"\b(http|status|code)[\"' /:=]*(\d\.\d )?[45]\d\d\b",
    r"\btimed out\b", r"\btimeout\b", r"\bconnection refused\b", r"\bcannot\b", r"\bcan't\b",
    r"\bunable to\b", r"\bis not defined\b", r"\bdoes not exist\b", r"\bnot allowed\b",
)
_TOOL_EMPTY = _rx(r"^\(?(no output|empty|none|null|nothing)\)?\.?$", r"^\[\]$", r"^\{\}$", r"^$",
                  r"\bno (results|matches|items|records)( found)?\b", r"\b0 (results|matches|items|records)\b",
                  r"\"(results|items|data|matches)\": ?\[\]",
                  r"\b(still|is) (running|pending|processing|being generated)\b", r"\bin progress\b",
                  r"\b(queued|pending|scheduled)\b")


@dataclass(frozen=True)
class LexicalVerdict:
    """A lexical verdict and why: ``verdict`` in {1, -1, 0}; ``negative`` / ``positive`` are the
    cue strings found (after neutralisation); ``empty`` is True for an empty / pending tool result."""

    verdict: int
    negative: tuple[str, ...] = ()
    positive: tuple[str, ...] = ()
    empty: bool = False


def _found(rx: re.Pattern, text: str) -> tuple[str, ...]:
    return tuple(m.group(0).strip() for m in rx.finditer(text) if m.group(0).strip())


def lexical_cues(next_state: str | None, role: str | None) -> LexicalVerdict:
    """The verdict of :func:`lexical_verdict` with the cues that decided it.

    Args:
        next_state: the user's reply or the tool result (``None`` reads as empty).
        role: ``"tool"`` for a tool result; anything else is read as a user message.

    Returns:
        A :class:`LexicalVerdict`.
    """
    text = normalise(state_text(next_state, role))
    if role == "tool":
        neg = _found(_TOOL_NEGATIVE, _TOOL_NEUTRALISE.sub(" ", text))
        if neg:
            return LexicalVerdict(-1, negative=neg)
        if _TOOL_EMPTY.search(text):
            return LexicalVerdict(0, empty=True)
        return LexicalVerdict(1)
    text = _USER_NEUTRALISE.sub(" ", text).strip()
    neg, pos = _found(_USER_NEGATIVE, text), _found(_USER_POSITIVE, text)
    if neg:
        return LexicalVerdict(-1, negative=neg, positive=pos)
    return LexicalVerdict(1 if pos else 0, positive=pos)


def lexical_verdict(next_state: str | None, role: str | None) -> int:
    """``1``, ``-1`` or ``0`` from the next state and its role alone (module docstring).

    Args:
        next_state: the user's reply or the tool result.
        role: ``"user"`` or ``"tool"`` (anything else is read as a user message).
    """
    return lexical_cues(next_state, role).verdict


class LexicalBackend(JudgeBackend):
    """``--prm-mode lexical``: :func:`lexical_verdict` as a PRM backend (no model, no prompt).

    ``score_input`` returns the verdict ``n`` times, ``probs`` one-hot on it and the deciding cues
    as ``texts``. Only ``inp.next_state`` and ``inp.next_state_role`` are read.
    """

    name = "lexical"
    mode = "lexical"

    async def score_input(self, inp, n: int, render=None) -> BackendScore:
        """``n`` identical votes for one :class:`~openclaw_rl.judges.prompts.JudgeInput`.

        Raises:
            ValueError: ``n < 1``.
        """
        _check_n(n)
        return self.score_state(inp.next_state, inp.next_state_role, n)

    def score_state(self, next_state: str | None, role: str | None, n: int) -> BackendScore:
        """The lexical votes for a next state and its role (synchronous)."""
        cues = lexical_cues(next_state, role)
        why = "; ".join(f"{k}: {', '.join(v)}" for k, v in (("negative", cues.negative), ("positive", cues.positive)) if v)
        probs = {v: float(v == cues.verdict) for v in VERDICTS}
        return BackendScore(votes=[cues.verdict] * n, probs=probs, texts=[why or "no cue"] * n)

    async def score(self, messages: list[dict], n: int) -> BackendScore:
        """Not supported: the lexical PRM reads the next state itself; use :meth:`score_input`.

        Raises:
            ValueError: always.
        """
        raise ValueError("the lexical PRM scores a JudgeInput (next state and role), not judge messages")


class HybridBackend(JudgeBackend):
    """``--prm-mode hybrid``: the lexical verdict where a cue decides, a model mode elsewhere.

    A next state with a correction or praise cue, a tool error, an empty / pending tool result or
    any other tool output gets the lexical verdict; a user next state without any cue (a bare
    new question, "I see.", "Tell me more.") is judged by ``fallback`` (default: a
    :class:`~openclaw_rl.judges.prototype.PrototypeJudgeBackend` on the judge model).

    Args:
        fallback: the model backend for cue-less user next states (needs ``score_input``).
    """

    mode = "hybrid"

    def __init__(self, fallback: JudgeBackend):
        self.fallback = fallback
        self.lexical = LexicalBackend()
        self.name = f"hybrid:{fallback.name}"
        # expose the fallback's model so another judge can share the loaded weights
        for attr in ("model_path", "model", "tokenizer"):
            if hasattr(fallback, attr):
                setattr(self, attr, getattr(fallback, attr))

    async def score_input(self, inp, n: int, render=None) -> BackendScore:
        """``n`` votes for one :class:`~openclaw_rl.judges.prompts.JudgeInput` (module rules).

        Raises:
            ValueError: ``n < 1``.
        """
        _check_n(n)
        if inp.next_state_role == "tool" or lexical_cues(inp.next_state, inp.next_state_role).verdict != 0:
            return self.lexical.score_state(inp.next_state, inp.next_state_role, n)
        return await self.fallback.score_input(inp, n)

    async def score(self, messages: list[dict], n: int) -> BackendScore:
        """Not supported (see :class:`LexicalBackend`).

        Raises:
            ValueError: always.
        """
        raise ValueError("the hybrid PRM scores a JudgeInput (next state and role), not judge messages")

    async def aclose(self) -> None:
        await self.fallback.aclose()
