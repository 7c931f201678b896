"""Judge cases: one judged turn per JSON line, with the verdict a careful person would give.

File format (JSON Lines, UTF-8, one object per line; blank lines are skipped):

=============  ========  =======================================================================
field          required  meaning
=============  ========  =======================================================================
``request``    yes       the user's message the assistant answered (string, may be empty)
``response``   yes       the assistant's reply text (string; empty for a pure tool call)
``next_state`` yes       what happened next: the user's reply or the tool result (string)
``role``       yes       ``"user"`` or ``"tool"``: who produced the next state
``expected``   yes       ``1`` (progress), ``-1`` (correction / redo / tool error) or ``0`` (unclear)
``tool_calls`` no        the turn's tool calls, OpenAI form ``[{"function": {"name", "arguments"}}]``
``name``       no        a unique id (default ``line<N>``)
``tags``       no        strings for grouping (``original``, ``preference``, ``unseen``, ``tool``...)
``hint_terms`` no        strings, any of which (case-insensitive) in a hint means the hint names
                         what the user wanted (used for the hint-naming share)
``history``    no        the messages before the turn (OpenAI form: earlier tool calls and results,
                         files the user named), for judges that read the conversation
=============  ========  =======================================================================

Tags ``lang:<code>`` (``lang:de``, ``lang:zh``...) mark the language of the next state for
judge-eval's per-language table; a case without one counts as ``en``.

:data:`DEFAULT_CASES_PATH` is the extended set shipped with the package (``data/judge_cases.jsonl``):
the 12 original cases, every correction and praise phrasing of :mod:`openclaw_rl.preferences`,
the older simulated user's and the evaluation personas' feedback, more user next states (thanks,
agreement, moving on, explicit / indirect / repeated corrections, traps such as "No problem,
thanks!" and "Thanks, but that's wrong."), tool results (successes, errors, empty results) and
30 cases tagged ``unseen`` that were written after the lexical rules were frozen.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from openclaw_rl.judges.prompts import JudgeInput

__all__ = ["JudgeCase", "CaseFormatError", "DEFAULT_CASES_PATH", "HELDOUT_CASES_PATH", "HELDOUT_V6_PATH",
           "HELDOUT_V7_PATH", "HELDOUT_V8_PATH", "HELDOUT_V9_PATH", "HELDOUT_V10_PATH", "HELDOUT_V11_PATH",
           "HELDOUT_V12_PATH", "HELDOUT_V13_PATH", "HELDOUT_V14_PATH",
           "MEASURED_SETS", "load_cases", "parse_case"]

DEFAULT_CASES_PATH = Path(__file__).parent / "data" / "judge_cases.jsonl"
#: hand-written cases in the styles of real users and tools that no judge is trained on (tags
#: ``heldout-v1`` / ``-v2`` / ``-v3`` by when they were written; docs/judges.md)
HELDOUT_CASES_PATH = Path(__file__).parent / "data" / "heldout_cases.jsonl"
#: blind batches written later, one file each (docs/judges.md). Each was measured once, unseen;
#: v6 and v7 are trained on since (:data:`MEASURED_SETS`); v8 to v14 are read by no judge in training.
HELDOUT_V6_PATH = Path(__file__).parent / "data" / "heldout_v6.jsonl"
HELDOUT_V7_PATH = Path(__file__).parent / "data" / "heldout_v7.jsonl"
HELDOUT_V8_PATH = Path(__file__).parent / "data" / "heldout_v8.jsonl"
HELDOUT_V9_PATH = Path(__file__).parent / "data" / "heldout_v9.jsonl"
HELDOUT_V10_PATH = Path(__file__).parent / "data" / "heldout_v10.jsonl"
#: written blind by a helper on 2026-12-05 with structured ``tool_calls`` / ``history`` on every tool case
HELDOUT_V11_PATH = Path(__file__).parent / "data" / "heldout_v11.jsonl"
#: written blind by another helper the same day, after the tool-verdict fixes v11 prompted
HELDOUT_V12_PATH = Path(__file__).parent / "data" / "heldout_v12.jsonl"
#: written blind by a helper on 2026-12-06 (nothing of the project read), measured once at f136db8
HELDOUT_V13_PATH = Path(__file__).parent / "data" / "heldout_v13.jsonl"
#: written blind by another helper the same day, measured once at c98146b (after the tool-verdict fixes v13 prompted)
HELDOUT_V14_PATH = Path(__file__).parent / "data" / "heldout_v14.jsonl"
#: the blind batches already measured, whose user next states the classifier and the probe train on
MEASURED_SETS = (HELDOUT_V6_PATH, HELDOUT_V7_PATH)
_REQUIRED = ("request", "response", "next_state", "role", "expected")
_OPTIONAL = ("tool_calls", "name", "tags", "hint_terms", "history")


class CaseFormatError(ValueError):
    """A judge case file that cannot be read; the message names ``file:line``."""


@dataclass(frozen=True)
class JudgeCase:
    """One judged turn: request, assistant output (+ tool calls), next state, its role, expected verdict.

    ``tags`` group cases for reports; ``hint_terms`` (any one, case-insensitive) mark a hint that
    names what the user wanted.
    """

    name: str
    request: str
    response: str
    next_state: str
    role: str
    expected: int
    tool_calls: tuple = ()
    tags: tuple[str, ...] = ()
    hint_terms: tuple[str, ...] = ()
    history: tuple = ()

    @property
    def lang(self) -> str:
        """The next state's language: the case's ``lang:<code>`` tag, else ``"en"``."""
        return next((t[5:] for t in self.tags if t.startswith("lang:")), "en")

    def judge_input(self):
        """The case as a :class:`~openclaw_rl.judges.prompts.JudgeInput`."""
        return JudgeInput(self.response, self.next_state, self.role, list(self.tool_calls) or None, self.request,
                          list(self.history) or None)

    def messages(self) -> list[dict]:
        """The PRM judge messages for this case (:func:`~openclaw_rl.judges.prompts.build_judge_messages`)."""
        return self.judge_input().messages()

    def names_preference(self, hint: str | None) -> bool:
        """True when ``hint`` contains one of :attr:`hint_terms` (case-insensitive)."""
        low = (hint or "").lower()
        return any(t.lower() in low for t in self.hint_terms)


def _strings(value: Any, key: str, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise CaseFormatError(f"{where}: {key!r} must be a list of strings")
    return tuple(value)


def parse_case(obj: Any, where: str, default_name: str) -> JudgeCase:
    """Validate one decoded JSON object and build a :class:`JudgeCase`.

    Args:
        obj: the decoded line. where: ``file:line`` for error messages.
        default_name: the name used when the object has none.

    Raises:
        CaseFormatError: not an object, a missing or unknown field, or a field of the wrong type
            or value (the message starts with ``where``).
    """
    if not isinstance(obj, dict):
        raise CaseFormatError(f"{where}: a case must be a JSON object, got {type(obj).__name__}")
    missing = [k for k in _REQUIRED if k not in obj]
    if missing:
        raise CaseFormatError(f"{where}: missing field(s) {', '.join(missing)}")
    unknown = sorted(set(obj) - set(_REQUIRED) - set(_OPTIONAL))
    if unknown:
        raise CaseFormatError(f"{where}: unknown field(s) {', '.join(unknown)}")
    for key in ("request", "response", "next_state"):
        if not isinstance(obj[key], str):
            raise CaseFormatError(f"{where}: {key!r} must be a string")
    if obj["role"] not in ("user", "tool"):
        raise CaseFormatError(f"{where}: 'role' must be \"user\" or \"tool\", got {obj['role']!r}")
    if isinstance(obj["expected"], bool) or obj["expected"] not in (1, -1, 0):
        raise CaseFormatError(f"{where}: 'expected' must be 1, -1 or 0, got {obj['expected']!r}")
    calls = obj.get("tool_calls") or []
    if not isinstance(calls, list) or not all(isinstance(c, dict) for c in calls):
        raise CaseFormatError(f"{where}: 'tool_calls' must be a list of objects")
    history = obj.get("history") or []
    if not isinstance(history, list) or not all(isinstance(m, dict) and "role" in m for m in history):
        raise CaseFormatError(f"{where}: 'history' must be a list of messages (objects with a 'role')")
    name = obj.get("name", default_name)
    if not isinstance(name, str) or not name:
        raise CaseFormatError(f"{where}: 'name' must be a non-empty string")
    return JudgeCase(name=name, request=obj["request"], response=obj["response"], next_state=obj["next_state"],
                     role=obj["role"], expected=int(obj["expected"]), tool_calls=tuple(calls),
                     tags=_strings(obj.get("tags", []), "tags", where),
                     hint_terms=_strings(obj.get("hint_terms", []), "hint_terms", where), history=tuple(history))


def load_cases(path: str | Path | None = None, tags: set[str] | None = None) -> list[JudgeCase]:
    """Read a judge case file (module docstring for the format).

    Args:
        path: the JSONL file; default :data:`DEFAULT_CASES_PATH`.
        tags: keep only cases with at least one of these tags (None: all).

    Returns:
        The cases in file order.

    Raises:
        CaseFormatError: no such file, a line that is not JSON, a bad field, a duplicate name, or
            no case at all; the message names ``file:line`` (a ``ValueError``).
    """
    path = Path(path) if path is not None else DEFAULT_CASES_PATH
    if not path.is_file():
        raise CaseFormatError(f"{path}: no such file")
    cases: list[JudgeCase] = []
    seen: dict[str, int] = {}
    with path.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            where = f"{path}:{lineno}"
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise CaseFormatError(f"{where}: not valid JSON ({exc.msg})") from None
            case = parse_case(obj, where, f"line{lineno}")
            if case.name in seen:
                raise CaseFormatError(f"{where}: duplicate name {case.name!r} (first at line {seen[case.name]})")
            seen[case.name] = lineno
            cases.append(case)
    if not cases:
        raise CaseFormatError(f"{path}:1: no judge case in the file")
    if tags:
        cases = [c for c in cases if set(c.tags) & set(tags)]
    return cases
