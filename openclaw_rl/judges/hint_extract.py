"""``--hint-mode extractive``: the OPD hint taken from the user's own corrective sentences.

A 135M hint judge that writes its own hint mostly restates the conversation (docs/judges.md has
the measured share of its hints that name what the user wanted). A user who corrects the
assistant usually says what they want in so many words ("Start your answer with 'Sure!'."), so
this mode copies it:

1. the turn is accepted only when the next state is a correction: the lexical PRM
   (:func:`~openclaw_rl.judges.lexical.lexical_verdict`) says ``-1``; anything else is rejected;
2. a user next state is split into sentences, and each ``"<filler>: <rest>"`` sentence into its
   two sides; the parts made only of filler words ("No, that's not what I asked.", "Please try
   again.", "Please redo it.", "That's not right") are dropped, and so are leading filler
   clauses ("No, answer in French." gives "Answer in French."); the rest, at most
   :data:`~openclaw_rl.judges.hints.MAX_HINT_SENTENCES` sentences, is the hint;
3. a tool error gives the hint "The previous tool call failed: <error line>. Correct the call
   before using its result." (the first line with an error cue; the last one for a traceback);
4. a correction with nothing left after step 2 ("Still wrong.", "Thanks, but that's wrong.") is
   rejected: it says that the turn failed, not how to do it.

The answers are written in the hint judge's format (``Decision: accept`` + ``<hint>...</hint>`` or
``Decision: reject``) and go through the same parser and selection rule as a model's answers
(:mod:`openclaw_rl.judges.hints`). No model is loaded; only the next state and its role are read.
"""

from __future__ import annotations

import re

from openclaw_rl.judges.backends import BackendScore, JudgeBackend, _check_n
from openclaw_rl.judges.hints import MAX_HINT_SENTENCES
from openclaw_rl.judges.lexical import _TOOL_NEGATIVE, lexical_verdict
from openclaw_rl.judges.prompts import state_text

__all__ = ["ExtractiveHintBackend", "extract_hint", "FILLER_WORDS"]

#: words that carry no instruction on their own (a sentence made only of these is dropped)
FILLER_WORDS = frozenset("""
no nope nah hmm hm um uh ugh well ok okay oh ah that that's thats this it it's its is was are were be been
not what i i'm asked ask for meant mean wanted want please try again redo re-do you your you've you're
forgot forget wrong still right correct incorrect thanks thank but anyway so the a an me my do did didn't
don't does doesn't said say sorry just quite really very yes yeah all at to of and or once there here now
can could would will should have has had get got way like how think sure answer reply response again
""".split())
_SENTENCE_RE = re.compile(r"(?<=[.!?])\s+")
_WORD_RE = re.compile(r"[a-z0-9][a-z0-9'-]*")


def _is_filler(part: str) -> bool:
    words = _WORD_RE.findall(part.lower().replace("\u2019", "'"))
    return not any(w not in FILLER_WORDS for w in words)


def _tidy(part: str) -> str:
    chunks = re.split(r"(?<=,)\s+", part.strip())
    while len(chunks) > 1 and _is_filler(chunks[0]):  # "No, answer in French." -> "answer in French."
        chunks.pop(0)
    part = " ".join(chunks).strip().strip(",;:-").strip()
    return part[:1].upper() + part[1:] if part else part


def extract_hint(next_state: str | None, role: str | None) -> str | None:
    """The extractive hint of a next state (module docstring), or None when the turn is rejected.

    Args:
        next_state: the user's reply or the tool result.
        role: ``"user"`` or ``"tool"`` (anything else reads as a user message).

    Returns:
        The hint text (not yet length-checked; :func:`~openclaw_rl.judges.hints.parse_hint_vote`
        applies ``--hint-min-chars``), or None.
    """
    if lexical_verdict(next_state, role) != -1:
        return None
    text = state_text(next_state, role)
    if role == "tool":
        lines = [ln.strip() for ln in (next_state or "").splitlines() if ln.strip()]
        if lines:
            lines[0] = state_text(lines[0], "tool")
        errors = [ln for ln in lines if _TOOL_NEGATIVE.search(ln.lower())] or lines or [text]
        # a Python traceback names the exception on its last error line
        error = errors[-1] if "traceback" in text.lower() else errors[0]
        return f"The previous tool call failed: {error[:200].rstrip('.')}. Correct the call before using its result."
    kept: list[str] = []
    for sentence in _SENTENCE_RE.split(text):
        head, sep, rest = sentence.partition(": ")
        parts = [rest] if sep and _is_filler(head) else [sentence]
        kept += [_tidy(p) for p in parts if p.strip() and not _is_filler(p)]
    return " ".join(kept[:MAX_HINT_SENTENCES]) or None


class ExtractiveHintBackend(JudgeBackend):
    """Hint-judge answers from :func:`extract_hint` (no model).

    ``score_input`` returns ``n`` identical answers: ``Decision: accept`` with the hint, or
    ``Decision: reject``; ``votes`` are 1 / -1.
    """

    name = "extractive"
    mode = "extractive"

    async def score_input(self, inp, n: int, render=None) -> BackendScore:
        """``n`` answers for one :class:`~openclaw_rl.judges.prompts.JudgeInput` (``render`` ignored).

        Raises:
            ValueError: ``n < 1``.
        """
        _check_n(n)
        hint = extract_hint(inp.next_state, inp.next_state_role)
        text = f"Decision: accept\n<hint>{hint}</hint>" if hint else "Decision: reject"
        return BackendScore(votes=[1 if hint else -1] * n, texts=[text] * n)

    async def score(self, messages: list[dict], n: int) -> BackendScore:
        """Not supported: this mode reads the next state itself; use :meth:`score_input`.

        Raises:
            ValueError: always.
        """
        raise ValueError("the extractive hint judge reads a JudgeInput (next state and role), not messages")
