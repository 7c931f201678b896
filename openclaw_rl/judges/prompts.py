"""The Binary RL judge prompt and its verdict parser.

The process reward model (PRM) judges one assistant turn from *what happened next*: the user's
reply or the tool result that followed it (the turn's "next state"). It answers with a final line
``Score: 1`` (progress), ``Score: -1`` (the turn had to be redone, corrected or failed) or
``Score: 0`` (cannot tell). This module holds:

* :func:`build_judge_messages` -- the chat messages sent to the judge model;
* :func:`judge_messages_for_turn` -- the same, from a :class:`~openclaw_rl.capture.store.TurnRecord`
  (or any object with ``response_text``, ``tool_calls``, ``next_state``, ``next_state_role``,
  ``messages``);
* :class:`JudgeInput` / :func:`judge_input_for_turn` -- the judged turn as fields (request, output,
  tool calls, next state, role): what every judge backend receives; modes that build their own
  prompt (or read only the next state) start from it;
* :data:`VERDICT_CONTINUATIONS` -- the exact verdict strings scored in log-prob mode;
* :func:`parse_verdict` -- a tolerant parser of a free-form judge answer.

The prompt is written for this project (it is not the upstream OpenClaw-RL prompt) and kept short
on purpose: the embedded judge is a 135M-parameter model.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

__all__ = [
    "VERDICTS", "VERDICT_CONTINUATIONS", "JUDGE_SYSTEM_PROMPT", "build_judge_messages",
    "judge_messages_for_turn", "format_tool_calls", "parse_verdict", "has_next_state", "JudgeInput",
    "judge_input_for_turn", "state_text",
]

#: The three verdicts, in the order used for probability vectors.
VERDICTS: tuple[int, int, int] = (1, -1, 0)
#: The assistant reply whose log-probability is scored for each verdict in log-prob mode.
VERDICT_CONTINUATIONS: dict[int, str] = {1: "Score: 1", -1: "Score: -1", 0: "Score: 0"}

#: Characters kept of each judged text (head and tail) so prompts stay small.
MAX_FIELD_CHARS = 1500

JUDGE_SYSTEM_PROMPT = (
    "You review one turn of an AI assistant. You only see what the assistant did and what "
    "happened right after it. Decide whether the assistant's turn worked."
)

_RULES = (
    "How to score, judging from the next state:\n"
    "Score: 1 if it shows progress: the user thanks or agrees, or moves on to a new request, "
    "or the tool returned a successful result.\n"
    "Score: -1 if the assistant failed: the user asks to redo or retry, corrects the assistant, "
    "repeats or rephrases the same request, or the tool returned an error caused by the "
    "assistant's call.\n"
    "Score: 0 if it is unclear.\n"
    "Answer with one final line: Score: 1, Score: -1 or Score: 0."
)

_ROLE_LABEL = {"user": "the user's reply", "tool": "a tool result"}


def _clip(text: str, limit: int = MAX_FIELD_CHARS) -> str:
    text = text.strip()
    if len(text) <= limit:
        return text
    half = limit // 2
    return text[:half] + "\n[...]\n" + text[-half:]


def format_tool_calls(tool_calls: Sequence[Mapping[str, Any]] | None) -> str:
    """Render OpenAI-style tool calls as ``name({json args})`` lines.

    Args:
        tool_calls: ``[{"function": {"name", "arguments"}}]`` (OpenAI form) or ``[{"name",
            "arguments"}]``; ``arguments`` may be a JSON string or a dict. None or empty → ``""``.

    Returns:
        One line per call; malformed entries are rendered with ``str()`` rather than raising.
    """
    lines = []
    for call in tool_calls or []:
        fn = call.get("function", call) if isinstance(call, Mapping) else call
        if not isinstance(fn, Mapping):
            lines.append(str(call))
            continue
        args = fn.get("arguments", {})
        if not isinstance(args, str):
            args = json.dumps(args, ensure_ascii=False)
        lines.append(f"{fn.get('name', '?')}({args})")
    return "\n".join(lines)


_THINK_RE = re.compile(r"<think>.*?(</think>|$)", re.S)
_TOOL_CALL_RE = re.compile(r"<tool_call>.*?(</tool_call>|$)", re.S)


def _assistant_text(response_text: str, tool_calls) -> str:
    text = _THINK_RE.sub("", response_text or "")
    if tool_calls:  # the calls are shown separately; drop their raw markup
        text = _TOOL_CALL_RE.sub("", text)
    return text.strip()


def build_judge_messages(response_text: str, next_state: str, next_state_role: str | None,
                         tool_calls: Sequence[Mapping[str, Any]] | None = None,
                         user_request: str | None = None) -> list[dict[str, str]]:
    """Build the judge's chat messages for one assistant turn.

    Args:
        response_text: the assistant's output text (raw text is fine: ``<think>`` blocks are
            dropped, and ``<tool_call>`` markup too when ``tool_calls`` is given).
        next_state: what followed the turn (user reply or tool result text).
        next_state_role: ``"user"`` or ``"tool"``; anything else (or None) is shown as "the next
            message".
        tool_calls: the turn's parsed tool calls (OpenAI form), shown as ``name(args)``.
        user_request: optional last user message before the turn, shown as context.

    Returns:
        ``[{"role": "system", ...}, {"role": "user", ...}]`` ready for a chat template or an
        OpenAI-compatible endpoint. The judge is asked to end with ``Score: 1|-1|0``.

    Raises:
        ValueError: ``next_state`` is None (a turn without a next state cannot be judged).
    """
    if next_state is None:
        raise ValueError("a turn without a next state cannot be judged")
    parts = turn_parts(response_text, next_state, next_state_role, tool_calls, user_request) + [_RULES]
    return [{"role": "system", "content": JUDGE_SYSTEM_PROMPT},
            {"role": "user", "content": "\n\n".join(parts)}]


def turn_parts(response_text: str, next_state: str, next_state_role: str | None,
               tool_calls: Sequence[Mapping[str, Any]] | None = None,
               user_request: str | None = None) -> list[str]:
    """The judged turn as text blocks: ``User request`` (if given), ``Assistant output`` (with
    ``Tool calls``) and ``Next state (<role label>)``, each clipped to :data:`MAX_FIELD_CHARS`.
    Shared by the PRM prompt and the OPD hint prompt (:mod:`openclaw_rl.judges.hints`)."""
    parts = []
    if user_request:
        parts.append(f"User request:\n{_clip(user_request)}")
    out = _assistant_text(response_text, tool_calls)
    calls = format_tool_calls(tool_calls)
    shown = "\n".join(p for p in (out, f"Tool calls:\n{calls}" if calls else "") if p)
    parts.append(f"Assistant output:\n{_clip(shown) or '(empty)'}")
    label = _ROLE_LABEL.get(next_state_role or "", "the next message")
    parts.append(f"Next state ({label}):\n{_clip(next_state or '') or '(empty)'}")
    return parts


_TOOL_MARK_RE = re.compile(r"^\s*\[tool[^\]\n]*\]\s*", re.I)


def state_text(next_state: str | None, role: str | None = None) -> str:
    """The next state as one line of text for next-state-only judges: whitespace collapsed and,
    for a tool result, the leading ``[tool <id>]`` marker that capture adds removed."""
    text = next_state or ""
    if role == "tool":
        text = _TOOL_MARK_RE.sub("", text)
    return " ".join(text.split())


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # OpenAI content parts
        return "".join(p.get("text", "") for p in content if isinstance(p, Mapping))
    return "" if content is None else str(content)


def has_next_state(turn: Any) -> bool:
    """True when ``turn`` (TurnRecord-like) has a next state to judge from."""
    return getattr(turn, "next_state", None) is not None


@dataclass(frozen=True)
class JudgeInput:
    """One judged turn as plain fields.

    Attributes:
        response_text: the assistant's output (raw text; ``<think>`` is dropped when rendered).
        next_state: the user's reply or the tool result that followed the turn.
        next_state_role: ``"user"``, ``"tool"`` or None (unknown).
        tool_calls: the turn's parsed tool calls (OpenAI form) or None.
        user_request: the last user message before the turn, or None.
        history: the turn's prompt messages (OpenAI form) or None; read by judges that look at
            the conversation before the turn (earlier tool calls, files already named:
            :mod:`openclaw_rl.judges.tool_signals`), never rendered into a judge prompt.
    """

    response_text: str
    next_state: str
    next_state_role: str | None = None
    tool_calls: Sequence[Mapping[str, Any]] | None = None
    user_request: str | None = None
    history: Sequence[Mapping[str, Any]] | None = None

    def messages(self) -> list[dict[str, str]]:
        """The PRM judge messages (:func:`build_judge_messages`) for this turn."""
        return build_judge_messages(self.response_text, self.next_state, self.next_state_role,
                                    self.tool_calls, self.user_request)


def judge_input_for_turn(turn: Any, include_request: bool = True) -> JudgeInput:
    """A :class:`JudgeInput` from a TurnRecord-like object.

    Args:
        turn: has ``response_text``, ``next_state``, ``next_state_role`` and optionally
            ``tool_calls`` and ``messages`` (the prompt messages; the last user message becomes
            ``user_request`` when ``include_request``).

    Raises:
        ValueError: the turn has no next state.
    """
    if not has_next_state(turn):
        raise ValueError(f"turn {getattr(turn, 'turn_uid', '') or getattr(turn, 'id', '?')} "
                         "has no next state yet; it cannot be judged")
    request = None
    history = getattr(turn, "messages", None) or None
    if include_request:
        for m in reversed(history or []):
            if isinstance(m, Mapping) and m.get("role") == "user":
                request = _content_text(m.get("content"))
                break
    return JudgeInput(getattr(turn, "response_text", "") or "", turn.next_state,
                      getattr(turn, "next_state_role", None), getattr(turn, "tool_calls", None), request,
                      history)


def judge_messages_for_turn(turn: Any, include_request: bool = True) -> list[dict[str, str]]:
    """:func:`build_judge_messages` from a TurnRecord-like object (see :func:`judge_input_for_turn`).

    Raises:
        ValueError: the turn has no next state.
    """
    return judge_input_for_turn(turn, include_request).messages()


# "Score: +1", "score = -1", "**Score:** 0", "Final score: 1", "Verdict: -1", "Reward: 1" ...
_SCORE_RE = re.compile(r"(?:score|verdict|reward|rating)\s*\**\s*[:=]?\s*\**\s*\(?\s*([+-]?\s*\d+(?:\.\d+)?)", re.I)
# \boxed{1}, \boxed{-1}, \boxed{+1} (the reference system's format), \boxed{\text{-1}}, \boxed{{1}}
_BOXED_RE = re.compile(r"\\boxed\s*\{\s*(?:\\text\s*\{|\{)?\s*([+-]?\s*\d+(?:\.\d+)?)\s*\}?\s*\}")
_BARE_RE = re.compile(r"^\s*([+-]?\d+)\s*\.?\s*$")
# a last line that is only the verdict, maybe decorated: "**-1**", "`+1`", "-1.", "(+1)"
_LAST_LINE_RE = re.compile(r"^[\s*`_(\[]*([+-]?\d+)[\s*`_)\].!]*$")


def _to_verdict(token: str) -> int | None:
    try:
        value = float(token.replace(" ", ""))
    except ValueError:
        return None
    if value in (1.0, -1.0, 0.0):
        return int(value)
    return None


def parse_verdict(text: str | None) -> int | None:
    """Parse a judge answer into a verdict.

    Accepted forms (case-insensitive, surrounding text ignored): ``Score: 1``, ``Score: +1``,
    ``Score: -1``, ``score = 0``, ``**Score:** 1``, ``Verdict: -1``, ``Reward: 1``, ``\\boxed{1}``
    (the reference system's format; also ``\\boxed{+1}``, ``\\boxed{\\text{-1}}``), an answer that
    is only a number (``-1``), and, when none of these is present, a last line that is only the
    number (``**-1**``, ``+1.``). When several are present the **last** one wins (judges reason first).

    Args:
        text: the judge's answer (None → None).

    Returns:
        ``1``, ``-1`` or ``0``; None for an invalid vote (no recognisable verdict, or the last
        recognised value is not one of -1/0/1, e.g. ``Score: 7``).
    """
    if not text:
        return None
    hits: list[tuple[int, str]] = []
    for rx in (_SCORE_RE, _BOXED_RE):
        hits += [(m.start(), m.group(1)) for m in rx.finditer(text)]
    if hits:
        return _to_verdict(max(hits)[1])
    bare = _BARE_RE.match(text)
    if bare:
        return _to_verdict(bare.group(1))
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    last = _LAST_LINE_RE.match(lines[-1]) if lines else None
    return _to_verdict(last.group(1)) if last else None
