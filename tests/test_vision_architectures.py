"""Qwen2.5-VL and Qwen3-VL (tiny, random, from config) take the same path as Qwen2-VL: the
engine samples with an image, the trainer's log-probs of the sampled tokens equal the engine's,
and ``--freeze-vision-tower`` finds their vision towers."""

from __future__ import annotations

import asyncio
import io

import pytest
import torch

from openclaw_rl.engine import SamplingParams
from openclaw_rl.engine.base import GenerationOutput
from openclaw_rl.engine.transformers_engine import TransformersEngine
from openclaw_rl.vl_models import load_processor
from slime.config.arguments import parse_args
from slime.trainer.backend import TrainingBackend
from slime.record.sample import Sample
from tests.support.vl_architectures import build_vl_architecture


@pytest.mark.parametrize("kind", ["qwen2_5_vl", "qwen3_vl"])
def test_architecture_samples_and_trains_alike(kind, tmp_path):
    from PIL import Image

    torch.set_num_threads(1)
    folder = build_vl_architecture(kind, tmp_path / kind)
    processor = load_processor(folder)
    messages = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "Click the button."}]}]
    text = processor.tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    buf = io.BytesIO()
    Image.new("RGB", (160, 210), (200, 30, 30)).save(buf, format="PNG")
    enc = processor(text=[text], images=[Image.open(buf)], return_tensors="pt")
    ids = enc["input_ids"][0].tolist()
    mm = {"pixel_values": enc["pixel_values"], "image_grid_thw": enc["image_grid_thw"]}

    engine = TransformersEngine(str(folder))
    assert engine.supports_images
    out = GenerationOutput(prompt_ids=ids)

    async def sample():
        async for _ in engine.generate_stream(ids, SamplingParams(max_new_tokens=8, temperature=1.0, seed=1), out,
                                              multimodal=mm):
            pass
        await engine.aclose()

    asyncio.run(sample())
    assert len(out.token_ids) >= 1
    backend = TrainingBackend(parse_args(["--model-path", str(folder), "--freeze-vision-tower"]))
    s = Sample(tokens=ids + out.token_ids, response_length=len(out.token_ids), rollout_log_probs=out.logprobs,
               multimodal_train_inputs=mm, sampling_temperature=1.0)
    trainer = backend.policy_logprobs([s])[0]
    assert max(abs(a - b) for a, b in zip(trainer, out.logprobs)) < 1e-4
    visual = {id(p) for p in backend.model.model.visual.parameters()}
    assert visual and not any(id(p) in visual for p in backend.trainable_parameters)
