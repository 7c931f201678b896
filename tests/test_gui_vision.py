"""gui-rl on a vision-language policy (issue 14): ``GUI_OBSERVATION_TYPE=screenshot`` episodes of
real MiniWoB++ pages in headless Chromium, played by ``builtin:tiny-qwen2-vl`` through the real
intercept server with gui-rl's own plugin (``gui-rl/generate.py``): every observation goes to the
model as an ``image_url`` part, the recorded turns keep the screenshots, the samples carry
``pixel_values`` / ``image_grid_thw`` rebuilt with the policy's processor, and one train step runs
on them. The server continues each step's recorded ids (the new screenshot's tokens expanded), so
the steps concatenate into one trajectory; ``--gui-max-image-history-length`` keeps the last N
screenshots, and the prefix break its placeholder makes splits the trajectory exactly there, at
the dropped image.

The path is forced, never left to what the random model writes: ``tool_choice`` names the
``computer`` tool, so every reply is one call (its action is whatever the model writes; the page
answers it with an observation either way) and greedy decoding makes the run repeatable. What
the actions do to the page is not asserted.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from openclaw_rl.agentic.content import IMAGE_PLACEHOLDER, content_text, limit_images
from openclaw_rl.capture.store import TrajectoryStore
from openclaw_rl.envs.gui.env import check_policy
from openclaw_rl.models import resolve_model_path
from openclaw_rl.vl_models import load_processor
from slime.config.arguments import parse_args
from slime.trainer.backend import TrainingBackend
from slime.plugins.loader import load_function
from slime.record.sample import Sample
from tests.support.server import running_server

REPO = Path(__file__).resolve().parent.parent
VL = "builtin:tiny-qwen2-vl"
FORCED = {"type": "function", "function": {"name": "computer"}}
pytestmark = pytest.mark.skipif(not shutil.which("chromium"), reason="Debian chromium not installed (make install)")


@pytest.fixture(scope="module")
def vl_server(tmp_path_factory):
    buf = tmp_path_factory.mktemp("gui-vl") / "rl_buffer"
    with running_server(VL, buf, "--default-max-tokens", "64", "--torch-threads", "1") as handle:
        yield handle


@pytest.fixture
def local_gui(monkeypatch):
    """Browsers in this process (no pool URL), screenshots only, a small screen."""
    for name in ("GUI_ENV_SERVER_URL", "GUI_ENV_SERVER_HOST", "GUI_ENV_SERVER_PORT", "ENV_SERVER_URL", "WORKER_URLS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("GUI_OBSERVATION_TYPE", "screenshot")
    monkeypatch.setenv("GUI_SCREEN_WIDTH", "320")
    monkeypatch.setenv("GUI_SCREEN_HEIGHT", "240")


def _run(server, tmp_path, steps: int, keep: int, **extra):
    generate = load_function(f"{REPO / 'gui-rl/generate.py'}:generate", "--custom-generate-function-path")
    args = SimpleNamespace(server_url=server.base_url, rl_buffer_dir=str(server.buffer_dir), api_key=server.api_key,
                           model_path=VL, gui_max_steps=steps, gui_max_image_history_length=keep,
                           gui_sleep_after_execution=0.0, gui_wait_after_reset=0.0, prm_enable=False, **extra)
    sample = Sample(tokens=[], response_length=0, rollout_log_probs=[], prompt="click-button#3",
                    metadata={"env_type": "gui", "task_key": "click-button#3", "group_index": 0,
                              "task_config": {"task": "click-button", "seed": 3}})
    params = {"temperature": 0.0, "max_new_tokens": 256, "tool_choice": FORCED}
    samples = asyncio.run(generate(args, sample, params))
    store = TrajectoryStore(server.buffer_dir)
    turns = store.turns(samples[0].metadata["session_id"])
    store.close()
    return samples, turns


def _images_in(messages: list[dict]) -> list[str]:
    return [p["sha256"] for m in messages if isinstance(m.get("content"), list) for p in m["content"]
            if p.get("type") == "image"]


def _placeholders_in(messages: list[dict]) -> int:
    """Placeholders in the recorded messages (a message left with text parts only is stored as its text)."""
    return sum(content_text(m.get("content")).count(IMAGE_PLACEHOLDER) for m in messages)


def _pad_ids(processor):
    tok = processor.tokenizer
    return tok.convert_tokens_to_ids("<|image_pad|>"), tok.convert_tokens_to_ids("<|vision_start|>")


def test_limit_images_keeps_the_last_n_and_leaves_the_history_alone():
    shot = lambda k: {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{k}"}}  # noqa: E731
    history = [{"role": "system", "content": "s"},
               {"role": "user", "content": [{"type": "text", "text": "Task"}, shot("A")]},
               {"role": "assistant", "content": None, "tool_calls": []},
               {"role": "tool", "content": [{"type": "text", "text": "o1"}, shot("B")]},
               {"role": "tool", "content": [{"type": "text", "text": "o2"}, shot("C")]}]
    assert limit_images(history, None) is history and limit_images(history, 3) is history
    two = limit_images(history, 2)
    assert two[1]["content"][1] == {"type": "text", "text": IMAGE_PLACEHOLDER}
    assert [m["content"][1]["image_url"]["url"][-1] for m in two[3:]] == ["B", "C"]
    assert history[1]["content"][1]["type"] == "image_url"  # the agent's own history keeps every image
    assert [p["type"] for m in limit_images(history, 0)[1:] if isinstance(m["content"], list) for p in m["content"]] \
        == ["text"] * 6
    assert content_text(history[3]["content"]) == "o1\n[screenshot]"
    with pytest.raises(ValueError, match=">= 0"):
        limit_images(history, -1)


def test_a_screenshot_episode_is_recorded_with_its_images_and_trains(vl_server, local_gui, tmp_path):
    samples, turns = _run(vl_server, tmp_path, steps=2, keep=3)
    processor = load_processor(resolve_model_path(VL))
    image_id, _ = _pad_ids(processor)
    assert len(turns) == 2 and all(t.tool_calls and t.tool_calls[0]["function"]["name"] == "computer" for t in turns)
    # the first prompt: the task text, then the screenshot; the next one adds the tool result's screenshot
    first_user = next(m for m in turns[0].messages if m["role"] == "user")
    assert [p["type"] for p in first_user["content"]] == ["text", "image"]
    assert first_user["content"][0]["text"].startswith("Task: Click on the") and "screenshot follows" in \
        first_user["content"][0]["text"]
    tool_msg = [m for m in turns[1].messages if m["role"] == "tool"][-1]
    assert [p["type"] for p in tool_msg["content"]] == ["text", "image"]
    for t in turns:
        assert [i["sha256"] for i in t.images] == _images_in(t.messages)
        png = base64.b64decode(t.images[-1]["data_b64"])
        assert png[:8] == b"\x89PNG\r\n\x1a\n" and hashlib.sha256(png).hexdigest() == t.images[-1]["sha256"]
    assert [len(t.images) for t in turns] == [1, 2]

    assert all(s.metadata["image_observations"] is True for s in samples)
    for s in samples:  # each sample's images are its last turn's, and its ids hold their tokens
        mm = s.multimodal_train_inputs
        grid = mm["image_grid_thw"]
        last = turns[s.trajectory.step_indices[-1]]
        assert grid.shape == (len(last.images), 3) and mm["pixel_values"].shape[0] == int(grid.prod(-1).sum())
        assert s.tokens.count(image_id) == int(grid.prod(-1).sum()) // 4  # 2x2 merged patches per token
    # the server continued the recorded ids (the new screenshot's tokens expanded): one trajectory
    (traj,) = samples
    assert "prefix_break_steps" not in traj.metadata and traj.trajectory.step_indices == [0, 1]
    n1 = len(turns[0].prompt_ids) + len(turns[0].response_ids)
    assert turns[1].prompt_ids[:n1] == turns[0].prompt_ids + turns[0].response_ids
    assert traj.tokens == turns[1].prompt_ids + turns[1].response_ids
    assert traj.loss_mask.count(1) == len(turns[0].response_ids) + len(turns[1].response_ids)

    backend = TrainingBackend(parse_args(["--model-path", VL, "--freeze-vision-tower", "--lr", "1e-2",
                                          "--micro-batch-size", "1"]))
    with_images = backend.policy_logprobs(samples[:1])[0]
    blind = Sample(tokens=samples[0].tokens, response_length=samples[0].response_length,
                   rollout_log_probs=samples[0].rollout_log_probs, sampling_temperature=1.0)
    assert max(abs(a - b) for a, b in zip(backend.policy_logprobs([blind])[0], with_images)) > 1e-3
    lm = backend.model.model.language_model
    before = {k: v.clone() for k, v in lm.state_dict().items()}
    for s in samples:
        s.advantages = [1.0] * s.response_length
    metrics = backend.train_step(samples)
    assert metrics["skipped"] == 0 and torch.isfinite(torch.tensor(metrics["loss"]))
    assert any(not torch.equal(before[k], v) for k, v in lm.state_dict().items())


def test_image_history_limit_keeps_the_last_n_and_splits_where_the_image_was_dropped(vl_server, local_gui, tmp_path):
    keep, steps = 2, 4
    samples, turns = _run(vl_server, tmp_path, steps=steps, keep=keep)
    processor = load_processor(resolve_model_path(VL))
    _, start_id = _pad_ids(processor)
    assert len(turns) == steps
    seen: list[str] = []
    for k, t in enumerate(turns):
        shown, dropped = _images_in(t.messages), _placeholders_in(t.messages)
        assert len(shown) == min(k + 1, keep) and dropped == max(0, k + 1 - keep)  # one screenshot per observation
        assert [i["sha256"] for i in t.images] == shown
        if k:  # len(shown) >= 2 from the second step on (keep = 2)
            assert shown[:-1] == seen[-(len(shown) - 1):]  # the newest kept, in order; the new one last
        seen += [shown[-1]]
    breaks = set(samples[0].metadata.get("prefix_break_steps", []))
    for k in range(keep, steps):  # an image dropped at step k: the prompt changed where it was
        prev, cur = turns[k - 1].prompt_ids + turns[k - 1].response_ids, turns[k].prompt_ids
        first_diff = next(i for i, (a, b) in enumerate(zip(prev, cur)) if a != b)
        assert first_diff == turns[k - 1].prompt_ids.index(start_id)
        assert k in breaks
    assert breaks == set(range(keep, steps))  # the other steps continue the recorded ids
    starts = [s.trajectory.step_indices[0] for s in samples]
    assert set(starts[1:]) == breaks and sorted(sum((s.trajectory.step_indices for s in samples), [])) == \
        list(range(steps))
    for s in samples:
        assert s.multimodal_train_inputs["image_grid_thw"].shape[0] == len(turns[s.trajectory.step_indices[-1]].images)

    per_step, per_step_turns = _run(vl_server, tmp_path, steps=3, keep=keep, dynamic_history=True)
    assert [s.trajectory.step_indices for s in per_step] == [[0], [1], [2]]
    assert [s.multimodal_train_inputs["image_grid_thw"].shape[0] for s in per_step] == [1, 2, 2]
    assert [s.tokens for s in per_step] == [t.prompt_ids + t.response_ids for t in per_step_turns]


def test_a_text_policy_with_screenshots_only_is_one_line_at_start(monkeypatch):
    from openclaw_rl.agentic.environment import make_env

    with pytest.raises(ValueError, match="GUI_OBSERVATION_TYPE=screenshot needs a vision-language policy"):
        check_policy("screenshot", vision=False)
    check_policy("screenshot_a11y_tree", vision=False)  # the text policy reads the element text
    check_policy("screenshot", vision=True)
    monkeypatch.setenv("GUI_OBSERVATION_TYPE", "screenshot")
    with pytest.raises(ValueError, match="needs a vision-language policy"):
        make_env("gui", "click-button#1", {"task_config": {"task": "click-button", "seed": 1}})

    from tests.support.ray_head import job_env

    for model, rc in (("builtin:tiny-qwen3", 2), (VL, 0)):
        r = subprocess.run(["bash", str(REPO / "gui-rl/run_gui_rl.sh")], capture_output=True, text=True, timeout=120,
                           env={**job_env(1, 1), "TRAIN_JOB_DRY_RUN": "1", "PYTHON": sys.executable,
                                "MODEL_PATH": model, "GUI_OBSERVATION_TYPE": "screenshot",
                                "GUI_MAX_IMAGE_HISTORY_LENGTH": "2"})
        assert r.returncode == rc, r.stderr
        if rc:
            assert len(r.stderr.strip().splitlines()) == 1 and "needs a vision-language policy" in r.stderr
        else:  # the gui family's flags reach the job through their environment fallbacks
            assert '"GUI_MAX_IMAGE_HISTORY_LENGTH": "2"' in r.stdout and '"GUI_OBSERVATION_TYPE": "screenshot"' in r.stdout


@pytest.mark.slow
def test_eval_of_a_vision_policy_sends_the_screenshots_as_training_does(tmp_path):
    """``openclaw-rl eval --eval-tasks gui`` runs the family's own task setup with the evaluated
    model's path, so a vision-language policy gets each screenshot as an image part (recorded in
    the started server's buffer), as a training episode does; a text policy gets text only."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("GUI_ENV_SERVER_URL", "GUI_ENV_SERVER_HOST", "GUI_ENV_SERVER_PORT", "ENV_SERVER_URL",
                        "WORKER_URLS", "GUI_OBSERVATION_TYPE")}
    env.update(GUI_SCREEN_WIDTH="320", GUI_SCREEN_HEIGHT="240", GUI_MAX_STEPS="1")
    for model, images in ((VL, True), ("builtin:tiny-qwen3", False)):
        out = tmp_path / model.split(":")[1]
        r = subprocess.run([sys.executable, "-m", "openclaw_rl.cli", "eval", "--model-path", model, "--eval-tasks",
                            "gui", "--limit", "1", "--max-tokens", "16", "--torch-threads", "1", "--no-progress",
                            "--out", str(out)], cwd=REPO, capture_output=True, text=True, timeout=600, env=env)
        assert r.returncode == 0, r.stderr[-3000:]
        [row] = [json.loads(x) for x in next((out / "items").glob("*/gui.jsonl")).read_text().splitlines()]
        assert row["detail"]["steps"] == 1 and row["detail"]["env_score"] in (-1.0, 1.0)
        [db] = list((out / "servers").rglob("trajectories.sqlite"))
        store = TrajectoryStore(db.parent)
        turns = store.turns()
        store.close()
        assert len(turns) == 1
        first_user = next(m for m in turns[0].messages if m["role"] == "user")
        if images:
            assert [p["type"] for p in first_user["content"]] == ["text", "image"] and len(turns[0].images) == 1
        else:
            assert isinstance(first_user["content"], str) and not turns[0].images
