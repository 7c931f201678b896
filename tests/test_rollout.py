"""The rollout side: turns -> samples, judging loop, data source, exactly-once bookkeeping."""

from __future__ import annotations

import asyncio
import threading

import pytest

from openclaw_rl.capture.store import TrajectoryStore, TurnRecord
from openclaw_rl.rollout.custom_rm import CustomRewardJudge
from openclaw_rl.rollout.data_source import DataSourceClosed, RolloutTimeout, StoreDataSource, TrafficEnded
from openclaw_rl.rollout.judge_loop import JudgeLoop, JudgeResult
from openclaw_rl.rollout.openclaw_rollout import generate_rollout
from openclaw_rl.rollout.samples import UntokenizedTurnError, turn_to_sample
from openclaw_rl.rollout.service import PRMTurnJudge
from slime.plugins.loader import PluginError
from slime.config.run_args import parse_run_args


def _turn(store: TrajectoryStore, sid: str, version: int = 0, next_state: str | None = "thanks",
          response=(7, 8, 9)) -> TurnRecord:
    store.touch_session(sid, "test")
    rec = store.add_turn(TurnRecord(session_id=sid, turn_type="main", messages=[{"role": "user", "content": "q"}],
                                    prompt_text="p", prompt_ids=[1, 2, 3], response_ids=list(response),
                                    response_logprobs=[-0.5] * len(response), response_text="abc",
                                    finish_reason="stop", weight_version=version))
    if next_state:
        store.set_next_state(rec.id, next_state, "user")
    else:
        store.finalize_turn(rec.id)
    return store.get_turn(rec.id)


class _FixedJudge:
    method = "fixed"

    def __init__(self, rewards):
        self.rewards = rewards

    async def judge(self, turn):
        r = self.rewards[turn.session_id]
        return JudgeResult(r, r != 0, {"verdict": int(r)})


def test_turn_to_sample_is_token_exact(tmp_path):
    store = TrajectoryStore(tmp_path)
    turn = _turn(store, "a", version=3)
    s = turn_to_sample(turn, 1.0, True)
    assert s.tokens == [1, 2, 3, 7, 8, 9] and s.response_length == 3 and s.prompt_length == 3
    assert s.rollout_log_probs == [-0.5] * 3 and s.loss_mask == [1, 1, 1]
    assert s.weight_version == 3 and s.source_id == turn.id
    assert turn_to_sample(turn, None, False).loss_mask == [0, 0, 0]
    turn.response_ids = []
    with pytest.raises(UntokenizedTurnError):
        turn_to_sample(turn, 1.0, True)


def test_judge_loop_and_data_source(tmp_path):
    store = TrajectoryStore(tmp_path)
    for sid in ("pos", "neg", "zero"):
        _turn(store, sid)
    loop = JudgeLoop(store, _FixedJudge({"pos": 1.0, "neg": -1.0, "zero": 0.0}), num_workers=2)
    assert asyncio.run(loop.judge_once()) == 3
    assert loop.stats["verdict_pos"] == 1 and loop.stats["verdict_neg"] == 1 and loop.stats["verdict_zero"] == 1
    counts = store.counts()
    assert counts["judged"] == 2 and counts["skipped"] == 1
    src = StoreDataSource(store)
    samples = src.take(2, timeout_s=5)
    assert sorted(s.reward for s in samples) == [-1.0, 1.0]
    with pytest.raises(RolloutTimeout):
        src.take(1, timeout_s=0.3)
    src.mark_trained(samples, step=1)
    assert store.counts()["trained"] == 2


def test_staleness_drop_and_release(tmp_path):
    store = TrajectoryStore(tmp_path)
    _turn(store, "old", version=0)
    _turn(store, "new", version=5)
    asyncio.run(JudgeLoop(store, _FixedJudge({"old": 1.0, "new": 1.0})).judge_once())
    src = StoreDataSource(store, max_staleness=2)
    src.current_version = 6
    (sample,) = src.take(1, timeout_s=5)
    assert sample.session_id == "new" and sample.metadata["staleness"] == 1
    assert src.stats["dropped_stale"] == 1
    src.release([sample])
    assert store.counts()["judged"] == 1


def test_newest_first_takes_the_freshest_turns_and_drops_those_behind_the_bound(tmp_path):
    """--sample-order newest: a step trains on the turns closest to the current policy; live turns
    more than --max-staleness versions behind are dropped (history turns are never stale)."""
    store = TrajectoryStore(tmp_path)
    for sid, version in (("v0", 0), ("v3", 3), ("v4", 4), ("v5", 5), ("v5b", 5)):
        _turn(store, sid, version=version)
    assert asyncio.run(JudgeLoop(store, _FixedJudge(dict.fromkeys(("v0", "v3", "v4", "v5", "v5b"), 1.0)),
                                 num_workers=4).judge_once()) == 5
    oldest = StoreDataSource(store, max_staleness=2)
    oldest.current_version = 5
    first = oldest.take(1, timeout_s=5)
    assert [s.session_id for s in first] == ["v3"] and oldest.stats["dropped_stale"] == 1  # v0 came up first
    oldest.release(first)
    newest = StoreDataSource(store, max_staleness=2, newest_first=True)
    newest.current_version = 6
    batch = newest.take(2, timeout_s=5)
    assert [s.session_id for s in batch] == ["v5b", "v5"] and [s.metadata["staleness"] for s in batch] == [1, 1]
    assert newest.stats["dropped_stale"] == 1  # v3: 3 versions behind, dropped before the claim
    assert [s.session_id for s in newest.take(1, timeout_s=5)] == ["v4"]
    assert store.counts().get("judged", 0) == 0


def test_newest_first_holds_out_for_the_gate_what_fell_behind_and_leaves_live_turns_to_history_only(tmp_path):
    """A turn that fell behind is held out for the promotion gate when its id says so, as oldest-first
    does when it comes up; a --history-only run drops no live turn."""
    store = TrajectoryStore(tmp_path)
    ids = {sid: _turn(store, sid, version=v).id for sid, v in (("a", 0), ("b", 0), ("c", 5))}
    assert asyncio.run(JudgeLoop(store, _FixedJudge(dict.fromkeys("abc", 1.0)), num_workers=4).judge_once()) == 3
    history_only = StoreDataSource(store, max_staleness=2, newest_first=True, history_only=True, finite=True)
    history_only.current_version = 6
    assert history_only.take(1) == [] and store.counts()["judged"] == 3
    assert ids == {"a": 1, "b": 2, "c": 3}
    src = StoreDataSource(store, max_staleness=2, newest_first=True, holdout_every=2)
    src.current_version = 6
    assert [s.session_id for s in src.take(1, timeout_s=5)] == ["c"]
    assert src.stats["held_out"] == 1 and src.stats["dropped_stale"] == 1
    assert store.get_turn(ids["b"]).status == "held_out" and store.get_turn(ids["a"]).status == "skipped"


def test_close_wakes_a_waiting_take(tmp_path):
    src = StoreDataSource(TrajectoryStore(tmp_path))
    threading.Timer(0.3, src.close).start()
    with pytest.raises(DataSourceClosed):
        src.take(1)


def test_a_wait_ends_once_the_live_traffic_ended_and_its_turns_are_used_up(tmp_path):
    """A benchmark's users are done (end_live_traffic): the trainer's wait ends at once when no
    recorded turn can still become a sample, and waits on while one is being judged."""
    store = TrajectoryStore(tmp_path)
    _turn(store, "pos")
    loop = JudgeLoop(store, _FixedJudge({"pos": 1.0, "late": -1.0}), num_workers=1)
    asyncio.run(loop.judge_once())
    src = StoreDataSource(store)
    with pytest.raises(RolloutTimeout) as waited:  # traffic still live: the wait runs to its timeout
        src.take(2, timeout_s=0.5)
    assert type(waited.value) is RolloutTimeout
    _turn(store, "late")  # recorded, not judged yet
    other = TrajectoryStore(tmp_path)  # another connection, as the bench's
    other.end_live_traffic()
    other.close()
    assert store.live_traffic_ended()
    threading.Timer(1.0, lambda: asyncio.run(loop.judge_once())).start()
    samples = src.take(2, timeout_s=600)  # the late turn is judged, then both are taken
    assert sorted(s.reward for s in samples) == [-1.0, 1.0]
    with pytest.raises(TrafficEnded, match="live traffic ended"):
        src.take(1, timeout_s=600)  # nothing left: at once, not after 600 s
    assert StoreDataSource(store, finite=True).take(1) == []  # offline data ends as before


def test_recover_trains_each_turn_exactly_once(tmp_path):
    """Turns trained after the checkpoint we resume from are trained again; earlier ones never."""
    store = TrajectoryStore(tmp_path)
    for sid in "abcd":
        _turn(store, sid)
    asyncio.run(JudgeLoop(store, _FixedJudge(dict.fromkeys("abcd", 1.0)), num_workers=4).judge_once())
    src = StoreDataSource(store)
    step1, step2 = src.take(2), src.take(1)
    src.mark_trained(step1, 1)
    src.mark_trained(step2, 2)
    (in_flight,) = src.take(1)  # claimed when the trainer died
    moved = store.recover(last_saved_step=1)
    assert moved == {"judging": 0, "claimed": 1, "trained_after_checkpoint": 1}
    again = {s.session_id for s in src.take(2)}
    assert again == {step2[0].session_id, in_flight.session_id}
    assert {t.session_id for t in store.turns(status="trained")} == {s.session_id for s in step1}


def test_custom_rm_plugin_and_errors(tmp_path):
    cfg = parse_run_args(["--model-path", "builtin:tiny-qwen3"])
    store = TrajectoryStore(tmp_path)
    turn = _turn(store, "x", response=(1, 200000 // 2, 5))
    judge = CustomRewardJudge("tests/plugins/low_ids_reward.py", cfg)
    res = asyncio.run(judge.judge(turn))
    assert res.trainable and res.reward == pytest.approx(2 * (2 / 3) - 1)
    with pytest.raises(PluginError, match="not found"):
        CustomRewardJudge("tests/plugins/missing.py", cfg)
    with pytest.raises(PluginError, match="no function"):
        CustomRewardJudge("tests/plugins/low_ids_reward.py:nope", cfg)


def test_prm_judge_skips_turns_without_next_state(tmp_path):
    store = TrajectoryStore(tmp_path)
    turn = _turn(store, "end", next_state=None)
    res = asyncio.run(PRMTurnJudge(prm=None).judge(turn))
    assert res.trainable is False and res.details["reason"] == "no_next_state"


def test_generate_rollout_groups_and_metrics(tmp_path):
    cfg = parse_run_args(["--rollout-batch-size", "2", "--rollout-timeout-s", "5"])
    store = TrajectoryStore(tmp_path)
    for sid in ("p", "n"):
        _turn(store, sid, version=0)
    asyncio.run(JudgeLoop(store, _FixedJudge({"p": 1.0, "n": -1.0})).judge_once())
    src = StoreDataSource(store)
    src.current_version = 1
    groups, metrics = generate_rollout(cfg, 0, src)
    assert [len(g) for g in groups] == [1, 1]
    assert metrics["reward/mean"] == 0.0 and metrics["reward/pos"] == 1 and metrics["reward/neg"] == 1
    assert metrics["rollout/staleness_mean"] == 1.0
    with pytest.raises(ValueError):
        generate_rollout(cfg, 1, src, evaluation=True)
