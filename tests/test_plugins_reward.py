"""Reward plugins (``--custom-rm-path``) as the live judge: the simple ``get_reward_model`` form
on a real tiny classifier, slime's per-sample and batched forms, start-up errors, and failing
plugins (turn not trainable, traceback logged, too many failures in a step stop the run)."""

from __future__ import annotations

import asyncio
import logging
import textwrap

import pytest

from openclaw_rl.capture.store import TrajectoryStore, TurnRecord
from openclaw_rl.rollout.custom_rm import CustomRewardJudge, plugin_reward_texts, turn_sample
from openclaw_rl.rollout.data_source import StoreDataSource
from openclaw_rl.rollout.judge_loop import JudgeLoop
from slime.plugins.check import check_plugins
from slime.plugins.failures import FailureBudget, PluginFailureError
from slime.plugins.loader import PluginError
from slime.plugins.reward import RewardPlugin, reward_config, reward_texts
from slime.config.run_args import parse_run_args
from tests.support.tiny_classifier import positive_probability

SIMPLE_RM = "examples/method-template/custom_rm.py"
SLIME_RM = "examples/plugins/slime_reward.py"


def _cfg(*extra):
    return parse_run_args(["--model-path", "builtin:tiny-qwen3", *extra])


def _turns(store: TrajectoryStore, n: int, next_state: str | None = "thanks, perfect") -> list[TurnRecord]:
    out = []
    for i in range(n):
        sid = f"s{i}"
        store.touch_session(sid, "test")
        rec = store.add_turn(TurnRecord(
            session_id=sid, turn_type="main", messages=[{"role": "user", "content": f"question {i}"}],
            prompt_text=f"<|im_start|>user\nquestion {i}<|im_end|>\n<|im_start|>assistant\n",
            prompt_ids=[1, 2, 3], response_ids=list(range(10, 10 + i + 1)), response_logprobs=[-0.5] * (i + 1),
            response_text=f"answer {i}", finish_reason="stop", weight_version=0))
        if next_state:
            store.set_next_state(rec.id, next_state, "user")
        else:
            store.finalize_turn(rec.id)
        out.append(store.get_turn(rec.id))
    return out


def _plugin(tmp_path, body: str, name: str) -> str:
    path = tmp_path / name
    path.write_text(textwrap.dedent(body))
    return str(path)


# ------------------------------------------------------------------------------- simple form
def test_simple_example_on_a_tiny_classifier(tiny_classifier, tmp_path):
    cfg = _cfg("--prm-model-path", str(tiny_classifier), "--num-judge-workers", "2")
    judge = CustomRewardJudge(SIMPLE_RM, cfg)
    assert judge.plugin.convention == "simple" and judge.plugin.num_models == 2  # one per judge worker
    assert judge.name == f"--custom-rm-path {SIMPLE_RM}:get_reward_model"
    store = TrajectoryStore(tmp_path)
    turns = _turns(store, 5)
    loop = JudgeLoop(store, judge, num_workers=2)
    assert asyncio.run(loop.judge_once(limit=5)) == 5
    assert judge.plugin.num_models == 2 and loop.stats["failed"] == 0  # built once, not per call
    rewards = [store.judgement(t.id)["reward"] for t in turns]
    # each reward is the classifier's positive-class probability, computed here independently
    for t, r in zip(turns, rewards):
        assert r == pytest.approx(positive_probability(tiny_classifier, *plugin_reward_texts(turn_sample(t))), abs=1e-6)
    # the reward is exactly the classifier's positive-class probability of the documented text
    model = judge.plugin.fn(reward_config(cfg))
    prompt, response, next_state = plugin_reward_texts(turn_sample(turns[0]))
    assert prompt == turns[0].prompt_text and response == "answer 0" and next_state == "thanks, perfect"
    assert rewards[0] == pytest.approx(model.score(prompt, response, next_state), abs=1e-6)
    # slime's own default reads the typed fields only (the next state of a live turn is ours, in metadata)
    assert reward_texts(turn_sample(turns[0])) == (turns[0].prompt_text, "answer 0", "")


def test_simple_form_builds_one_model_per_worker_and_reads_config(tmp_path):
    spec = _plugin(tmp_path, """
        BUILT = []
        class Model:
            def __init__(self, config):
                self.bonus = config["bonus"]
            def score(self, prompt, response, next_state):
                return len(response) + self.bonus + (1.0 if "thanks" in next_state else 0.0)
        def get_reward_model(config):
            BUILT.append(config)
            return Model({"bonus": 0.5 if config["prm_model_path"] else 0.0})
    """, "counting_rm.py")
    judge = CustomRewardJudge(spec, _cfg("--num-judge-workers", "3"))
    built = judge.plugin.fn.__globals__["BUILT"]
    assert len(built) == 3 and built[0]["prm_model_path"].endswith("tiny-qwen3")  # builtin: resolved
    assert built[0]["num_judge_workers"] == 3 and built[0]["lr"] == 1e-6
    store = TrajectoryStore(tmp_path / "buf")
    turns = _turns(store, 6)
    asyncio.run(JudgeLoop(store, judge, num_workers=3).judge_once(limit=6))
    assert len(built) == 3
    assert [store.judgement(t.id)["reward"] for t in turns] == [len(f"answer {i}") + 1.5 for i in range(6)]


# ------------------------------------------------------------------------------- slime forms
def test_slime_per_sample_and_batched_forms(tmp_path):
    store = TrajectoryStore(tmp_path)
    turns = _turns(store, 4)
    single = CustomRewardJudge(SLIME_RM, _cfg())
    assert single.plugin.convention == "slime" and not hasattr(single, "judge_batch")
    assert asyncio.run(single.judge(turns[0])).reward == 1.0  # non-empty response, no label
    spec = _plugin(tmp_path, """
        CALLS = []
        async def reward(args, samples, **kwargs):
            CALLS.append([s.response for s in samples])
            return [{"reward": float(s.response_length), "length": s.response_length} for s in samples]
    """, "batched.py")
    batched = CustomRewardJudge(spec, _cfg())
    assert batched.plugin.convention == "slime_batched"
    loop = JudgeLoop(store, batched, num_workers=2)
    assert asyncio.run(loop.judge_once(limit=4)) == 4
    assert batched.plugin.fn.__globals__["CALLS"] == [[f"answer {i}" for i in range(4)]]  # one call
    for i, t in enumerate(turns):
        j = store.judgement(t.id)
        assert j["reward"] == float(i + 1) and j["details"]["length"] == i + 1
    example = CustomRewardJudge(SLIME_RM + ":batched_reward", _cfg())
    assert example.plugin.convention == "slime_batched"


# ------------------------------------------------------------------------------- start-up errors
def test_start_up_errors_are_one_line(tmp_path):
    no_score = _plugin(tmp_path, """
        def get_reward_model(config):
            return object()
    """, "no_score.py")
    raising = _plugin(tmp_path, """
        def get_reward_model(config):
            raise FileNotFoundError(config["prm_model_path"] + " is not a classifier")
    """, "raising.py")
    wrong = _plugin(tmp_path, """
        def reward(args, sample, extra_required):
            return 1.0
        def text_reward(args, sample) -> str:
            return "good"
    """, "wrong.py")
    cases = [(str(tmp_path / "nope.py"), "not found"),
             (wrong + ":missing", "no function 'missing'"),
             (wrong, "has the wrong parameters; expected (args, sample)"),
             (wrong + ":text_reward", "annotated to return str; expected float or dict with 'reward'"),
             (no_score, "returned object; expected an object with score(prompt: str, response: str, next_state: str)"),
             (raising, "get_reward_model(config) raised FileNotFoundError")]
    for spec, expected in cases:
        with pytest.raises(PluginError) as err:
            RewardPlugin(spec, _cfg(), num_workers=1)
        assert expected in str(err.value) and str(err.value).startswith("--custom-rm-path") \
            and "\n" not in str(err.value), str(err.value)
    # the driver's check loads and checks, but does not build the model
    assert check_plugins(_cfg("--custom-rm-path", raising))[-1].endswith("(simple form)")


# ------------------------------------------------------------------------------- failures
def test_failing_reward_marks_turns_and_too_many_stop_the_run(tmp_path, caplog):
    spec = _plugin(tmp_path, """
        def reward(args, sample):
            if sample.response.endswith(("1", "2", "3")):
                raise ZeroDivisionError("bad turn " + sample.response)
            if sample.response.endswith("4"):
                return float("nan")
            return 1.0
    """, "flaky.py")
    judge = CustomRewardJudge(spec, _cfg())
    store = TrajectoryStore(tmp_path / "buf")
    turns = _turns(store, 6)
    budget = FailureBudget(0.5, judge.name, step_size=6)
    loop = JudgeLoop(store, judge, num_workers=2, failure_budget=budget)
    with caplog.at_level(logging.ERROR):
        assert asyncio.run(loop.judge_once(limit=6)) == 6
    assert loop.stats["failed"] == 4 and loop.stats["trainable"] == 2
    failed = store.judgement(turns[1].id)
    assert failed["trainable"] is False or failed["trainable"] == 0
    assert "ZeroDivisionError: bad turn answer 1" in failed["details"]["error"]
    assert "Traceback" in failed["details"]["traceback"]
    assert "returned nan; expected a finite float" in store.judgement(turns[4].id)["details"]["error"]
    assert "Traceback (most recent call last)" in caplog.text and "ZeroDivisionError" in caplog.text
    # the data source checks the budget while it waits: 4 of 6 failed > 0.5 stops the run
    src = StoreDataSource(store)
    src.health_check = budget.check
    with pytest.raises(PluginFailureError) as err:
        src.take(6, timeout_s=5)
    msg = str(err.value)
    assert msg.startswith(f"4 of 6 samples failed in {judge.name} in one step "
                          "(more than --max-plugin-failure-fraction 0.5)")
    assert "\n" not in msg
    assert store.counts().get("claimed", 0) == 0  # claimed samples went back


def test_failure_budget_windows():
    budget = FailureBudget(0.25, "x", step_size=4)
    for failed in (True, False, False, False):  # 1 of 4 is not more than 0.25
        budget.record(failed, "E")
    budget.check()
    for failed in (True, True):  # a new window: 2 attempts do not make a step yet
        budget.record(failed, "E2")
    budget.check()
    with pytest.raises(PluginFailureError, match="2 of 2 samples failed in x"):
        budget.check(end_of_step=True)
    assert budget.total_failures == 3 and budget.total_attempts == 6
