"""Generate hook contract (:class:`slime.plugins.hooks.GenerateFunction`): the default generate and the
example fill samples with exact ids through a real intercept server; a misaligned one fails."""

from __future__ import annotations

import pytest

from openclaw_rl.rollout.prompt_rollout import DEFAULT_GENERATE, sampling_params
from slime.plugins.rollout import load_generate_function
from tests.plugin_contracts.contracts import assert_generate_contract, contract_path


def _args(run_cfg, server):
    return run_cfg("--rollout-max-response-len", "4").with_section_values(
        "service", server_url=server.base_url, rl_buffer_dir=str(server.buffer_dir), api_key=server.api_key)


@pytest.mark.parametrize("spec", [DEFAULT_GENERATE, "examples/plugins/custom_generate.py"])
def test_generates_meet_the_contract(spec, tiny_server, run_cfg):
    args = _args(run_cfg, tiny_server)
    (s,) = assert_generate_contract(load_generate_function(spec), args, "Say hi.", sampling_params(args))
    assert s.response_length <= 4


def test_a_user_generate_meets_the_contract(tiny_server, run_cfg):
    args = _args(run_cfg, tiny_server)
    assert_generate_contract(load_generate_function(contract_path("generate", DEFAULT_GENERATE)), args,
                             [{"role": "user", "content": "Hello"}], sampling_params(args))


def test_a_misaligned_generate_is_rejected(tiny_server, run_cfg, tmp_path):
    bad = tmp_path / "bad_generate.py"
    bad.write_text("async def generate(args, sample, sampling_params):\n"
                   "    sample.response = 'hi'\n"
                   "    return sample\n")
    args = _args(run_cfg, tiny_server)
    with pytest.raises(AssertionError):
        assert_generate_contract(load_generate_function(str(bad)), args, "Say hi.", sampling_params(args))
