"""Observations with images: OpenAI content parts in an agent's messages, and the image-history limit.

An environment's observation (``reset()["observation"]``, the result of ``exec_tool``) is either
a string or a list of OpenAI chat content parts: ``{"type": "text", "text": ...}`` and
``{"type": "image_url", "image_url": {"url": "data:image/png;base64,..."}}`` (a GUI screenshot for a
vision-language policy, :mod:`openclaw_rl.envs.gui.env`). The agent loop sends such a list as the
message's ``content``; judges and the samples' ``response`` text see :func:`content_text`.

:func:`limit_images` is gui-rl's ``--gui-max-image-history-length`` (upstream's name): only the
last ``n`` images of the history stay images, each older one becomes the text part
:data:`IMAGE_PLACEHOLDER`. Replacing an image changes an earlier part of the prompt, so the next
prompt no longer extends the previous prompt + response ids: the trajectory is split there
(``metadata["prefix_break_steps"]``, :mod:`openclaw_rl.agentic.trajectory`), never re-tokenised;
with ``--dynamic-history`` every step is its own sample anyway.
"""

from __future__ import annotations

import copy
from typing import Any

__all__ = ["IMAGE_PLACEHOLDER", "content_text", "count_images", "image_part", "limit_images"]

#: the text an image past the history limit is replaced by
IMAGE_PLACEHOLDER = "[an earlier screenshot, no longer shown]"


def image_part(png_b64: str, media_type: str = "image/png") -> dict:
    """The ``image_url`` content part of a base64 image (a ``data:`` URL, the form the server takes)."""
    return {"type": "image_url", "image_url": {"url": f"data:{media_type};base64,{png_b64}"}}


def _is_image(part: Any) -> bool:
    return isinstance(part, dict) and part.get("type") in ("image_url", "image")


def content_text(content: Any) -> str:
    """The text of a message content: a string as is; for a list of parts, the text parts joined
    by newlines with each image as ``[screenshot]``; ``None`` -> ``""``."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    out = []
    for part in content:
        if _is_image(part):
            out.append("[screenshot]")
        elif isinstance(part, dict) and isinstance(part.get("text"), str):
            out.append(part["text"])
    return "\n".join(out)


def count_images(messages: list[dict]) -> int:
    """Image parts over all ``messages``."""
    return sum(1 for m in messages if isinstance(m.get("content"), list)
               for p in m["content"] if _is_image(p))


def limit_images(messages: list[dict], n: int | None) -> list[dict]:
    """``messages`` with only the last ``n`` image parts kept (module docstring).

    Args:
        messages: chat messages (not changed).
        n: images to keep (``0``: none); ``None``: no limit.

    Returns:
        ``messages`` itself when nothing is dropped, else a copy in which each older image part is
        ``{"type": "text", "text": IMAGE_PLACEHOLDER}``.

    Raises:
        ValueError: ``n < 0``.
    """
    if n is None:
        return messages
    if n < 0:
        raise ValueError(f"the image history length must be >= 0, got {n}")
    drop = count_images(messages) - n
    if drop <= 0:
        return messages
    out = copy.deepcopy(messages)
    for m in out:
        if drop <= 0:
            break
        if not isinstance(m.get("content"), list):
            continue
        for j, part in enumerate(m["content"]):
            if drop > 0 and _is_image(part):
                m["content"][j] = {"type": "text", "text": IMAGE_PLACEHOLDER}
                drop -= 1
    return out
