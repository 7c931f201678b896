"""Rollout service contract (:class:`slime.plugins.hooks.RolloutService`): the OpenClaw service's class
protocol for live, prompt-dataset and offline configs, and a running offline instance (recorded
sessions, a reward plugin as judge) that hands out samples, publishes and closes."""

from __future__ import annotations

from openclaw_rl.rollout.service import LIVE_ROLLOUT, PROMPT_ROLLOUT, OpenClawRolloutService
from slime.methods import load_method_class
from slime.orchestration.services import load_service_class
from tests.plugin_contracts.contracts import (assert_rollout_service_class_contract, assert_rollout_service_contract,
                                              assert_sample_contract)
from tests.support.sessions import record_sessions


def test_the_registered_service_is_openclaws():
    assert load_service_class(None) is OpenClawRolloutService is load_service_class("openclaw")


def test_the_class_protocol(run_cfg, tmp_path):
    live = assert_rollout_service_class_contract(OpenClawRolloutService, run_cfg())
    assert (live.spec, live.groups, live.generates) == (LIVE_ROLLOUT, False, False)
    prompts = assert_rollout_service_class_contract(
        OpenClawRolloutService, run_cfg("--prompt-data", "examples/plugins/prompts.jsonl"))
    assert (prompts.spec, prompts.groups, prompts.generates) == (PROMPT_ROLLOUT, True, True)


def test_an_offline_instance(tiny_server, run_cfg, tmp_path):
    data = record_sessions(tiny_server, tmp_path / "sessions.jsonl", sessions=("r1", "r2"))
    cfg = run_cfg("--advantage-estimator", "broadcast", "--data-path", str(data), "--custom-rm-path",
                  "tests/plugins/low_ids_reward.py", "--rl-buffer-dir", str(tmp_path / "buf"), "--rollout-batch-size", "2")
    assert assert_rollout_service_class_contract(OpenClawRolloutService, cfg).groups is False
    service = OpenClawRolloutService(cfg, None, load_method_class("broadcast")(cfg))
    try:
        assert_rollout_service_contract(service)
        samples = service.data_source.take(2, timeout_s=60)
        for s in samples:
            assert_sample_contract(s, judged=True)
        service.data_source.mark_trained(samples, 1)
        assert service.publish_weights("/nowhere", 1) == 1  # offline: nothing serves, the version counts
        assert service.metrics()["data/trained"] == 2 and service.rollout_args().rl_buffer_dir == str(tmp_path / "buf")
    finally:
        service.close()
