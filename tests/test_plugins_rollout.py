"""The rollout hook (``--rollout-function-path``): loading, slime's return shapes, an example that
wraps the live rollout on a real store."""

from __future__ import annotations

import asyncio
import textwrap

import pytest

from openclaw_rl.capture.store import TrajectoryStore, TurnRecord
from openclaw_rl.rollout.data_source import StoreDataSource
from openclaw_rl.rollout.judge_loop import JudgeLoop, JudgeResult
from slime.config.arguments import parse_args
from slime.plugins.loader import PluginError
from openclaw_rl.rollout.service import LIVE_ROLLOUT, PROMPT_ROLLOUT
from slime.plugins.rollout import load_rollout_function, normalize_rollout_output, rollout_spec
from slime.record.sample import Sample
from slime.config.run_args import parse_run_args


class _Reward:
    method = "fixed"

    async def judge(self, turn):
        return JudgeResult(1.0, True, {})


def test_example_rollout_wraps_the_live_rollout(tmp_path):
    store = TrajectoryStore(tmp_path)
    for i, finish in enumerate(("stop", "length", "stop")):
        store.touch_session(f"s{i}", "test")
        rec = store.add_turn(TurnRecord(session_id=f"s{i}", turn_type="main", messages=[], prompt_text="p",
                                        prompt_ids=[1, 2], response_ids=[3, 4], response_logprobs=[-1.0, -1.0],
                                        response_text="r", finish_reason=finish, weight_version=0))
        store.set_next_state(rec.id, "ok", "user")
    asyncio.run(JudgeLoop(store, _Reward()).judge_once(limit=3))
    cfg = parse_run_args(["--rollout-batch-size", "3", "--rollout-timeout-s", "5",
                      "--rollout-function-path", "examples/plugins/custom_rollout.py"])
    fn = load_rollout_function(rollout_spec(cfg))
    groups, metrics = normalize_rollout_output(fn(cfg, 0, StoreDataSource(store)), cfg.rollout_function_path)
    assert [len(g) for g in groups] == [1, 1] and metrics["rollout/truncated_dropped"] == 1


def test_default_rollout_and_return_shapes(tmp_path):
    assert rollout_spec(parse_args([])) == LIVE_ROLLOUT
    assert rollout_spec(parse_args(["--prompt-data", "p.jsonl"])) == PROMPT_ROLLOUT
    s = Sample(tokens=[1, 2], response_length=1, rollout_log_probs=[0.0])

    class Out:  # slime's RolloutFnTrainOutput
        samples, metrics = [[s, s]], {"m": 1}

    assert normalize_rollout_output([[s], [s, s]], "x") == ([[s], [s, s]], {})
    assert normalize_rollout_output([s, s], "x") == ([[s], [s]], {})
    assert normalize_rollout_output(([[s]], {"a": 1.0}), "x") == ([[s]], {"a": 1.0})
    assert normalize_rollout_output(Out(), "x") == ([[s, s]], {"m": 1})
    for bad in ({"samples": [s]}, [[s, "text"]], ([[s]], "metrics")):
        with pytest.raises(PluginError, match=r"^--rollout-function-path x returned .*expected a list of sample"):
            normalize_rollout_output(bad, "x")
    path = tmp_path / "r.py"
    path.write_text(textwrap.dedent("""
        def generate_rollout(args, rollout_id, data_source, *, evaluation=False, extra):
            return []
    """))
    with pytest.raises(PluginError, match="has the wrong parameters"):
        load_rollout_function(str(path))


def test_module_specs_resolve_under_the_working_directory(tmp_path, monkeypatch):
    pkg = tmp_path / "my_rollouts"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "live.py").write_text("def collect(args, rollout_id, data_source, evaluation=False):\n    return []\n")
    monkeypatch.chdir(tmp_path)
    assert load_rollout_function("my_rollouts.live.collect").__name__ == "collect"
