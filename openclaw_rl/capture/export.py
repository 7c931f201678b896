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
                "messages": [OpenAI message] | null, "finish_reason": str,
                # a vision-language turn's prompt images (messages refer to them by sha256):
                "images": [{"sha256", "media_type", "data_b64"}]}]}

``prompt`` is the rendered prompt text (exactly what the engine consumed, as text); ``response``
the generated text. A hand-written file may give ``prompt`` as a list of messages and omit every
id field; such turns are imported without token ids (``prompt_ids = []``) and get them from the
policy's chat template (:mod:`openclaw_rl.capture.text_turns`), at import with a tokenizer or
when the training job opens the store; a list of messages is rendered then, never stored as a
JSON dump. An export of such a turn carries ``ids_from_text: true`` and no logprobs.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import IO, Iterable

from openclaw_rl.capture.store import TrajectoryStore, TurnRecord, TurnType
from openclaw_rl.capture.text_turns import needs_ids, tokenize_untokenized_turns


class SessionFormatError(ValueError):
    """A line of a session file that does not follow the format (message names the line)."""


def turn_to_dict(t: TurnRecord) -> dict:
    """One stored turn in the session format (``images`` only for a turn with images)."""
    out = _turn_dict(t)
    if t.images:
        out["images"] = t.images
    return out


def _turn_dict(t: TurnRecord) -> dict:
    return {"type": t.turn_type, "prompt": t.prompt_text or t.messages, "response": t.response_text,
            "next_state": t.next_state, "trainable": t.trainable, "prompt_ids": t.prompt_ids,
            "response_ids": t.response_ids, "response_logprobs": t.response_logprobs,
            "weight_version": t.weight_version, "next_state_role": t.next_state_role,
            "tool_calls": t.tool_calls, "messages": t.messages, "finish_reason": t.finish_reason,
            "temperature": t.temperature, "top_p": t.top_p, "constrained": t.constrained,
            "ids_from_text": t.ids_from_text}


def export_sessions(store: TrajectoryStore, out: IO[str]) -> int:
    """Write every session of ``store`` to ``out`` (one line each); return the session count."""
    n = 0
    for sid in store.session_ids():
        turns = store.turns(session_id=sid)
        if not turns:
            continue  # a session whose only request failed has nothing to export
        out.write(json.dumps({"session_id": sid, "turns": [turn_to_dict(t) for t in turns]},
                             ensure_ascii=False, allow_nan=False) + "\n")
        n += 1
    return n


def _read_sessions(path: Path) -> Iterable[tuple[int, dict]]:
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise SessionFormatError(f"{path}: not UTF-8 text: {exc}") from exc
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


def _int_list(value, name: str, where: str) -> list[int]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(i, int) and not isinstance(i, bool)
                                              and 0 <= i < 2 ** 31 for i in value):
        raise SessionFormatError(f"{where}: '{name}' must be a list of token ids (non-negative integers)")
    return value


def _float_list(value, name: str, where: str) -> list[float]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(x, (int, float)) and not isinstance(x, bool)
                                              and math.isfinite(x) and x <= 0 for x in value):
        raise SessionFormatError(f"{where}: '{name}' must be a list of finite log-probabilities (<= 0)")
    return [float(x) for x in value]


def _turn_from_dict(sid: str, d: dict, where: str) -> TurnRecord:
    if not isinstance(d, dict) or "prompt" not in d or "response" not in d:
        raise SessionFormatError(f"{where}: a turn needs 'prompt' and 'response'")
    ttype = d.get("type", TurnType.MAIN if d.get("trainable", True) else TurnType.SIDE)
    if ttype not in tuple(TurnType):
        raise SessionFormatError(f"{where}: 'type' must be 'main' or 'side', got {ttype!r}")
    prompt = d["prompt"]
    if not isinstance(prompt, (str, list)) or not isinstance(d["response"], str):
        raise SessionFormatError(f"{where}: 'prompt' must be a string or a list of messages, 'response' a string")
    messages = d.get("messages") or (prompt if isinstance(prompt, list) else [{"role": "user", "content": prompt}])
    if not isinstance(messages, list) or not all(isinstance(m, dict) and "role" in m for m in messages):
        raise SessionFormatError(f"{where}: 'messages' must be a list of {{'role', 'content'}} objects")
    prompt_text = prompt if isinstance(prompt, str) else ""  # messages are rendered with the ids, never dumped
    ids = _int_list(d.get("prompt_ids"), "prompt_ids", where)
    resp_ids = _int_list(d.get("response_ids"), "response_ids", where)
    lps = _float_list(d.get("response_logprobs"), "response_logprobs", where)
    if bool(ids) != bool(resp_ids) or (len(resp_ids) != len(lps) and not (lps == [] and d.get("ids_from_text"))):
        raise SessionFormatError(f"{where}: give prompt_ids, response_ids and response_logprobs together, "
                                 "with one logprob per response id (or none of them)")
    version = d.get("weight_version", 0)
    if not isinstance(version, int) or isinstance(version, bool) or version < 0:
        raise SessionFormatError(f"{where}: 'weight_version' must be a non-negative integer")
    for key, ok in (("temperature", lambda x: x >= 0), ("top_p", lambda x: 0 < x <= 1)):
        x = d.get(key)
        if x is not None and (not isinstance(x, (int, float)) or isinstance(x, bool) or not math.isfinite(x)
                              or not ok(x)):
            raise SessionFormatError(f"{where}: '{key}' must be a number ({'>= 0' if key == 'temperature' else 'in (0, 1]'}) "
                                     "or null")
    for key in ("next_state", "next_state_role"):
        if d.get(key) is not None and not isinstance(d[key], str):
            raise SessionFormatError(f"{where}: '{key}' must be a string or null")
    images = d.get("images")
    if images is not None and not (isinstance(images, list) and all(
            isinstance(i, dict) and all(isinstance(i.get(k), str) for k in ("sha256", "media_type", "data_b64"))
            for i in images)):
        raise SessionFormatError(f"{where}: 'images' must be a list of {{'sha256', 'media_type', 'data_b64'}} objects")
    return TurnRecord(session_id=sid, turn_type=ttype, messages=messages, prompt_text=prompt_text,
                      prompt_ids=list(ids), response_ids=list(resp_ids), response_logprobs=list(lps),
                      response_text=str(d["response"]), finish_reason=d.get("finish_reason", "stop"),
                      weight_version=version, tool_calls=d.get("tool_calls"),
                      next_state=d.get("next_state"), next_state_role=d.get("next_state_role"),
                      temperature=d.get("temperature"), top_p=d.get("top_p"), constrained=d.get("constrained"),
                      ids_from_text=bool(ids) and bool(d.get("ids_from_text")) or None, images=images or None)


def read_session_file(path: str | Path) -> list[tuple[str, list[TurnRecord]]]:
    """Parse and validate a session file without writing anything.

    Returns:
        ``[(session_id, turns)]``.

    Raises:
        SessionFormatError: the first problem, with ``file:line``.
    """
    path = Path(path)
    parsed = []
    for lineno, obj in _read_sessions(path):
        where = f"{path}:{lineno}"
        if not isinstance(obj, dict) or not isinstance(obj.get("turns"), list):
            raise SessionFormatError(f"{where}: a session needs a 'turns' list")
        sid = str(obj.get("session_id") or f"imported-{path.stem}-{lineno}")
        parsed.append((sid, [_turn_from_dict(sid, t, f"{where} turn {i}") for i, t in enumerate(obj["turns"])]))
    return parsed


def import_sessions(store: TrajectoryStore, path_or_sessions, tokenizer=None) -> tuple[int, int]:
    """Load sessions into ``store``; main turns become ``ready`` for judging/training. Sessions
    whose id the store already has are skipped (importing a file twice adds nothing).

    Args:
        store: the destination.
        path_or_sessions: a session file, or the result of :func:`read_session_file`.
        tokenizer: the policy's tokenizer: main turns without ids get them now
            (:mod:`openclaw_rl.capture.text_turns`); None leaves that to the training job.

    Returns:
        ``(sessions, turns)`` imported.

    Raises:
        SessionFormatError: malformed file; nothing from that file is written.
    """
    parsed = (read_session_file(path_or_sessions) if isinstance(path_or_sessions, (str, Path))
              else path_or_sessions)
    existing = set(store.session_ids())
    parsed = [(sid, turns) for sid, turns in parsed if sid not in existing]
    n_turns = 0
    for sid, turns in parsed:
        store.touch_session(sid, "import")
        for rec in turns:
            saved = store.add_turn(rec)
            if saved.turn_type == TurnType.MAIN:  # an imported turn is complete: ready for judging
                if tokenizer is not None and needs_ids(saved):
                    tokenize_untokenized_turns(store, tokenizer, [saved])
                store.finalize_turn(saved.id)
            n_turns += 1
        store.close_session(sid)
    return len(parsed), n_turns
