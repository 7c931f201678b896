"""Loss hook contract (:class:`slime.plugins.hooks.LossFunction`): the PPO default, the examples in every
convention and OPD's top-K loss return a finite differentiable scalar; a misaligned loss fails."""

from __future__ import annotations

import pytest

from slime.plugins.loss import LossPlugin, load_loss_plugin
from slime.algorithms.losses import policy_loss
from slime.plugins.loader import PluginError
from tests.plugin_contracts.contracts import assert_loss_contract, contract_path

EXAMPLES = ["examples/method-template/custom_loss.py", "examples/plugins/slime_loss.py",
            "openclaw_rl/opd/topk_loss.py:topk_reverse_kl_loss", "openclaw_rl.opd.topk_loss.topk_reverse_kl_loss"]


def test_the_default_loss_meets_the_contract():
    out = assert_loss_contract(LossPlugin(policy_loss, "typed", "policy_loss"))
    assert {"pg_loss", "pg_clipfrac", "approx_kl"} <= set(out.metrics())


@pytest.mark.parametrize("spec", EXAMPLES)
def test_example_losses_meet_the_contract(spec, run_cfg):
    assert_loss_contract(load_loss_plugin(spec, run_cfg()))  # slime's convention reads args


def test_a_user_loss_meets_the_contract(run_cfg):
    assert_loss_contract(load_loss_plugin(contract_path("loss", EXAMPLES[0]), run_cfg()))


def test_a_misaligned_loss_is_rejected(tmp_path, run_cfg):
    bad = tmp_path / "bad_loss.py"
    bad.write_text("def compute_loss(policy_logits, reference_logits, rewards, advantages, config):\n"
                   "    return policy_logits.detach().sum()\n")
    with pytest.raises(PluginError, match="no gradient"):
        assert_loss_contract(load_loss_plugin(str(bad), run_cfg()))
