"""The generate hook: the prompt-dataset rollout generating through a real intercept server on the
tiny model, the default and a custom ``generate``, failing samples, and one training step on Ray."""

from __future__ import annotations

import dataclasses
import json
import logging
import textwrap

import pytest
import ray

from openclaw_rl.capture.store import TrajectoryStore
from openclaw_rl.rollout.prompt_rollout import generate_rollout, load_prompts
from openclaw_rl.server.launcher import free_port
from slime.plugins.check import check_plugins
from slime.plugins.failures import PluginFailureError
from slime.plugins.loader import PluginError
from slime.record.sample import SampleStatus
from slime.config.run_args import parse_run_args
from slime.train import train

PROMPTS = "examples/plugins/prompts.jsonl"
REWARD = "examples/plugins/slime_reward.py"


def _args(server, *extra):
    cfg = parse_run_args(["--model-path", "builtin:tiny-qwen3", "--prompt-data", PROMPTS, "--custom-rm-path", REWARD,
                      "--rollout-batch-size", "2", "--n-samples-per-prompt", "2", "--rollout-max-response-len", "6",
                      *extra])
    return cfg.with_section_values("service", server_url=server.base_url, rl_buffer_dir=str(server.buffer_dir),
                                   api_key=server.api_key)


def _plugin(tmp_path, body: str, name: str) -> str:
    path = tmp_path / name
    path.write_text(textwrap.dedent(body))
    return str(path)


def test_default_generate_is_token_exact_and_grouped(tiny_server):
    groups, metrics = generate_rollout(_args(tiny_server), 0)
    assert [len(g) for g in groups] == [2, 2] and metrics["rollout/failed"] == 0
    store = TrajectoryStore(tiny_server.buffer_dir)
    prompts = load_prompts(PROMPTS)
    for g, group in enumerate(groups):
        for s in group:
            assert s.status in (SampleStatus.COMPLETED, SampleStatus.TRUNCATED) and s.reward in (1.0, -1.0)
            assert s.prompt == prompts[g]["prompt"] and s.label == prompts[g]["label"]
            turn = store.turns(session_id=s.session_id)[0]
            assert turn.turn_type == "side" and turn.status == "side"  # never judged or trained live
            assert s.tokens == turn.prompt_ids + turn.response_ids  # token in, token out
            assert s.rollout_log_probs == turn.response_logprobs and s.response == turn.response_text
            assert s.response_length == len(turn.response_ids) <= 6 and s.metadata["prompt_text"] == turn.prompt_text
    # step 1 takes the next prompts (cyclic): prompts 2 and 3, the last one given as chat messages
    groups, _ = generate_rollout(_args(tiny_server), 1)
    assert [g[0].prompt for g in groups] == [prompts[2]["prompt"], prompts[3]["prompt"]]


def test_custom_generate_example_is_used(tiny_server):
    args = _args(tiny_server, "--custom-generate-function-path", "examples/plugins/custom_generate.py")
    groups, _ = generate_rollout(args, 0)
    store = TrajectoryStore(tiny_server.buffer_dir)
    for s in (s for g in groups for s in g):
        turn = store.turns(session_id=s.session_id)[0]
        assert turn.messages[0] == {"role": "system", "content": "Answer in one short sentence."}
        assert s.metadata["system_prompt"] == "Answer in one short sentence."


def test_failing_generate_marks_samples_and_too_many_stop(tiny_server, tmp_path, caplog):
    spec = _plugin(tmp_path, """
        from openclaw_rl.rollout.generate import generate as default_generate

        async def generate(args, sample, sampling_params):
            if "spider" in str(sample.prompt):
                raise ConnectionError("engine fell over on " + str(sample.prompt))
            return await default_generate(args, sample, sampling_params)
    """, "flaky_generate.py")
    args = _args(tiny_server, "--custom-generate-function-path", spec)
    with caplog.at_level(logging.ERROR):
        groups, metrics = generate_rollout(args, 0)  # 2 of 4 failed: not more than 0.5
    failed = [s for s in groups[1]]
    assert all(s.status == SampleStatus.FAILED and s.reward == 0.0 and s.loss_mask == [] for s in failed)
    assert "ConnectionError: engine fell over" in failed[0].metadata["error"]
    assert failed[0].metadata["error"].startswith(f"--custom-generate-function-path {spec}")
    assert "Traceback (most recent call last)" in caplog.text
    assert all(s.status != SampleStatus.FAILED for s in groups[0]) and metrics["rollout/failed"] == 2
    with pytest.raises(PluginFailureError) as err:
        generate_rollout(_args(tiny_server, "--custom-generate-function-path", spec,
                               "--max-plugin-failure-fraction", "0.4"), 0)
    assert str(err.value).startswith("2 of 4 samples failed in the generate / reward plugins in one step")
    assert "ConnectionError" in str(err.value) and "\n" not in str(err.value)


def test_failing_reward_marks_samples(tiny_server, tmp_path):
    spec = _plugin(tmp_path, """
        def reward(args, sample):
            if sample.metadata["index"] == 0:
                raise RuntimeError("no verdict")
            return {"reward": 0.5, "why": "ok"}
    """, "flaky_reward.py")
    groups, metrics = generate_rollout(dataclasses.replace(_args(tiny_server), custom_rm_path=spec), 0)
    first = groups[0][0]
    assert first.status == SampleStatus.FAILED and "RuntimeError: no verdict" in first.metadata["error"]
    assert first.loss_mask == [0] * first.response_length and len(first.tokens) > 0
    assert [s.reward for g in groups for s in g][1:] == [0.5, 0.5, 0.5]
    assert groups[0][1].metadata["reward_details"] == {"why": "ok"} and metrics["rollout/failed"] == 1


def test_start_up_checks_of_the_generate_hook(tmp_path):
    def cfg(*extra):
        return parse_run_args(["--model-path", "builtin:tiny-qwen3", *extra])

    with pytest.raises(PluginError, match="needs a rollout that generates"):
        check_plugins(cfg("--custom-generate-function-path", "examples/plugins/custom_generate.py"))
    bad = _plugin(tmp_path, "def generate(args, sample):\n    return sample\n", "bad_generate.py")
    with pytest.raises(PluginError, match=r"has the wrong parameters; expected \(args, sample, sampling_params\)"):
        check_plugins(cfg("--prompt-data", PROMPTS, "--custom-rm-path", REWARD, "--custom-generate-function-path", bad))
    with pytest.raises(PluginError, match="--prompt-data needs a reward"):
        check_plugins(cfg("--prompt-data", PROMPTS))
    lines = check_plugins(cfg("--prompt-data", PROMPTS, "--custom-rm-path", REWARD,
                              "--custom-generate-function-path", "examples/plugins/custom_generate.py"))
    assert lines[0] == "rollout: openclaw_rl.rollout.prompt_rollout.generate_rollout"
    (tmp_path / "bad.jsonl").write_text('{"prompt": "a"}\n{"question": "b"}\n')
    with pytest.raises(ValueError, match="line 2: expected a JSON object with 'prompt'"):
        check_plugins(cfg("--prompt-data", str(tmp_path / "bad.jsonl"), "--custom-rm-path", REWARD))


@pytest.mark.ray
@pytest.mark.slow
def test_one_prompt_step_with_all_plugins_on_ray(tmp_path):
    """Prompt rollout + custom generate + slime reward + simple loss, one step through the Ray actors."""
    cfg = parse_run_args([
        "--model-path", "builtin:tiny-qwen3", "--num-rollout", "1", "--rollout-batch-size", "2",
        "--n-samples-per-prompt", "2", "--rollout-max-response-len", "6", "--advantage-estimator", "grpo",
        "--prompt-data", PROMPTS, "--custom-generate-function-path", "examples/plugins/custom_generate.py",
        "--custom-rm-path", REWARD, "--custom-loss-function-path", "examples/method-template/custom_loss.py",
        "--rl-buffer-dir", str(tmp_path / "buf"), "--save", str(tmp_path / "ckpt"), "--log-dir", str(tmp_path / "logs"),
        "--port", str(free_port()), "--api-key", "sk-gen", "--lr", "1e-3"])
    check_plugins(cfg)
    try:
        summary = train(cfg)
    finally:
        ray.shutdown()
    assert summary["steps"] == 1 and summary["samples_trained"] == 4
    row = json.loads(next((tmp_path / "logs").glob("run-*/metrics.jsonl")).read_text().splitlines()[-1])
    assert row["rollout/samples"] == 4 and row["rollout/failed"] == 0 and row["weight_version"] == 1
    assert "train/plugin_loss" in row and row["train/skipped"] == 0.0
    assert (tmp_path / "ckpt" / "checkpoint-latest").exists()
    assert TrajectoryStore(tmp_path / "buf").counts().get("side", 0) == 4
