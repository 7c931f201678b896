"""Vision-language benchmark: what images cost in serving and training, against text in the same process.

Run from the repository root::

    python benchmarks/vision.py [--model-path builtin:tiny-qwen2-vl] [--images 1] [--samples 4]
                                [--response-tokens 16] [--repeats 5] [--torch-threads N] [--json OUT]

One run, everything in this process:

1. **Build.** ``builtin:tiny-qwen2-vl`` built from scratch into a temporary cache (seconds;
   parameter counts of the whole model and of its vision tower).
2. **Serving.** The transformers engine samples ``--response-tokens`` tokens for a chat prompt with
   ``--images`` 160x210 screenshots (the processor's ids and pixel values), and for the same ids
   without the images (the image-pad tokens then embed as text); median seconds per completion and
   the ratio image / text. Rounds are interleaved so both see the same background load.
3. **Log-prob gap.** The trainer's log-probs of the sampled tokens against the engine's (max
   ``|diff|``; the goal is float noise, <= 1e-4).
4. **Train step.** ``TrainingBackend.train_step`` on ``--samples`` image samples and on the same
   samples without images, with ``--freeze-vision-tower`` and without: median seconds per step
   and the ratios to the text step.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def _screenshot(i: int):
    from PIL import Image, ImageDraw

    img = Image.new("RGB", (160, 210), "white")
    ImageDraw.Draw(img).rectangle((20 + 10 * i, 100, 90 + 10 * i, 130), fill=(40, 120, 220))
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    return Image.open(io.BytesIO(buf.getvalue())).convert("RGB")


def main(argv: list[str] | None = None) -> dict:
    """Run the benchmark; print a table and return the numbers (also written to ``--json``)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model-path", default="builtin:tiny-qwen2-vl")
    ap.add_argument("--images", type=int, default=1)
    ap.add_argument("--samples", type=int, default=4)
    ap.add_argument("--response-tokens", type=int, default=16)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--torch-threads", type=int, default=0)
    ap.add_argument("--json", default=None)
    a = ap.parse_args(argv)
    import torch

    if a.torch_threads:
        torch.set_num_threads(a.torch_threads)
    out: dict = {}
    from openclaw_rl.vl_models import build_tiny_qwen2_vl, load_processor

    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        build_tiny_qwen2_vl(Path(tmp))
        out["build_s"] = time.perf_counter() - t0
    from openclaw_rl.engine import SamplingParams
    from openclaw_rl.engine.base import GenerationOutput
    from openclaw_rl.engine.transformers_engine import TransformersEngine
    from openclaw_rl.models import resolve_model_path
    from slime.config.arguments import parse_args
    from slime.trainer.backend import TrainingBackend
    from slime.record.sample import Sample

    folder = resolve_model_path(a.model_path)
    processor = load_processor(folder)
    engine = TransformersEngine(a.model_path)
    model = engine.current_model()
    out["params"] = sum(p.numel() for p in model.parameters())
    out["vision_params"] = sum(p.numel() for p in model.model.visual.parameters())
    content = [{"type": "image"}] * a.images + [{"type": "text", "text": "Click the blue button."}]
    text = processor.tokenizer.apply_chat_template([{"role": "user", "content": content}], tokenize=False,
                                                   add_generation_prompt=True)
    enc = processor(text=[text], images=[_screenshot(i) for i in range(a.images)], return_tensors="pt")
    ids = enc["input_ids"][0].tolist()
    mm = {"pixel_values": enc["pixel_values"], "image_grid_thw": enc["image_grid_thw"]}
    params = SamplingParams(max_new_tokens=a.response_tokens, temperature=1.0, stop_token_ids=())

    async def complete(seed: int, images: bool) -> tuple[float, GenerationOutput]:
        res = GenerationOutput(prompt_ids=ids)
        t = time.perf_counter()
        p = SamplingParams(max_new_tokens=params.max_new_tokens, temperature=1.0, seed=seed)
        async for _ in engine.generate_stream(ids, p, res, **({"multimodal": mm} if images else {})):
            pass
        return time.perf_counter() - t, res

    serve = {"image": [], "text": []}
    outputs = []
    for r in range(a.repeats):
        for kind in ("image", "text"):
            dt, res = asyncio.run(complete(r, kind == "image"))
            serve[kind].append(dt / max(1, len(res.token_ids)))
            if kind == "image":
                outputs.append(res)
    asyncio.run(engine.aclose())
    out["serve_s_per_token_image"] = statistics.median(serve["image"])
    out["serve_s_per_token_text"] = statistics.median(serve["text"])
    out["serve_ratio"] = out["serve_s_per_token_image"] / out["serve_s_per_token_text"]

    samples = [Sample(tokens=ids + o.token_ids, response_length=len(o.token_ids), rollout_log_probs=o.logprobs,
                      multimodal_train_inputs=mm, sampling_temperature=1.0,
                      advantages=[1.0 if i % 2 else -1.0] * len(o.token_ids))
               for i, o in enumerate((outputs * a.samples)[:a.samples])]
    text_samples = [Sample(tokens=s.tokens, response_length=s.response_length, rollout_log_probs=s.rollout_log_probs,
                           sampling_temperature=1.0, advantages=s.advantages) for s in samples]
    frozen = TrainingBackend(parse_args(["--model-path", a.model_path, "--freeze-vision-tower"]))
    gap = max(abs(x - y) for s, lp in zip(samples, frozen.policy_logprobs(samples))
              for x, y in zip(lp, s.rollout_log_probs))
    out["logprob_gap_max"] = gap
    whole = TrainingBackend(parse_args(["--model-path", a.model_path]))
    steps = {"text": [], "image_frozen": [], "image_trained": []}
    for _ in range(a.repeats):
        for kind, backend, batch in (("text", whole, text_samples), ("image_frozen", frozen, samples),
                                     ("image_trained", whole, samples)):
            steps[kind].append(backend.train_step(batch)["step_time_s"])
    for kind, values in steps.items():
        out[f"step_s_{kind}"] = statistics.median(values)
    out["step_ratio_image_frozen"] = out["step_s_image_frozen"] / out["step_s_text"]
    out["step_ratio_image_trained"] = out["step_s_image_trained"] / out["step_s_text"]
    out.update(images=a.images, samples=a.samples, prompt_tokens=len(ids), patches=int(mm["pixel_values"].shape[0]),
               cores=os.cpu_count())
    for key, value in out.items():
        print(f"{key:28s} {value:.6g}" if isinstance(value, float) else f"{key:28s} {value}")
    if a.json:
        Path(a.json).write_text(json.dumps(out, indent=2) + "\n")
    return out


if __name__ == "__main__":
    main()
