"""Export / import of recorded sessions in the seed's session format (JSON Lines).

One JSON object per session::

    {"session_id": str,
     "turns": [{"type": "main" | "side", "prompt": str, "response": str,
                "next_state": str | null, "trainable": bool,
                # token-exact fields (optional on import):
                "prompt_ids": [int], "response_ids": [int], "response_logprobs": [float],
                "weight_version": int, "next_state_role": "user" | "tool" | null,
                "tool_calls": [OpenAI tool call] | null,
                # extra context kept for lossless round trips:
                "messages": [OpenAI message] | null, "finish_reason": str}]}

``prompt`` is the rendered prompt text (exactly what the engine consumed, as text); ``response``
the generated text. A hand-written file may give ``prompt`` as a list of messages and omit every
id field; such turns are imported without token ids (``prompt_ids = []``) so the trainer can tell
they must be tokenized first.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import IO, Iterable

from openclaw_rl.capture.store import TrajectoryStore, TurnRecord


class SessionFormatError(ValueError):
    """A line of a session file that does not follow the format (message names the line)."""


def turn_to_dict(t: TurnRecord) -> dict:
    """One stored turn in the session format."""
    return {"type": t.turn_type, "prompt": t.prompt_text, "response": t.response_text,
            "next_state": t.next_state, "trainable": t.trainable, "prompt_ids": t.prompt_ids,
            "response_ids": t.response_ids, "response_logprobs": t.response_logprobs,
            "weight_version": t.weight_version, "next_state_role": t.next_state_role,
            "tool_calls": t.tool_calls, "messages": t.messages, "finish_reason": t.finish_reason}


def export_sessions(store: TrajectoryStore, out: IO[str]) -> int:
    """Write every session of ``store`` to ``out`` (one line each); return the session count."""
    n = 0
    for sid in store.session_ids():
        turns = store.turns(session_id=sid)
        out.write(json.dumps({"session_id": sid, "turns": [turn_to_dict(t) for t in turns]},
                             ensure_ascii=False) + "\n")
        n += 1
    return n


def _read_sessions(path: Path) -> Iterable[tuple[int, dict]]:
    text = path.read_text()
    stripped = text.lstrip()
    if stripped.startswith("["):  # a JSON array of sessions is accepted too
        try:
            yield from enumerate(json.loads(text), 1)
        except json.JSONDecodeError as exc:
            raise SessionFormatError(f"{path}: not valid JSON: {exc}") from exc
        return
    for lineno, line in enumerate(text.splitlines(), 1):
        if line.strip():
            try:
                yield lineno, json.loads(line)
            except json.JSONDecodeError as exc:
                raise SessionFormatError(f"{path}:{lineno}: not valid JSON: {exc}") from exc


def _turn_from_dict(sid: str, d: dict, where: str) -> TurnRecord:
    if not isinstance(d, dict) or "prompt" not in d or "response" not in d:
        raise SessionFormatError(f"{where}: a turn needs 'prompt' and 'response'")
    ttype = d.get("type", "main" if d.get("trainable", True) else "side")
    if ttype not in ("main", "side"):
        raise SessionFormatError(f"{where}: 'type' must be 'main' or 'side', got {ttype!r}")
    prompt = d["prompt"]
    messages = d.get("messages") or (prompt if isinstance(prompt, list) else [{"role": "user", "content": prompt}])
    prompt_text = prompt if isinstance(prompt, str) else json.dumps(prompt, ensure_ascii=False)
    ids, resp_ids, lps = d.get("prompt_ids") or [], d.get("response_ids") or [], d.get("response_logprobs") or []
    if resp_ids and lps and len(resp_ids) != len(lps):
        raise SessionFormatError(f"{where}: response_ids and response_logprobs differ in length")
    return TurnRecord(session_id=sid, turn_type=ttype, messages=messages, prompt_text=prompt_text,
                      prompt_ids=list(ids), response_ids=list(resp_ids), response_logprobs=list(lps),
                      response_text=str(d["response"]), finish_reason=d.get("finish_reason", "stop"),
                      weight_version=int(d.get("weight_version", 0)), tool_calls=d.get("tool_calls"),
                      next_state=d.get("next_state"), next_state_role=d.get("next_state_role"))


def import_sessions(store: TrajectoryStore, path: str | Path) -> tuple[int, int]:
    """Load a session file into ``store``; main turns become ``ready`` for judging/training.

    Returns:
        ``(sessions, turns)`` imported.

    Raises:
        SessionFormatError: malformed file; nothing from that file is written.
    """
    path = Path(path)
    parsed = []
    for lineno, obj in _read_sessions(path):
        where = f"{path}:{lineno}"
        if not isinstance(obj, dict) or not isinstance(obj.get("turns"), list):
            raise SessionFormatError(f"{where}: a session needs a 'turns' list")
        sid = str(obj.get("session_id") or f"imported-{path.stem}-{lineno}")
        parsed.append((sid, [_turn_from_dict(sid, t, f"{where} turn {i}") for i, t in enumerate(obj["turns"])]))
    n_turns = 0
    for sid, turns in parsed:
        store.touch_session(sid, "import")
        for rec in turns:
            saved = store.add_turn(rec)
            if saved.turn_type == "main":  # an imported turn is complete: ready for judging
                store.finalize_turn(saved.id)
            n_turns += 1
        store.close_session(sid)
    return len(parsed), n_turns
