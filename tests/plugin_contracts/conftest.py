"""Real inputs for the contract checks: a SQLite trajectory store with judged turns (judged by a
real reward plugin through the real judge loop) and the run config."""

from __future__ import annotations

import asyncio

import pytest

from openclaw_rl.capture.store import TrajectoryStore, TurnRecord
from openclaw_rl.rollout.custom_rm import CustomRewardJudge
from openclaw_rl.rollout.judge_loop import JudgeLoop
from slime.config.run_args import parse_run_args

TINY = "builtin:tiny-qwen3"
LOW_IDS = "tests/plugins/low_ids_reward.py"


@pytest.fixture
def run_cfg():
    """``parse_run_args`` on the tiny model with extra flags."""
    return lambda *extra: parse_run_args(["--model-path", TINY, "--rollout-timeout-s", "30", *extra])


@pytest.fixture
def judged_store(tmp_path, run_cfg):
    """A store with four main turns (ids 10.. and 150000.., so rewards differ), judged by the
    deterministic ``low_ids_reward`` plugin."""
    store = TrajectoryStore(tmp_path / "buf")
    for i in range(4):
        sid = f"c{i}"
        store.touch_session(sid, "test")
        ids = list(range(10, 13)) if i % 2 else list(range(150000, 150003))
        rec = store.add_turn(TurnRecord(session_id=sid, turn_type="main", messages=[{"role": "user", "content": "q"}],
                                        prompt_text="q", prompt_ids=[1, 2], response_ids=ids,
                                        response_logprobs=[-0.5] * 3, response_text="a", finish_reason="stop",
                                        weight_version=0))
        store.set_next_state(rec.id, "thanks", "user")
    asyncio.run(JudgeLoop(store, CustomRewardJudge(LOW_IDS, run_cfg())).judge_once(limit=4))
    yield store
    store.close()
