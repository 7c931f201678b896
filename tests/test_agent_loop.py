"""The agent loop through the real intercept server on the tool-using tiny model: every step is
read back token-exactly, the steps concatenate into one trajectory with the observations masked,
and bad model output or a failing environment still ends in a scored, closed episode.

The paths are forced, never left to what a built model happens to write: the first reply to
"USE_TOOL please read the file" with the ``read`` tool is the checked ``short/call`` case of
``tests/support/tool_model_check.py`` (greedy decoding provably writes the call), and a stop
sequence inside that call forces a malformed one. What the second reply says is not asserted.
"""

from __future__ import annotations

import asyncio
import json

import pytest

from openclaw_rl.agentic.agent_loop import MALFORMED_CALL, ServerChat, run_episode
from openclaw_rl.agentic.pool_client import LocalEnvHandle
from openclaw_rl.agentic.trajectory import episode_samples
from openclaw_rl.capture.store import TrajectoryStore
from slime.record.sample import Sample, SampleStatus
from tests.support.tool_model import SHORT_TOOLS

SYSTEM = "You are helpful."
TASK = "USE_TOOL please read the file"
SECRET = "secret-value-42\n"


class ReadFileEnv:
    """A one-file environment: ``read`` returns the secret; the episode scores 1 when the final
    answer is non-empty. Records every call it gets."""

    def __init__(self, fail_on_call: bool = False):
        self.calls: list[dict] = []
        self.closed = False
        self.evaluated: list[str] = []
        self.fail_on_call = fail_on_call

    def reset(self) -> dict:
        return {"observation": TASK, "tools": SHORT_TOOLS}

    def exec_tool(self, tool_call: dict) -> str:
        self.calls.append(tool_call)
        if self.fail_on_call:
            raise OSError("the environment's disk vanished")
        args = tool_call.get("arguments")
        args = json.loads(args) if isinstance(args, str) else args
        return SECRET if args.get("path") == "hello.txt" else "no such file"

    def submit(self, final_response: str) -> None:
        self.evaluated.append(final_response)

    def evaluate(self) -> float:
        return 1.0 if self.evaluated and self.evaluated[-1] else -1.0

    def close(self) -> None:
        self.closed = True


def _episode(server, env, max_turns=2, **sampling):
    chat = ServerChat(server.base_url, str(server.buffer_dir), api_key=server.api_key)
    params = {"temperature": 0.0, "max_new_tokens": 64, **sampling}
    return asyncio.run(run_episode(chat, LocalEnvHandle(env), params, max_turns, system_prompt=SYSTEM))


def _template() -> Sample:
    return Sample(tokens=[], response_length=0, rollout_log_probs=[], prompt=TASK,
                  metadata={"group_index": 0, "env_type": "test"})


def test_two_steps_concatenate_token_exactly(tool_server, tool_model):
    env = ReadFileEnv()
    ep = _episode(tool_server, env)
    assert env.calls[0]["name"] == "read" and json.loads(env.calls[0]["arguments"]) == {"path": "hello.txt"}
    assert len(ep.steps) == 2 and ep.steps[0].observations == [SECRET]
    assert env.closed and env.evaluated == [ep.final_response] and ep.score in (1.0, -1.0)
    t1, t2 = ep.steps[0].turn, ep.steps[1].turn
    store = TrajectoryStore(tool_server.buffer_dir)
    stored = {t.id: t for t in store.turns(ep.session_id)}
    assert [t1.id, t2.id] == sorted(stored) and all(t.turn_type == "side" for t in stored.values())

    [traj] = episode_samples(ep, _template())
    n1 = len(t1.prompt_ids) + len(t1.response_ids)
    assert t2.prompt_ids[:n1] == t1.prompt_ids + t1.response_ids  # the server's continuation
    assert traj.tokens == t2.prompt_ids + t2.response_ids
    assert traj.prompt_tokens == t1.prompt_ids
    r1, obs = len(t1.response_ids), len(t2.prompt_ids) - n1
    assert traj.loss_mask == [1] * r1 + [0] * obs + [1] * len(t2.response_ids)
    assert traj.rollout_log_probs[:r1] == pytest.approx(t1.response_logprobs)
    assert traj.rollout_log_probs[r1 + obs:] == pytest.approx(t2.response_logprobs)
    assert traj.trajectory.step_spans == [(0, r1), (r1 + obs, traj.response_length)]
    assert traj.trajectory.step_indices == [0, 1] and traj.metadata["tool_calls"] == 1
    assert traj.trajectory.group_index == 0 and traj.reward == ep.score
    from transformers import AutoTokenizer
    tok = AutoTokenizer.from_pretrained(str(tool_model))
    assert "secret-value-42" in tok.decode(traj.response_tokens[r1:r1 + obs])

    steps = episode_samples(ep, _template(), dynamic_history=True, step_prm_scores=[0.5, -1.0])
    assert [s.tokens for s in steps] == [t1.prompt_ids + t1.response_ids, t2.prompt_ids + t2.response_ids]
    assert [s.trajectory.step_indices for s in steps] == [[0], [1]]
    assert [s.trajectory.step_scores for s in steps] == [[0.5], [-1.0]]
    assert steps[0].trajectory.id == steps[1].trajectory.id


def test_malformed_call_gets_an_observation(tool_server):
    env = ReadFileEnv()
    ep = _episode(tool_server, env, max_turns=2, stop=['"hello'])
    assert "<tool_call>" in ep.steps[0].content and not ep.steps[0].tool_calls
    assert ep.steps[0].observations == [MALFORMED_CALL] and env.calls == []
    assert len(ep.steps) == 2 and env.closed and ep.score is not None


def test_environment_failure_ends_a_scored_closed_episode(tool_server):
    env = ReadFileEnv(fail_on_call=True)
    ep = _episode(tool_server, env, max_turns=3)
    assert ep.finish == "error" and "disk vanished" in ep.error
    assert len(ep.steps) == 1 and env.closed and ep.score is not None
    [s] = episode_samples(ep, _template())
    assert s.status == SampleStatus.COMPLETED and s.metadata["finish"] == "error"


def test_episode_without_a_step_is_one_failed_sample():
    class Broken(ReadFileEnv):
        def reset(self):
            raise ConnectionError("lease lost")

    env = Broken()
    chat = ServerChat("http://127.0.0.1:9", "/nonexistent-never-used")
    ep = asyncio.run(run_episode(chat, LocalEnvHandle(env), {}, 2))
    assert ep.finish == "error" and "lease lost" in ep.error and ep.steps == [] and env.closed
    [s] = episode_samples(ep, _template())
    assert s.status == SampleStatus.FAILED and "lease lost" in s.metadata["error"]


def make_read_env(task_key: str, task: dict) -> ReadFileEnv:
    """Factory for a pool server (``tests.test_agent_loop:make_read_env``)."""
    return ReadFileEnv()


def test_a_lease_lost_mid_episode_ends_it_scored_and_released(tool_server, tmp_path):
    from openclaw_rl.agentic.pool_client import EnvHandle, PoolClient
    from tests.test_pool_server import serve

    class LosesLease(EnvHandle):
        """The pool drops the lease (a TTL expiry, a restart) just before the tool call."""

        async def exec_tool(self, tool_call):
            await self.client.post(self.url, "close", {"lease_id": self.lease_id}, self.http)
            return await super().exec_tool(tool_call)

    with serve(tmp_path, "openclaw_rl.agentic.pool_server", "--env", "read=tests.test_agent_loop:make_read_env",
               "--env-type", "read") as (url, _proc):
        async def go():
            async with PoolClient([url]) as client:
                handle = await client.allocate("t", request_id="r1")
                handle.__class__ = LosesLease
                chat = ServerChat(tool_server.base_url, str(tool_server.buffer_dir), api_key=tool_server.api_key)
                ep = await run_episode(chat, handle, {"temperature": 0.0, "max_new_tokens": 64}, 3,
                                       system_prompt=SYSTEM)
                return ep, (await client.status())[0]

        ep, status = asyncio.run(go())
    assert ep.finish == "error" and "lease" in ep.error.lower() and len(ep.steps) == 1
    assert ep.score is None and status["in_use"] == 0  # nothing leaked on the pool
    [s] = episode_samples(ep, _template())
    assert s.status == SampleStatus.COMPLETED and s.reward is None and s.metadata["finish"] == "error"
