"""The vision-language policy path on ``builtin:tiny-qwen2-vl``: a PNG screenshot sent with the
real ``openai`` SDK through the real server, captured with its turn, exported to a sample whose
``pixel_values`` / ``image_grid_thw`` are rebuilt from the stored bytes, trainer log-probs equal to
the server's, one train step with the vision tower frozen (bit-identical) or trained; bad images
get OpenAI error JSON and nothing recorded is lost."""

from __future__ import annotations

import base64
import hashlib
import io
import json

import httpx
import openai
import pytest
import torch

from openclaw_rl.agentic.agent_loop import AgentStep, Episode
from openclaw_rl.agentic.trajectory import episode_samples
from openclaw_rl.capture.export import export_sessions, import_sessions
from openclaw_rl.capture.store import TrajectoryStore
from openclaw_rl.models import resolve_model_path
from openclaw_rl.rollout.samples import turn_to_sample
from openclaw_rl.vl_models import load_processor
from slime.config.arguments import parse_args
from slime.trainer.backend import TrainingBackend
from slime.record.sample import Sample
from tests.support.server import running_server

VL = "builtin:tiny-qwen2-vl"


def _screenshot_png(color=(40, 120, 220)) -> bytes:
    """A 160x210 MiniWoB-sized page: white, a task bar, one coloured button."""
    from PIL import Image, ImageDraw

    img = Image.new("RGB", (160, 210), "white")
    draw = ImageDraw.Draw(img)
    draw.rectangle((0, 0, 159, 49), fill=(255, 255, 170))
    draw.rectangle((50, 110, 110, 140), fill=color)
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    return buf.getvalue()


def _image_message(url: str, text: str = "Click the blue button.") -> list[dict]:
    return [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": url}},
                                         {"type": "text", "text": text}]}]


@pytest.fixture(scope="module")
def folder():
    return resolve_model_path(VL)


@pytest.fixture(scope="module")
def vl_server(tmp_path_factory, folder):
    buf = tmp_path_factory.mktemp("vl") / "rl_buffer"
    with running_server(VL, buf, "--default-max-tokens", "12", "--torch-threads", "1") as handle:
        yield handle


def test_tiny_vl_model_is_small_and_processes_a_screenshot(folder):
    from PIL import Image
    from transformers import AutoModelForImageTextToText

    model = AutoModelForImageTextToText.from_pretrained(folder)
    n_params = sum(p.numel() for p in model.parameters())
    n_visual = sum(p.numel() for p in model.model.visual.parameters())
    assert n_params < 1_000_000 and 0 < n_visual < n_params
    processor = load_processor(folder)
    tok = processor.tokenizer
    specials = ("<|im_start|>", "<|im_end|>", "<|vision_start|>", "<|image_pad|>", "<|vision_end|>", "<tool_call>")
    ids = [tok.convert_tokens_to_ids(t) for t in specials]
    assert len(set(ids)) == len(ids) and all(i >= 2048 for i in ids)  # after the trained BPE vocabulary
    assert model.config.image_token_id == tok.convert_tokens_to_ids("<|image_pad|>")
    messages = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "Click OK."}]}]
    text = tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    assert text == ("<|im_start|>user\n<|vision_start|><|image_pad|><|vision_end|>Click OK.<|im_end|>\n"
                    "<|im_start|>assistant\n")
    enc = processor(text=[text], images=[Image.open(io.BytesIO(_screenshot_png()))], return_tensors="pt")
    assert enc["image_grid_thw"].tolist() == [[1, 8, 6]]  # 48 patches of 14x14, 12 tokens after 2x2 merging
    assert int((enc["input_ids"] == model.config.image_token_id).sum()) == 12
    assert tuple(enc["pixel_values"].shape) == (48, 3 * 2 * 14 * 14)


def test_image_chat_is_captured_and_trains_like_the_server_sampled(vl_server, folder, tmp_path):
    png = _screenshot_png()
    url = "data:image/png;base64," + base64.b64encode(png).decode()
    client = openai.OpenAI(base_url=vl_server.base_url, api_key="sk-test", max_retries=0)
    reply = client.chat.completions.create(model=VL, messages=_image_message(url), temperature=1.0, seed=7,
                                           max_tokens=12, logprobs=True, extra_headers={"X-Session-Id": "vl-1"})
    served = [t.logprob for t in reply.choices[0].logprobs.content]

    store = TrajectoryStore(vl_server.buffer_dir)
    (turn,) = store.turns(session_id="vl-1")
    store.close()
    assert [img["sha256"] for img in turn.images] == [hashlib.sha256(png).hexdigest()]
    assert base64.b64decode(turn.images[0]["data_b64"]) == png
    assert turn.messages[0]["content"][0] == {"type": "image", "sha256": hashlib.sha256(png).hexdigest()}
    processor = load_processor(folder)
    image_token = processor.tokenizer.convert_tokens_to_ids("<|image_pad|>")
    assert turn.prompt_ids.count(image_token) == 12
    assert turn.response_logprobs == pytest.approx(served, abs=1e-6)

    sample = turn_to_sample(turn, 1.0, True, processor)
    mm = sample.multimodal_train_inputs
    # an export / import of the session keeps the images: the same sample comes back
    buf = io.StringIO()
    store = TrajectoryStore(vl_server.buffer_dir)
    export_sessions(store, buf)
    store.close()
    exported_file = tmp_path / "sessions.jsonl"
    exported_file.write_text("".join(line + "\n" for line in buf.getvalue().splitlines()
                                     if json.loads(line)["session_id"] == "vl-1"))
    copy = TrajectoryStore(tmp_path / "copy")
    import_sessions(copy, exported_file)
    (imported,) = copy.turns(session_id="vl-1")
    copy.close()
    assert imported.images == turn.images
    again_sample = turn_to_sample(imported, 1.0, True, processor)
    assert again_sample.multimodal_train_inputs is not None and all(
        torch.equal(again_sample.multimodal_train_inputs[k], v) for k, v in mm.items())
    assert mm["image_grid_thw"].tolist() == [[1, 8, 6]] and tuple(mm["pixel_values"].shape) == (48, 1176)
    assert Sample.from_dict(sample.to_dict()) == sample

    cfg = parse_args(["--model-path", VL, "--freeze-vision-tower", "--lr", "1e-2", "--micro-batch-size", "1"])
    backend = TrainingBackend(cfg)
    trainer = backend.policy_logprobs([sample])[0]
    assert max(abs(a - b) for a, b in zip(trainer, sample.rollout_log_probs)) < 1e-4
    blind = Sample(tokens=sample.tokens, response_length=sample.response_length,
                   rollout_log_probs=sample.rollout_log_probs, sampling_temperature=1.0)
    assert max(abs(a - b) for a, b in zip(backend.policy_logprobs([blind])[0], trainer)) > 1e-3  # the image counts

    visual = backend.model.model.visual
    assert not any(p.requires_grad for p in visual.parameters())
    before_visual = {k: v.clone() for k, v in visual.state_dict().items()}
    before_lm = {k: v.clone() for k, v in backend.model.model.language_model.state_dict().items()}
    sample.advantages = [1.0] * sample.response_length
    metrics = backend.train_step([sample])
    assert metrics["skipped"] == 0 and metrics["train_rollout_logprob_abs_diff"] < 1e-4
    assert all(torch.equal(before_visual[k], v) for k, v in visual.state_dict().items())
    assert any(not torch.equal(before_lm[k], v) for k, v in backend.model.model.language_model.state_dict().items())
    visual_ids = {id(p) for p in visual.parameters()}
    assert backend.optimizer.state and not any(id(p) in visual_ids for p in backend.optimizer.state)

    # the trained weights go back to the server (processor files carried along), which serves images on them
    exported = backend.export_weights(tmp_path / "published" / "version-1")
    assert load_processor(exported) is not None
    url_admin = vl_server.base_url.replace("/v1", "") + "/admin/update_weights_from_disk"
    r = httpx.post(url_admin, headers={"Authorization": "Bearer sk-test"},
                   json={"model_path": str(exported), "weight_version": 1}, timeout=120)
    assert r.status_code == 200 and r.json()["weight_version"] == 1, r.text
    again = client.chat.completions.create(model=VL, messages=_image_message(url), temperature=1.0, seed=7,
                                           max_tokens=12, logprobs=True, extra_headers={"X-Session-Id": "vl-2"})
    store = TrajectoryStore(vl_server.buffer_dir)
    (turn2,) = store.turns(session_id="vl-2")
    store.close()
    assert turn2.weight_version == 1 and turn2.prompt_ids == turn.prompt_ids
    second = turn_to_sample(turn2, 1.0, True, processor)
    lp = backend.policy_logprobs([second])[0]  # the trainer's weights are the served ones now
    assert max(abs(a - b) for a, b in zip(lp, [t.logprob for t in again.choices[0].logprobs.content])) < 1e-4
    r = httpx.post(url_admin, headers={"Authorization": "Bearer sk-test"},  # the base weights back, for the others
                   json={"model_path": str(folder), "weight_version": 2}, timeout=120)
    assert r.status_code == 200, r.text

    trained = TrainingBackend(parse_args(["--model-path", VL, "--lr", "1e-2"]))  # the flag off: the tower learns
    before_visual = {k: v.clone() for k, v in trained.model.model.visual.state_dict().items()}
    trained.train_step([sample])
    assert any(not torch.equal(before_visual[k], v) for k, v in trained.model.model.visual.state_dict().items())


def _png(width: int, height: int) -> str:
    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", (width, height), "white").save(buf, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()


@pytest.mark.parametrize("url, code", [
    (_png(1000, 2), "invalid_image"),  # aspect ratio 500: more than the image processor resizes
    ("https://example.com/shot.png", "invalid_image_url"),
    ("data:image/png;base64,@@not-base64@@", "invalid_image"),
    ("data:image/png;base64," + base64.b64encode(b"these bytes are no image").decode(), "invalid_image"),
    ("file:///etc/passwd", "invalid_image_url"),
], ids=["aspect-ratio-500", "https-url", "bad-base64", "not-an-image", "file-url"])
def test_bad_images_are_400_and_nothing_recorded_is_lost(vl_server, url, code):
    store = TrajectoryStore(vl_server.buffer_dir)
    before = store.counts()
    client = openai.OpenAI(base_url=vl_server.base_url, api_key="sk-test", max_retries=0)
    with pytest.raises(openai.BadRequestError) as err:
        client.chat.completions.create(model=VL, messages=_image_message(url), max_tokens=2)
    body = err.value.body
    assert body["code"] == code and body["param"] == "messages[0].content[0].image_url"
    assert body["type"] == "invalid_request_error"
    assert store.counts() == before
    ok = client.chat.completions.create(model=VL, messages=[{"role": "user", "content": "hi"}], max_tokens=2)
    assert ok.choices[0].message is not None and store.counts() != before  # still serving and recording
    store.close()


def test_an_image_to_a_text_model_is_400(tiny_server):
    url = "data:image/png;base64," + base64.b64encode(_screenshot_png()).decode()
    client = openai.OpenAI(base_url=tiny_server.base_url, api_key="sk-test", max_retries=0)
    with pytest.raises(openai.BadRequestError) as err:
        client.chat.completions.create(model="builtin:tiny-qwen3", messages=_image_message(url), max_tokens=2)
    assert err.value.body["code"] == "image_not_supported"
    assert "does not accept image content" in err.value.body["message"]


def test_a_second_step_with_two_screenshots_trains_like_it_was_served(vl_server, folder):
    """An agent's next step: the history keeps the first screenshot, a new one follows; the turn
    records both, in prompt order, and the trainer reproduces the server's log-probs."""
    first, second = _screenshot_png(), _screenshot_png(color=(220, 40, 40))
    as_url = lambda png: "data:image/png;base64," + base64.b64encode(png).decode()  # noqa: E731
    client = openai.OpenAI(base_url=vl_server.base_url, api_key="sk-test", max_retries=0)
    history = _image_message(as_url(first))
    reply = client.chat.completions.create(model=VL, messages=history, temperature=1.0, seed=1, max_tokens=6,
                                           extra_headers={"X-Session-Id": "vl-steps"})
    history += [{"role": "assistant", "content": reply.choices[0].message.content or ""},
                *_image_message(as_url(second), "The page changed. Click the red button.")]
    step = client.chat.completions.create(model=VL, messages=history, temperature=0.8, top_p=0.9, seed=2,
                                          max_tokens=6, logprobs=True, extra_headers={"X-Session-Id": "vl-steps"})
    store = TrajectoryStore(vl_server.buffer_dir)
    turns = store.turns(session_id="vl-steps")
    store.close()
    assert len(turns) == 2
    n1 = len(turns[0].prompt_ids) + len(turns[0].response_ids)  # the recorded ids continued, token for token
    assert turns[1].prompt_ids[:n1] == turns[0].prompt_ids + turns[0].response_ids
    assert [i["sha256"] for i in turns[1].images] == [hashlib.sha256(p).hexdigest() for p in (first, second)]
    processor = load_processor(folder)
    sample = turn_to_sample(turns[1], 1.0, True, processor)
    assert sample.multimodal_train_inputs["image_grid_thw"].tolist() == [[1, 8, 6], [1, 8, 6]]
    # as an agent episode: one sample per step, each with its own prompt's screenshots
    episode = Episode(session_id="vl-steps", task="", steps=[AgentStep(t, "", []) for t in turns],
                      final_response="", finish="answered", score=1.0)
    per_step = episode_samples(episode, Sample(tokens=[], response_length=0, rollout_log_probs=[]),
                               dynamic_history=True, processor=processor)
    assert [s.multimodal_train_inputs["image_grid_thw"].shape[0] for s in per_step] == [1, 2]
    assert all(torch.equal(per_step[1].multimodal_train_inputs[k], v) for k, v in sample.multimodal_train_inputs.items())
    with pytest.raises(ValueError, match="no image processor"):
        episode_samples(episode, Sample(tokens=[], response_length=0, rollout_log_probs=[]), dynamic_history=True)
    assert (sample.sampling_temperature, sample.sampling_top_p) == (0.8, 0.9)
    backend = TrainingBackend(parse_args(["--model-path", VL]))  # the server serves the base weights
    trainer = backend.policy_logprobs([sample])[0]
    served = [t.logprob for t in step.choices[0].logprobs.content]
    assert max(abs(a - b) for a, b in zip(trainer, served)) < 1e-4


def test_a_spliced_image_prompt_expands_only_the_new_images_and_falls_back_when_they_do_not_add_up(folder):
    """``expand_suffix_images``: the recorded prefix keeps its (expanded) image tokens, each new
    image's single pad becomes its token count; a prefix or suffix with another number of images
    than the rendering gives None (the server then uses the rendering)."""
    from openclaw_rl.server.continuation import SplicedPrompt
    from openclaw_rl.server.images import expand_suffix_images

    processor = load_processor(folder)
    pad = processor.tokenizer.convert_tokens_to_ids("<|image_pad|>")
    grid = torch.tensor([[1, 8, 6], [1, 4, 4]])  # 12 and 4 tokens after 2x2 merging
    prefix = [1, 2] + [pad] * 12 + [3, 4]
    full = [1, 2] + [pad] * 12 + [3, 9, 5] + [pad] * 4 + [6]
    spliced = SplicedPrompt(ids=prefix + [5, pad, 6], text="", turn_id=1, prefix_len=len(prefix))
    out = expand_suffix_images(processor, spliced, full, grid)
    assert out.ids == prefix + [5] + [pad] * 4 + [6] and out.ids.count(pad) == full.count(pad)
    assert expand_suffix_images(processor, SplicedPrompt(ids=prefix[:-3] + [3, 4, 5, pad, 6], text="", turn_id=1,
                                                         prefix_len=len(prefix) - 1), full, grid) is None
    assert expand_suffix_images(processor, SplicedPrompt(ids=prefix + [5, pad, pad, 6], text="", turn_id=1,
                                                         prefix_len=len(prefix)), full, grid) is None
