"""Token ids for turns that arrived as text: imported or hand-written sessions without ids.

A session file in the seed's format may give only ``turns[].prompt`` (a string, or a list of chat
messages) and ``turns[].response``. Such a turn is stored without ids
(:mod:`openclaw_rl.capture.export`) and gets them here, from the policy's own tokenizer and chat
template, before it is judged or trained:

* **prompt**: the messages rendered by the chat template with the generation prompt
  (``add_generation_prompt=True``, the request's ``tools`` included), exactly as the server
  renders a request. A string prompt that already holds the template's special tokens (an
  exported ``prompt``, which is the rendered text) is tokenized as it is; any other string is the
  user's message. The rendered text becomes the turn's ``prompt_text`` (what judges read); a
  list of messages is never stored as a JSON dump.
* **response**: the response text tokenized on its own (special-token markup becomes the special
  ids), followed by the template's end-of-turn token (``<|im_end|>`` for both built-in models)
  unless the text already ends with it. The text is the model's whole output, tool-call markup
  included, as ``openclaw-rl export`` writes it.

The turn is marked ``ids_from_text`` (a store column): its ids were made, not sampled, so it has
no sampling log-probs; the trainer computes them itself (``Sample.logprob_source = "none"``, see
:mod:`slime.guards.admission`). The loss mask covers exactly the response ids, end-of-turn included.
"""

from __future__ import annotations

import logging
from typing import Any

from openclaw_rl.capture.records import TurnRecord

__all__ = ["end_of_turn_id", "needs_ids", "tokenize_turn", "tokenize_untokenized_turns"]

log = logging.getLogger(__name__)

_PROBE = "OPENCLAW_END_OF_TURN_PROBE"


def needs_ids(turn: TurnRecord) -> bool:
    """Whether ``turn`` has no token ids yet (imported from text)."""
    return not turn.prompt_ids or not turn.response_ids


def end_of_turn_id(tokenizer: Any) -> int:
    """The id of the special token the chat template writes right after an assistant message.

    Renders a two-message conversation without the generation prompt and takes the first special
    token after the assistant's text; falls back to the tokenizer's EOS id.

    Raises:
        ValueError: the tokenizer has neither.
    """
    try:
        closed = tokenizer.apply_chat_template([{"role": "user", "content": "hi"},
                                                {"role": "assistant", "content": _PROBE}], tokenize=False)
        tail = closed[closed.rindex(_PROBE) + len(_PROBE):]
        special = set(tokenizer.all_special_ids)
        for i in tokenizer(tail, add_special_tokens=False)["input_ids"]:
            if i in special:
                return int(i)
    except (ValueError, AttributeError, TypeError) as exc:
        log.debug("no end-of-turn token found by rendering: %s", exc)
    if tokenizer.eos_token_id is None:
        raise ValueError("the tokenizer has no end-of-turn or EOS token")
    return int(tokenizer.eos_token_id)


def _rendered(text: str, tokenizer: Any) -> bool:
    return any(tok in text for tok in tokenizer.all_special_tokens if len(tok) > 1)


def _ids(tokenizer: Any, text: str) -> list[int]:
    return list(tokenizer(text, add_special_tokens=False)["input_ids"])


def tokenize_turn(turn: TurnRecord, tokenizer: Any) -> tuple[str, list[int], list[int]]:
    """``(prompt_text, prompt_ids, response_ids)`` of a turn without ids (module docstring).

    Raises:
        ValueError: the chat template cannot render the messages, or the response is empty.
    """
    if turn.prompt_text and _rendered(turn.prompt_text, tokenizer):
        text = turn.prompt_text
    else:
        try:
            text = tokenizer.apply_chat_template(turn.messages, tools=turn.tools or None, tokenize=False,
                                                 add_generation_prompt=True)
        except Exception as exc:  # jinja errors name the message
            raise ValueError(f"turn {turn.turn_uid}: the chat template cannot render its prompt: {exc}") from exc
    eot = end_of_turn_id(tokenizer)
    response = _ids(tokenizer, turn.response_text)
    if not response or response[-1] != eot:
        response.append(eot)
    return text, _ids(tokenizer, text), response


def tokenize_untokenized_turns(store: Any, tokenizer: Any, turns: list[TurnRecord] | None = None) -> int:
    """Give every main turn of ``store`` without ids (or those of ``turns``) its ids and rendered
    prompt text, marked ``ids_from_text``; returns how many were tokenized. A turn the template
    cannot render is left as it is (the data source drops it with the reason)."""
    done = 0
    for turn in store.untokenized_turns() if turns is None else turns:
        if not needs_ids(turn):
            continue
        try:
            text, prompt_ids, response_ids = tokenize_turn(turn, tokenizer)
        except ValueError as exc:
            log.warning("%s", exc)
            continue
        store.set_text_ids(turn.id, text, prompt_ids, response_ids)
        turn.prompt_text, turn.prompt_ids, turn.response_ids = text, prompt_ids, response_ids
        turn.response_logprobs, turn.ids_from_text = [], True
        done += 1
    return done
