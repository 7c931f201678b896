"""Vision-language prompts on the transformers engine: M-RoPE position ids and image features.

A Qwen2-VL / Qwen2.5-VL / Qwen3-VL model places text and images on 3-D rotary positions
(temporal, height, width; "M-RoPE", Wang et al. 2024, Qwen2-VL). A prompt with images is
prefilled alone and in one forward pass, with its ``pixel_values`` / ``image_grid_thw`` and the
position ids of the model's own ``get_rope_index``; every later (decode) position of that row is
its plain text position plus the row's ``rope_delta`` (the same on all three axes). Text rows
have delta 0, so rows of both kinds decode together in one batch, each as it would alone.

The position ids are always passed explicitly, so the model's cached ``rope_deltas`` (state
shared by all requests on one model) is never read or written.
"""

from __future__ import annotations

import torch

__all__ = ["is_multimodal_model", "decode_positions", "prefill_inputs", "token_types"]


def is_multimodal_model(model: torch.nn.Module) -> bool:
    """Whether ``model`` is a vision-language model this engine runs images through (a body at
    ``model.model`` with ``visual`` and ``get_rope_index``)."""
    body = getattr(model, "model", None)
    return body is not None and hasattr(body, "visual") and hasattr(body, "get_rope_index")


def token_types(model: torch.nn.Module, input_ids_B_T: torch.Tensor) -> torch.Tensor:
    """``mm_token_type_ids`` ``[B, T]`` int: 1 at ``config.image_token_id``, 2 at
    ``video_token_id``, 0 elsewhere (what the processor returns alongside the ids)."""
    types = torch.zeros_like(input_ids_B_T, dtype=torch.int)
    for value, attr in ((1, "image_token_id"), (2, "video_token_id")):
        token = getattr(model.config, attr, None)
        if token is not None:
            types = torch.where(input_ids_B_T == token, value, types)
    return types


def prefill_inputs(model: torch.nn.Module, input_ids_1_L: torch.Tensor, multimodal: dict[str, torch.Tensor]
                   ) -> tuple[torch.Tensor, int, dict[str, torch.Tensor]]:
    """What the one prefill pass of an image prompt needs.

    Args:
        model: the vision-language model.
        input_ids_1_L: the whole prompt ``[1, L]`` (no padding).
        multimodal: its ``pixel_values`` / ``image_grid_thw`` (processor outputs).

    Returns:
        ``(position_ids_3_1_L, rope_delta, model_kwargs)``: the 3-D position ids, the row's decode
        offset, and the image tensors on the model's device and dtype.

    Raises:
        ValueError: the number of image-pad tokens does not match the images' grids.
    """
    body = model.model
    types = token_types(model, input_ids_1_L)
    grid = multimodal["image_grid_thw"]
    merge = int(model.config.vision_config.spatial_merge_size) ** 2
    expected = int((grid.prod(-1) // merge).sum())
    if int((types == 1).sum()) != expected:
        raise ValueError(f"the prompt has {int((types == 1).sum())} image tokens but its images need {expected}")
    position_ids, delta = body.get_rope_index(input_ids_1_L, mm_token_type_ids=types, image_grid_thw=grid.to(
        input_ids_1_L.device))
    device, dtype = input_ids_1_L.device, next(model.parameters()).dtype
    kwargs = {k: (v.to(device, dtype) if v.is_floating_point() else v.to(device)) for k, v in multimodal.items()}
    return position_ids, int(delta.reshape(-1)[0]), kwargs


def decode_positions(positions_B_C: torch.Tensor, rope_delta_B: torch.Tensor) -> torch.Tensor:
    """3-D position ids ``[3, B, C]`` of text columns: each row's text positions plus its delta."""
    return (positions_B_C + rope_delta_B[:, None].to(positions_B_C))[None].expand(3, -1, -1)
