"""Reward hook contract (:class:`slime.plugins.hooks.RewardFunction`, with the seed's ``get_reward_model``
and slime's batched form as adapters): every form scores live-turn samples with finite floats."""

from __future__ import annotations

import pytest

from openclaw_rl.rollout.custom_rm import turn_sample
from slime.plugins.reward import RewardPlugin
from tests.plugin_contracts.contracts import assert_reward_contract, contract_path

FORMS = {"tests/plugins/low_ids_reward.py": "slime", "examples/plugins/slime_reward.py:reward": "slime",
         "examples/plugins/slime_reward.py:batched_reward": "slime_batched"}


def _samples(store):
    return [turn_sample(t) for t in store.turns()]


@pytest.mark.parametrize("spec", sorted(FORMS))
def test_reward_forms_meet_the_contract(spec, judged_store, run_cfg):
    plugin = RewardPlugin(spec, run_cfg())
    assert plugin.convention == FORMS[spec]
    assert_reward_contract(plugin, _samples(judged_store))


def test_the_seed_form_meets_the_contract(judged_store, run_cfg, tiny_classifier):
    plugin = RewardPlugin("examples/method-template/custom_rm.py", run_cfg("--prm-model-path", str(tiny_classifier),
                                                                            "--num-judge-workers", "1"))
    assert plugin.convention == "simple"
    results = assert_reward_contract(plugin, _samples(judged_store))
    assert all(0.0 < r < 1.0 for r, _ in results)


def test_a_user_reward_meets_the_contract(judged_store, run_cfg):
    assert_reward_contract(RewardPlugin(contract_path("reward", "tests/plugins/low_ids_reward.py"), run_cfg()),
                           _samples(judged_store))


def test_a_misaligned_reward_is_rejected(judged_store, run_cfg, tmp_path):
    bad = tmp_path / "bad_rm.py"
    bad.write_text("def reward(args, sample):\n    return 'good'\n")
    with pytest.raises(AssertionError, match="raised ValueError"):
        assert_reward_contract(RewardPlugin(str(bad), run_cfg()), _samples(judged_store))
