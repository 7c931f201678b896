"""The OPD teacher's context: the turn's prompt with the hindsight hint added, as token ids.

Format (documented): the hint is appended to the content of the **last user message** of the
turn's prompt as

    <original content>\\n\\n[Hint: <hint>]

(:data:`HINT_FORMAT`); a prompt without a user message gets the hint as a new final user
message. The hinted messages are rendered with the policy's chat template exactly as the server
renders a request (same tools, generation prompt), giving the teacher prompt ids that
:mod:`openclaw_rl.opd.teacher` scores the student's response after. An empty hint means identical
contexts: the stored prompt ids are used as they are (no render).

This module needs only a tokenizer (no torch): the judge and the rollout service build the
teacher prompt where the turn is judged, and the launch scripts import the rollout service to
read its flags.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

__all__ = ["HINT_FORMAT", "hinted_messages", "teacher_prompt_ids"]

HINT_FORMAT = "\n\n[Hint: {hint}]"


def hinted_messages(messages: Sequence[dict], hint: str) -> list[dict]:
    """Copy of ``messages`` with :data:`HINT_FORMAT` appended to the last user message.

    Args:
        messages: chat-template messages (``role``, ``content`` as a string or OpenAI parts).
        hint: the hint text (non-empty).

    Returns:
        A new list; the input is not modified. Without a user message, a user message holding
        only the hint (``[Hint: ...]``) is appended.

    Raises:
        ValueError: an empty hint.
    """
    if not hint or not hint.strip():
        raise ValueError("an empty hint leaves the teacher context identical to the student's")
    out = copy.deepcopy(list(messages))
    suffix = HINT_FORMAT.format(hint=hint.strip())
    for m in reversed(out):
        if m.get("role") == "user":
            content = m.get("content")
            if isinstance(content, list):  # OpenAI content parts: add a text part
                m["content"] = content + [{"type": "text", "text": suffix}]
            else:
                m["content"] = (content or "") + suffix
            return out
    out.append({"role": "user", "content": suffix.strip()})
    return out


def teacher_prompt_ids(tokenizer: Any, messages: Sequence[dict], tools: list[dict] | None,
                       hint: str | None, prompt_ids: Sequence[int]) -> list[int]:
    """The teacher's prompt ids for one turn.

    Args:
        tokenizer: the policy's tokenizer (its chat template renders the prompt).
        messages / tools: the turn's prompt messages and tools, as stored by capture.
        hint: the selected hint; None or empty means identical contexts.
        prompt_ids: the student's stored prompt ids (returned unchanged for an empty hint).

    Returns:
        Token ids of the hinted prompt, ending with the generation prompt.

    Raises:
        ValueError: the chat template fails on the messages.
    """
    if not hint or not hint.strip():
        return list(prompt_ids)
    text = tokenizer.apply_chat_template(hinted_messages(messages, hint), tools=tools or None,
                                         add_generation_prompt=True, tokenize=False)
    return list(tokenizer(text, add_special_tokens=False)["input_ids"])
