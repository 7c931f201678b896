"""A recorded turn's images back to the trained sample's processor outputs.

The server stores each prompt image's bytes with its turn (``TurnRecord.images``:
``[{"sha256", "media_type", "data_b64"}]``, :mod:`openclaw_rl.server.images`). The sample's
``multimodal_train_inputs`` are rebuilt from those bytes with the model's image processor, the
same call on the same bytes as at serving time, so ``pixel_values`` / ``image_grid_thw`` are what
the engine consumed (token in, token out: the prompt ids are the recorded ones, never re-rendered).
"""

from __future__ import annotations

import base64
import hashlib
import io

__all__ = ["ImageRecordError", "decode_image_records", "multimodal_train_inputs"]


class ImageRecordError(ValueError):
    """A stored image that does not decode or whose bytes do not match its hash."""


def decode_image_records(images: list[dict]):
    """The stored images as RGB PIL images, in prompt order.

    Raises:
        ImageRecordError: bad base64, a sha256 that does not match the bytes, or bytes that are
            not an image.
    """
    from PIL import Image, UnidentifiedImageError

    out = []
    for i, rec in enumerate(images):
        try:
            data = base64.b64decode(rec["data_b64"], validate=True)
        except (KeyError, TypeError, ValueError) as exc:
            raise ImageRecordError(f"image {i}: no decodable data_b64 ({exc})") from exc
        if rec.get("sha256") and hashlib.sha256(data).hexdigest() != rec["sha256"]:
            raise ImageRecordError(f"image {i}: bytes do not match sha256 {rec['sha256']}")
        try:
            with Image.open(io.BytesIO(data)) as img:
                out.append(img.convert("RGB"))
        except (UnidentifiedImageError, Image.DecompressionBombError, OSError) as exc:
            raise ImageRecordError(f"image {i}: not an image ({exc})") from exc
    return out


def multimodal_train_inputs(processor, images: list[dict]) -> dict:
    """``{"pixel_values": [N_patches, D] float32, "image_grid_thw": [N_images, 3] long}`` of the
    stored ``images`` under ``processor`` (a vision-language processor; its image processor is
    what the server's processor call ran on the same images).

    Raises:
        ImageRecordError: see :func:`decode_image_records`.
    """
    enc = processor.image_processor(images=decode_image_records(images), return_tensors="pt")
    return {"pixel_values": enc["pixel_values"], "image_grid_thw": enc["image_grid_thw"]}
