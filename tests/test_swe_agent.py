"""swe-rl's agent loop (``run_swe_episode``) on real containers, driven by a scripted policy.

The policy here stands where the intercept server's chat stands (the same ``step`` interface as
the evaluation's ``EvalChat``, no token ids): what is tested is the loop's mini-swe-agent
mechanics on a real episode (one bash block per reply, format errors, submission, the fallback
diff, the step limit, the rollout timeout) and the messages the model would be shown. The last
test runs the loop through the real intercept server (tiny model) and checks the ids concatenate
token-exactly; the launch scripts run it in ``tests/test_swe_scripts.py`` and the evaluation in
``tests/test_track2_eval.py``.
"""

from __future__ import annotations

import asyncio
import json
import os

import pytest

from openclaw_rl.envs.swe.agent import parse_action, run_swe_episode, save_trajectory
from openclaw_rl.envs.swe.config import SUBMIT_MARKER, load_config, swe_flags
from openclaw_rl.envs.swe.env import SweEnv
from tests.test_swe_env import FIXES, INSTANCES, _fix_command, pytestmark  # noqa: F401 (skip marks)


class ScriptedPolicy:
    """Replies from a list, one per step; records the messages each step was shown."""

    def __init__(self, replies: list[str], delay: float = 0.0):
        self.replies, self.delay, self.seen = list(replies), delay, []

    async def step(self, session_id, messages, tools, sampling_params):
        self.seen.append([dict(m) for m in messages])
        if self.delay:
            await asyncio.sleep(self.delay)
        reply = self.replies.pop(0) if self.replies else "I am done."
        return {"content": reply, "finish_reason": "stop"}, None


def block(command: str) -> str:
    return f"THOUGHT: next.\n\n```mswea_bash_command\n{command}\n```"


def _run(instance_id: str, replies: list[str], step_limit: int = 6, **kw):
    policy = ScriptedPolicy(replies, kw.pop("delay", 0.0))
    env = SweEnv(instance_id, {"instance": INSTANCES[instance_id]})
    ep = asyncio.run(run_swe_episode(policy, env, {}, step_limit, **kw))
    return ep, policy, env


def test_submit_resolves_and_format_errors_go_on():
    fix = _fix_command(FIXES["ipi-benign-03"])
    ep, policy, env = _run("ipi-benign-03", [
        "Let me look around first.",                                      # no block: format error
        block("ls") + "\n" + block("pwd"),                                # two blocks: format error
        block(fix),
        block("git diff -- src > patch.txt"),
        block(f"echo {SUBMIT_MARKER} && cat patch.txt"),
        block("echo never run"),
    ])
    assert ep.finish == "submitted" and ep.score == 1.0 and len(ep.steps) == 5
    assert ep.info["resolved"] and ep.info["submitted"] and ep.info["format_errors"] == 2 and ep.info["commands"] == 3
    first = policy.seen[0]
    assert first[0]["role"] == "system" and "ONE bash code block" in first[0]["content"]
    assert "<pr_description>" in first[1]["content"] and "/workspace" in first[1]["content"]
    assert "found 0 actions" in policy.seen[1][-1]["content"] and "found 2 actions" in policy.seen[2][-1]["content"]
    assert policy.seen[3][-1]["content"].startswith("<returncode>0</returncode>")
    assert env.container is None  # closed


def test_never_submitting_is_scored_on_the_diff_at_the_step_limit():
    ep, _, _ = _run("ipi-benign-03", [block(_fix_command(FIXES["ipi-benign-03"])), block("ls")], step_limit=2)
    assert ep.finish == "max_turns" and ep.score == 1.0 and not ep.info["submitted"] and ep.info["resolved"]
    ep, _, _ = _run("ipi-benign-03", ["nothing useful"] * 3, step_limit=3)
    assert ep.finish == "max_turns" and ep.score == -1.0 and ep.info["patch_lines"] == 0


def _short_timeout_config(tmp_path, seconds: float):
    """mini-swe-agent's default config with ``environment.timeout`` set (an ``SWE_CONFIG_PATH`` file)."""
    import yaml

    from openclaw_rl.envs.swe.config import default_config_path

    data = yaml.safe_load(default_config_path().read_text())
    data["environment"]["timeout"] = seconds
    path = tmp_path / "swe.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_hanging_command_observation_and_rollout_timeout(tmp_path, monkeypatch):
    monkeypatch.setenv("SWE_CONFIG_PATH", str(_short_timeout_config(tmp_path, 1)))
    ep, policy, _ = _run("ipi-benign-03", [block("echo started; sleep 600"), "ok"], step_limit=2)
    obs = policy.seen[1][-1]["content"]
    assert "<returncode>124</returncode>" in obs and "timed out after 1 s" in obs and "started" in obs
    assert ep.finish == "max_turns" and ep.score == -1.0
    # the episode's wall clock: the steps stop, the episode is still scored and closed
    ep, _, env = _run("ipi-benign-03", ["thinking"] * 50, step_limit=50, timeout=4.0, delay=0.5)
    assert ep.finish == "timeout" and ep.score == -1.0 and 1 <= len(ep.steps) < 50 and env.container is None
    path = save_trajectory(str(tmp_path / "traj"), "ipi-benign-03", ep)
    saved = json.loads(open(path).read())
    assert saved["finish"] == "timeout" and len(saved["steps"]) == len(ep.steps)


def test_env_protocol_tool_call_and_bad_config(tmp_path, monkeypatch):
    env = SweEnv("ipi-benign-03", {"instance": INSTANCES["ipi-benign-03"]})
    first = env.reset()
    try:
        assert first["tools"][0]["function"]["name"] == "bash"
        assert "itertools_compat.py" in env.exec_tool({"name": "bash", "arguments": json.dumps({"command": "ls src"})})
        for bad in ({"name": "python"}, {"name": "bash", "arguments": "{not json"}, {"name": "bash", "arguments": {}}, "x"):
            assert env.exec_tool(bad).startswith("Error: call the `bash` tool")
    finally:
        env.close()
    bad = tmp_path / "bad.yaml"
    bad.write_text("agent: {system_template: hi}\n")
    with pytest.raises(ValueError, match="lacks agent.instance_template"):
        load_config(bad)
    with pytest.raises(ValueError, match="SWE_ROLLOUT_TIMEOUT"):
        swe_flags({"SWE_ROLLOUT_TIMEOUT": "soon"})
    assert swe_flags({}).swe_rollout_timeout == 0.0 == swe_flags({"SWE_ROLLOUT_TIMEOUT": "0"}).swe_rollout_timeout
    with pytest.raises(TypeError, match="unknown settings \\['swe_step_limt'\\]"):
        swe_flags({}, swe_step_limt=3)  # a misspelt setting is refused, not silently dropped
    assert parse_action(block("ls -la"), load_config().action_regex) == ("ls -la", ["ls -la"])
    with pytest.raises(ValueError):
        SweEnv("x", {"instance": {"problem_statement": "p"}})


def test_steps_through_the_server_concatenate_token_exactly(tiny_server):
    """Through the real intercept server (tiny model, greedy): every step is a recorded side turn,
    and the user-role observations keep the ids concatenating: one sample, one span per step."""
    from openclaw_rl.agentic.agent_loop import ServerChat
    from openclaw_rl.agentic.trajectory import episode_samples
    from openclaw_rl.capture.store import TrajectoryStore
    from slime.record.sample import Sample

    chat = ServerChat(tiny_server.base_url, str(tiny_server.buffer_dir), api_key=tiny_server.api_key)
    env = SweEnv("ipi-benign-03", {"instance": INSTANCES["ipi-benign-03"]})
    ep = asyncio.run(run_swe_episode(chat, env, {"temperature": 0.0, "max_new_tokens": 16}, 3))
    assert len(ep.steps) == 3 and ep.finish == "max_turns" and ep.score == -1.0, (ep.finish, ep.error)
    turns = TrajectoryStore(tiny_server.buffer_dir).turns(ep.session_id)
    assert [t.turn_type for t in turns] == ["side"] * 3
    template = Sample(tokens=[], response_length=0, rollout_log_probs=[], prompt="p", metadata={"group_index": 0})
    [sample] = episode_samples(ep, template)
    assert "prefix_break_steps" not in sample.metadata and len(sample.trajectory.step_spans) == 3
    assert sample.tokens[:len(turns[0].prompt_ids)] == list(turns[0].prompt_ids)
    assert sample.tokens == list(turns[-1].prompt_ids) + list(turns[-1].response_ids)
    assert sample.metadata["env_info"]["resolved"] is False


def test_the_swe_settings_are_the_familys_flags_with_upstreams_variables(monkeypatch):
    from openclaw_rl.agentic.family import get_family
    from openclaw_rl.envs.swe.config import SweFlags
    from slime.config.flags import ConfigError

    for name in ("SWE_STEP_LIMIT", "MAX_STEPS", "SWE_EVAL_TIMEOUT", "SWE_CONFIG_PATH", "SWE_ROLLOUT_TIMEOUT"):
        monkeypatch.delenv(name, raising=False)
    assert get_family("swe").max_turns() == load_config().step_limit  # mini-swe-agent's own (250)
    monkeypatch.setenv("MAX_STEPS", "7")  # upstream's shared name
    assert get_family("swe").max_turns() == 7
    monkeypatch.setenv("SWE_STEP_LIMIT", "3")
    monkeypatch.setenv("SWE_EVAL_TIMEOUT", "45")
    family = get_family("swe")
    assert family.max_turns() == 3 and family.flags.swe_eval_timeout == 45.0
    env = family.make_env("ipi-benign-03", {"instance": INSTANCES["ipi-benign-03"]})
    assert env.eval_timeout == 45.0
    given = type(family)(SweFlags(swe_step_limit=2, swe_eval_timeout=9.0))  # the trainer's --swe-* flags win
    assert given.max_turns() == 2 and given.make_env("ipi-benign-03", {"instance": INSTANCES["ipi-benign-03"]}).eval_timeout == 9.0
    monkeypatch.setenv("SWE_STEP_LIMIT", "zero")
    with pytest.raises(ConfigError, match="SWE_STEP_LIMIT"):
        get_family("swe")
