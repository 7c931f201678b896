"""Rollout hook contract (:class:`slime.plugins.hooks.RolloutFunction`): the live rollout and the example
wrapping it hand out groups of judged samples from a real store; a misaligned rollout fails."""

from __future__ import annotations

import pytest

from openclaw_rl.rollout.data_source import StoreDataSource
from openclaw_rl.rollout.service import LIVE_ROLLOUT
from slime.plugins.rollout import load_rollout_function
from tests.plugin_contracts.contracts import assert_rollout_contract, contract_path


@pytest.mark.parametrize("spec", [LIVE_ROLLOUT, "examples/plugins/custom_rollout.py"])
def test_rollouts_meet_the_contract(spec, judged_store, run_cfg):
    groups = assert_rollout_contract(load_rollout_function(spec), run_cfg("--rollout-batch-size", "2"),
                                     StoreDataSource(judged_store))
    assert sum(len(g) for g in groups) == 2


def test_a_user_rollout_meets_the_contract(judged_store, run_cfg):
    assert_rollout_contract(load_rollout_function(contract_path("rollout", LIVE_ROLLOUT)),
                            run_cfg("--rollout-batch-size", "2"), StoreDataSource(judged_store))


def test_a_misaligned_rollout_is_rejected(judged_store, run_cfg, tmp_path):
    bad = tmp_path / "bad_rollout.py"
    bad.write_text("def generate_rollout(args, rollout_id, data_source, evaluation=False):\n"
                   "    samples = data_source.take(1)\n"
                   "    for s in samples:\n"
                   "        s.reward = None\n"
                   "    return [samples]\n")
    with pytest.raises(AssertionError, match="finite reward"):
        assert_rollout_contract(load_rollout_function(str(bad)), run_cfg(), StoreDataSource(judged_store))
