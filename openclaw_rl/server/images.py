"""Image content parts of a chat request: decoding, template messages, processor rendering.

A vision-language model (one whose folder has a processor, :func:`openclaw_rl.vl_models.load_processor`)
takes ``image_url`` parts whose URL is a ``data:image/<type>;base64,<data>`` URL (the form the
OpenAI SDK documents for local images). The server never fetches remote URLs: an agent's
screenshots are local, and a training sample must be rebuilt from what was recorded, so an
``http(s)://`` URL is a 400 (send the bytes). So is an image part for a text-only model, base64
that does not decode, and bytes that are not an image. Errors name the part
(``messages[1].content[0].image_url``) in OpenAI's error JSON.

The prompt is the chat template's text with each image as ``<|vision_start|><|image_pad|><|vision_end|>``
(image parts become ``{"type": "image", "sha256": ...}`` in the template messages, which is also
what the turn's stored ``messages`` hold, so the base64 is stored once, with the turn's
``images``); the processor expands each ``<|image_pad|>`` to the image's token count and turns the
images into ``pixel_values`` / ``image_grid_thw`` (Qwen2-VL's processor, Wang et al. 2024).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import io
import re
from dataclasses import dataclass, replace

from openclaw_rl.server.errors import APIError
from openclaw_rl.server.protocol import ChatCompletionRequest

__all__ = ["RequestImage", "expand_suffix_images", "has_images", "image_messages", "render_with_images",
           "request_images"]

_DATA_URL = re.compile(r"^data:(image/[A-Za-z0-9.+-]+);base64,(.*)$", re.DOTALL)
#: largest decoded image accepted (bytes); a screenshot is tens of kilobytes
MAX_IMAGE_BYTES = 16 * 1024 * 1024


@dataclass(frozen=True)
class RequestImage:
    """One decoded image of a request.

    media_type: the data URL's type (``image/png``). data: the decoded bytes. sha256: their hex
    digest (how the stored messages refer to the image). where: the part's location.
    """

    media_type: str
    data: bytes
    sha256: str
    where: str

    def to_record(self) -> dict:
        """The stored form: ``{"sha256", "media_type", "data_b64"}`` (JSON-safe)."""
        return {"sha256": self.sha256, "media_type": self.media_type,
                "data_b64": base64.b64encode(self.data).decode("ascii")}


def has_images(req: ChatCompletionRequest) -> bool:
    """Whether any message of ``req`` has an image part."""
    return any(m.image_parts() for m in req.messages)


def _decode(url: str, where: str) -> RequestImage:
    if re.match(r"^[A-Za-z][A-Za-z0-9+.-]*://", url):
        raise APIError(400, f"{where}: remote image URLs are not fetched; send the image as a "
                            "data:image/png;base64,... URL", param=where, code="invalid_image_url")
    match = _DATA_URL.match(url)
    if match is None:
        raise APIError(400, f"{where}: expected a data:image/<type>;base64,<data> URL, got {url[:40]!r}",
                       param=where, code="invalid_image_url")
    media_type, payload = match.groups()
    try:
        data = base64.b64decode(payload, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise APIError(400, f"{where}: the image's base64 does not decode ({exc})", param=where,
                       code="invalid_image") from exc
    if not data or len(data) > MAX_IMAGE_BYTES:
        raise APIError(400, f"{where}: the image has {len(data)} bytes (1 to {MAX_IMAGE_BYTES} accepted)",
                       param=where, code="invalid_image")
    return RequestImage(media_type, data, hashlib.sha256(data).hexdigest(), where)


def request_images(req: ChatCompletionRequest, accepts_images: bool, model_name: str) -> list[RequestImage]:
    """The request's images in prompt order, decoded.

    Args:
        req: the request.
        accepts_images: whether the served model takes images (it has a processor and the engine
            runs its vision tower).
        model_name: the served model's name, for the error message.

    Raises:
        APIError: 400 for an image part on a text-only model, a remote URL, a URL that is not a
            base64 data URL, base64 that does not decode, or an empty or oversized image.
    """
    images = []
    for i, m in enumerate(req.messages):
        for j, part in m.image_parts():
            where = f"messages[{i}].content[{j}].image_url"
            if not accepts_images:
                raise APIError(400, f"{where}: the model {model_name!r} does not accept image content (a "
                                    "text-only model, or an engine without image support)", param=where,
                               code="image_not_supported")
            images.append(_decode(part.image_url.url, where))
    return images


def image_messages(req: ChatCompletionRequest, template: list[dict], images: list[RequestImage]) -> list[dict]:
    """``template`` (:func:`openclaw_rl.server.prompt.template_messages` of ``req``) with each
    message that has images given as a list of parts: ``{"type": "text", "text"}`` and
    ``{"type": "image", "sha256"}`` in the request's order. Other messages are unchanged."""
    out, it = [], iter(images)
    for m, d in zip(req.messages, template):
        if m.image_parts():
            parts = []
            for part in m.content:  # type: ignore[union-attr]
                if part.type == "image_url":
                    parts.append({"type": "image", "sha256": next(it).sha256})
                else:
                    parts.append({"type": "text", "text": part.text})
            d = {**d, "content": parts}
        out.append(d)
    return out


def render_with_images(processor, text: str, images: list[RequestImage]) -> tuple[list[int], dict]:
    """Prompt ids and processor outputs of ``text`` (the template's rendering) and ``images``.

    Returns:
        ``(prompt_ids, multimodal)``: the ids with each ``<|image_pad|>`` expanded to its image's
        token count, and ``{"pixel_values": [N_patches, D] float32, "image_grid_thw": [N_images, 3]
        long}``.

    Raises:
        APIError: 400 when bytes are not a decodable image (message names the part), the image
            processor rejects an image (an extreme aspect ratio), or the template rendered another
            number of images than the request has.
    """
    from PIL import Image, UnidentifiedImageError

    pil = []
    for img in images:
        try:
            with Image.open(io.BytesIO(img.data)) as opened:
                pil.append(opened.convert("RGB"))
        except (UnidentifiedImageError, Image.DecompressionBombError, OSError, ValueError) as exc:
            raise APIError(400, f"{img.where}: the data is not an image this server can decode ({exc})",
                           param=img.where, code="invalid_image") from exc
    pad = getattr(processor, "image_token", "<|image_pad|>")
    if text.count(pad) != len(images):
        raise APIError(400, f"the chat template rendered {text.count(pad)} images but the request has "
                            f"{len(images)}", param="messages")
    try:
        enc = processor(text=[text], images=pil, return_tensors="pt")
    except ValueError as exc:  # e.g. an aspect ratio beyond what the image processor resizes (> 200)
        where = images[0].where if len(images) == 1 else "messages"
        raise APIError(400, f"the image processor rejected the images: {exc}", param=where,
                       code="invalid_image") from exc
    return enc["input_ids"][0].tolist(), {"pixel_values": enc["pixel_values"], "image_grid_thw": enc["image_grid_thw"]}


def expand_suffix_images(processor, spliced, full_ids: list[int], image_grid_thw) -> "object | None":
    """A token-exact continuation (:class:`openclaw_rl.server.continuation.SplicedPrompt`) of a
    prompt with images: the recorded ids of the turn it continues (their images already expanded)
    + the tokenized suffix, in which each new image's single ``<|image_pad|>`` is expanded to the
    image's token count (``t * h * w / merge_size**2`` of its ``image_grid_thw`` row, as the
    processor expands it). The images' ``pixel_values`` are the full rendering's (every image of
    the prompt, in order), so only the ids of earlier replies differ from the processor's rendering:
    they are the sampled ones.

    Args:
        processor: the model's processor (``image_token``, ``tokenizer``, ``image_processor.merge_size``).
        spliced: the text-level splice (``ids``, ``prefix_len``).
        full_ids: the processor's ids of the whole conversation (:func:`render_with_images`).
        image_grid_thw: ``[N_images, 3]`` of the prompt's images, in order.

    Returns:
        The spliced prompt with expanded ids, or None when the image tokens do not add up (the
        recorded prefix or the suffix holds another number of images than the rendering; the
        caller then uses the rendering).
    """
    tok = processor.tokenizer
    pad = tok.convert_tokens_to_ids(getattr(processor, "image_token", "<|image_pad|>"))
    merge = int(getattr(processor.image_processor, "merge_size", 2))
    counts = [int(g[0] * g[1] * g[2]) // (merge * merge) for g in image_grid_thw.tolist()]
    prefix, suffix = spliced.ids[:spliced.prefix_len], spliced.ids[spliced.prefix_len:]
    new = suffix.count(pad)
    if new > len(counts) or prefix.count(pad) != sum(counts[:len(counts) - new]):
        return None
    it = iter(counts[len(counts) - new:])
    ids = list(prefix)
    for i in suffix:
        ids.extend([pad] * next(it) if i == pad else [i])
    if ids.count(pad) != full_ids.count(pad):
        return None
    return replace(spliced, ids=ids, text=tok.decode(ids, skip_special_tokens=False))
