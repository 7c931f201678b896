"""The OPD hint judge: a hindsight hint from a turn's next state, its parser and selection rule.

On-policy distillation (OPD) needs to know *how* a turn should have gone, not only whether it
went well. The hint judge reads one assistant turn and its next state (the user's reply or the
tool result) and either

* **accepts** (+1): the next state reveals what the assistant should have done differently; it
  answers ``Decision: accept`` and a concrete, actionable hint of 1-3 sentences between
  ``<hint>`` and ``</hint>``; or
* **rejects** (-1): the next state carries no such information; ``Decision: reject``, no hint.

This module holds the prompt (written for this project), :func:`parse_hint_vote` (tolerant of
missing markers, several blocks and any Unicode), the hint clean-up (at most
:data:`MAX_HINT_SENTENCES` sentences, at least ``min_chars`` characters, else the vote counts as
a reject) and :func:`select_hint`, the documented rule that turns ``--majority-vote-n`` votes
into one decision:

    The turn is accepted when at least one valid vote accepts with a valid hint. Among the
    accepted hints the most informative one is kept: the longest after clean-up (characters),
    ties broken by vote order. Otherwise the turn is rejected.

:class:`HintJudge` runs the votes on any :class:`~openclaw_rl.judges.backends.JudgeBackend`
that returns answer texts (a local model in ``generate`` mode, or an OpenAI-compatible endpoint).
The acceptance rate (accepted turns / judged turns) is counted by the judge loop
(``judge/hint_accepted``, ``judge/hint_rejected``): OPD's yield is naturally sparse.

Reference: OpenClaw-RL (hindsight-hint on-policy distillation); Agarwal et al. 2024,
"On-Policy Distillation of Language Models" (GKD).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from typing import Any, Sequence

from openclaw_rl.judges.prompts import _ROLE_LABEL, _content_text, judge_input_for_turn, turn_parts

__all__ = ["HINT_SYSTEM_PROMPT", "MAX_HINT_SENTENCES", "DEFAULT_MIN_HINT_CHARS", "HintVote",
           "HintJudgement", "HintJudge", "build_hint_messages", "hint_messages_for_turn",
           "parse_hint_vote", "clean_hint", "select_hint"]

MAX_HINT_SENTENCES = 3
#: hints shorter than this (characters, after clean-up) are rejected: too vague to teach.
DEFAULT_MIN_HINT_CHARS = 15

HINT_SYSTEM_PROMPT = (
    "You review one turn of an AI assistant together with what happened right after it. "
    "Your job is to find out, in hindsight, how the assistant should have answered."
)

_RULES = (
    "If the next state shows what the assistant should have done differently (a correction, a "
    "stated preference, a missing step, or a tool error that reveals the right call), answer "
    "with the line Decision: accept followed by a hint for the assistant between <hint> and "
    "</hint>: one to three short sentences, concrete and actionable, phrased as an instruction "
    "it could have followed before answering.\n"
    "If the next state gives no such information (for example the user simply thanks the "
    "assistant or moves on), answer only: Decision: reject"
)

#: Worked examples shown before the turn (request, output, next state, role, hint or None):
#: two accepts and two rejects, so the format is clear even to a small local judge.
FEW_SHOT = (
    ("What is 17 times 3?", "17 times 3 is 41.", "That's wrong, 17 times 3 is 51.", "user",
     "Compute 17 times 3 carefully; the answer is 51."),
    ("Write a haiku about rain.", "Rain falls soft and slow\nOn the tin roof all night long\nMorning brings the sun",
     "Great, I love it! Now one about snow.", "user", None),
    ("Open the settings file.", "Tool calls:\nread({\"path\": \"setings.json\"})",
     "Error: no such file 'setings.json'. Files: settings.json, notes.txt", "tool",
     "The file is called settings.json; read that exact path."),
    ("List the files here.", "Tool calls:\nls({})", "settings.json\nnotes.txt", "tool", None),
)


def _example_answer(hint: str | None) -> str:
    return f"Decision: accept\n<hint>{hint}</hint>" if hint else "Decision: reject"


def build_hint_messages(response_text: str, next_state: str, next_state_role: str | None,
                        tool_calls: Sequence[dict] | None = None,
                        user_request: str | None = None) -> list[dict[str, str]]:
    """The hint judge's chat messages for one assistant turn.

    Args:
        response_text: the assistant's output (``<think>`` blocks are dropped).
        next_state: the user's reply or the tool result that followed the turn.
        next_state_role: ``"user"`` or ``"tool"`` (anything else is "the next message").
        tool_calls: the turn's parsed tool calls (OpenAI form), shown as ``name(args)``.
        user_request: the last user message before the turn, shown as context.

    Returns:
        Chat messages: the system prompt with the rules, the :data:`FEW_SHOT` examples as
        user/assistant pairs, then the turn; the judge answers ``Decision: accept`` +
        ``<hint>...</hint>`` or ``Decision: reject``.

    Raises:
        ValueError: ``next_state`` is None.
    """
    if next_state is None:
        raise ValueError("a turn without a next state has no hindsight hint")
    parts = turn_parts(response_text, next_state, next_state_role, tool_calls, user_request)
    messages = [{"role": "system", "content": HINT_SYSTEM_PROMPT + "\n\n" + _RULES}]
    for req, out_, ns, role, hint in FEW_SHOT:
        messages.append({"role": "user", "content": f"User request:\n{req}\n\nAssistant output:\n{out_}\n\n"
                                                    f"Next state ({_ROLE_LABEL[role]}):\n{ns}"})
        messages.append({"role": "assistant", "content": _example_answer(hint)})
    messages.append({"role": "user", "content": "\n\n".join(parts)})
    return messages


def hint_messages_for_turn(turn: Any) -> list[dict[str, str]]:
    """:func:`build_hint_messages` from a TurnRecord-like object (``response_text``,
    ``next_state``, ``next_state_role``, optional ``tool_calls`` and ``messages``).

    Raises:
        ValueError: the turn has no next state.
    """
    request = None
    for m in reversed(getattr(turn, "messages", None) or []):
        if isinstance(m, dict) and m.get("role") == "user":
            request = _content_text(m.get("content"))
            break
    return build_hint_messages(getattr(turn, "response_text", "") or "", getattr(turn, "next_state", None),
                               getattr(turn, "next_state_role", None), getattr(turn, "tool_calls", None),
                               request)


@dataclass(frozen=True)
class HintVote:
    """One parsed hint-judge answer.

    decision: ``1`` accept (with ``hint``), ``-1`` reject, ``None`` invalid (unparseable, or an
        accept without any hint block).
    hint: the cleaned hint (accept only), else None.
    reason: why a vote became a reject or invalid (``"too_short"``, ``"no_hint"``,
        ``"no_decision"``), else ``""``.
    """

    decision: int | None
    hint: str | None = None
    reason: str = ""


_HINT_RE = re.compile(r"<\s*hint\s*>(.*?)(?:<\s*/\s*hint\s*>|(?=\n[^\n]*decision\s*:)|$)", re.I | re.S)
_DECISION_RE = re.compile(r"decision\s*\**\s*[:=]\s*\**\s*(accept|reject|\+?1|-1)\b", re.I)
_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s+")


def clean_hint(text: str, min_chars: int = DEFAULT_MIN_HINT_CHARS) -> str | None:
    """Normalise a raw hint: Unicode NFC, whitespace collapsed, wrapping quotes stripped, at most
    :data:`MAX_HINT_SENTENCES` sentences kept.

    Returns:
        The cleaned hint, or None when it is shorter than ``min_chars`` characters.
    """
    hint = unicodedata.normalize("NFC", text)
    hint = " ".join(hint.split()).strip().strip("\"'“”‘’`").strip()
    sentences = [s for s in _SENTENCE_END.split(hint) if s]
    hint = " ".join(sentences[:MAX_HINT_SENTENCES])
    return hint if len(hint) >= min_chars else None


def parse_hint_vote(text: str | None, min_chars: int = DEFAULT_MIN_HINT_CHARS) -> HintVote:
    """Parse a hint-judge answer.

    Rules (case-insensitive): the decision is the **last** ``Decision: accept|reject`` line
    (``+1``/``1``/``-1`` accepted too). The hint is the **last** non-empty ``<hint>`` block; a
    block whose ``</hint>`` is missing ends at the decision line or the end of the text. An
    answer with a hint block but no decision line counts as an accept; an accept without any
    hint block is invalid; a reject ignores any hint. A hint shorter than ``min_chars`` after
    :func:`clean_hint` turns the vote into a reject (``reason="too_short"``).

    Returns:
        A :class:`HintVote`.
    """
    if not text:
        return HintVote(None, reason="no_decision")
    decisions = _DECISION_RE.findall(text)
    blocks = [b for b in (m.group(1).strip() for m in _HINT_RE.finditer(text)) if b]
    if decisions:
        d = decisions[-1].lower()
        decision = 1 if d in ("accept", "1", "+1") else -1
    elif blocks:
        decision = 1
    else:
        return HintVote(None, reason="no_decision")
    if decision == -1:
        return HintVote(-1)
    if not blocks:
        return HintVote(None, reason="no_hint")
    hint = clean_hint(blocks[-1], min_chars)
    if hint is None:
        return HintVote(-1, reason="too_short")
    return HintVote(1, hint)


@dataclass
class HintJudgement:
    """The hint judge's decision on one turn.

    accepted: whether a hint was selected. hint: the selected hint (None when rejected).
    votes: the parsed votes. n_accept / n_reject / n_invalid: vote counts.
    texts: the raw answers (for inspection; not stored).
    mode: the hint mode that ran (``extractive``, ``structured`` or ``endpoint``; stored as
    ``hint_mode``).
    """

    accepted: bool
    hint: str | None
    votes: list[HintVote] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)
    mode: str = ""

    @property
    def n_accept(self) -> int:
        """Votes that accepted with a valid hint."""
        return sum(v.decision == 1 for v in self.votes)

    @property
    def n_reject(self) -> int:
        """Votes that rejected (including hints below the minimum length)."""
        return sum(v.decision == -1 for v in self.votes)

    @property
    def n_invalid(self) -> int:
        """Votes that could not be parsed."""
        return sum(v.decision is None for v in self.votes)

    def to_metadata(self) -> dict[str, Any]:
        """JSON-safe summary (``hint_accepted``, ``hint``, vote counts, ``hint_mode``) for the
        judgement record."""
        return {"hint_accepted": self.accepted, "hint": self.hint, "hint_mode": self.mode, "hint_votes": {
            "accept": self.n_accept, "reject": self.n_reject, "invalid": self.n_invalid}}


def select_hint(votes: Sequence[HintVote]) -> HintJudgement:
    """Apply the selection rule (module docstring) to parsed votes; returns a :class:`HintJudgement`."""
    best: str | None = None
    for v in votes:
        if v.decision == 1 and v.hint and (best is None or len(v.hint) > len(best)):
            best = v.hint
    return HintJudgement(best is not None, best, list(votes))


def _render_hint_messages(inp) -> list[dict[str, str]]:
    return build_hint_messages(inp.response_text, inp.next_state, inp.next_state_role, inp.tool_calls,
                               inp.user_request)


class HintJudge:
    """Hint votes for one turn from a text-producing judge backend.

    Args:
        backend: a :class:`~openclaw_rl.judges.backends.JudgeBackend` whose ``score_input``
            returns answer ``texts``: the structured local backend
            (:class:`~openclaw_rl.judges.hint_backend.StructuredHintBackend`), an
            :class:`OpenAIJudgeBackend`, or the extractive one
            (:class:`~openclaw_rl.judges.hint_extract.ExtractiveHintBackend`).
        majority_vote_n: votes per turn (>= 1).
        min_chars: minimum hint length in characters (``--hint-min-chars``).

    Raises:
        ValueError: ``majority_vote_n < 1`` or ``min_chars < 1``.
    """

    def __init__(self, backend, majority_vote_n: int = 1, min_chars: int = DEFAULT_MIN_HINT_CHARS):
        if majority_vote_n < 1 or min_chars < 1:
            raise ValueError("majority_vote_n and min_chars must be >= 1")
        self.backend, self.n, self.min_chars = backend, int(majority_vote_n), int(min_chars)

    async def judge_turn(self, turn: Any) -> HintJudgement:
        """Vote on one TurnRecord-like turn and select its hint.

        Raises:
            ValueError: the turn has no next state.
            openai.APIError: an endpoint backend's request failed.
        """
        return await self.judge_input(judge_input_for_turn(turn))

    async def judge_input(self, inp) -> HintJudgement:
        """Vote on one :class:`~openclaw_rl.judges.prompts.JudgeInput` and select its hint.

        Raises:
            openai.APIError: an endpoint backend's request failed.
        """
        res = await self.backend.score_input(inp, self.n, render=_render_hint_messages)
        judgement = select_hint([parse_hint_vote(t, self.min_chars) for t in res.texts])
        judgement.texts = list(res.texts)
        judgement.mode = getattr(self.backend, "mode", "")
        return judgement
