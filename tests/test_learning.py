"""End to end on Ray: live traffic through the intercept server, a deterministic reward plugin,
PPO steps on the tiny model, weights published back to serving. The mean reward must rise."""

from __future__ import annotations

import json
import statistics
import threading

import httpx
import pytest
import ray

from openclaw_rl.server.launcher import free_port
from openclaw_rl.tls import tls_context
from slime.config.run_args import parse_run_args
from slime.train import train

pytestmark = pytest.mark.ray


# tiny-qwen3's random weights spread the next token almost evenly over 151,936 ids (entropy 11.92
# nats of 11.93): sampled at temperature 1 a token the update raised was rarely drawn again, and
# the rise was a lottery. At 0.1 the logits' small differences count ten times (the trainer
# recomputes log-probs at each sample's sampling_temperature) and the base replies still score ~0
TEMPERATURE = 0.1


def _traffic(port: int, stop: threading.Event, failures: list) -> None:
    """A stream of one-turn sessions (X-Session-Done finalises each turn at once)."""
    url = f"http://127.0.0.1:{port}"
    while not stop.is_set():
        try:
            if httpx.get(url + "/healthz", timeout=2, verify=tls_context()).status_code == 200:
                break
        except httpx.HTTPError:
            stop.wait(0.5)
    i = 0
    while not stop.is_set():
        try:
            r = httpx.post(url + "/v1/chat/completions", timeout=120, verify=tls_context(),
                           headers={"Authorization": "Bearer sk-learn", "X-Session-Done": "true"},
                           json={"messages": [{"role": "user", "content": f"say something #{i % 7}"}],
                                 "max_tokens": 8, "temperature": TEMPERATURE})
        except httpx.TransportError:
            break  # the run stopped its server (a mid-run outage would starve the run and fail it)
        if r.status_code != 200:
            failures.append(r.text)
        i += 1


def test_mean_reward_rises_with_a_deterministic_reward(tmp_path):
    port = free_port()
    cfg = parse_run_args([
        "--model-path", "builtin:tiny-qwen3", "--num-rollout", "16", "--rollout-batch-size", "8",
        # beta2 0.999: at 0.99 Adam's second moment forgot the early gradients within a few steps,
        # so the vanishing gradients of a saturated policy (every reward +1, no baseline) became
        # full-size steps again, and offline 1 seed of 17 fell back from 1.0 to -0.2 for 8 steps
        "--advantage-estimator", "broadcast", "--lr", "2e-2", "--adam-beta2", "0.999",
        "--custom-rm-path", "tests/plugins/low_ids_reward.py", "--rl-buffer-dir", str(tmp_path / "buf"),
        "--save", str(tmp_path / "ckpt"), "--save-interval", "8", "--log-dir", str(tmp_path / "logs"),
        "--port", str(port), "--api-key", "sk-learn", "--rollout-max-response-len", "8",
        # on-policy: each step trains on replies of the weights it updates. With one version of
        # staleness a step moves the policy so far that PPO's clip (0.2) zeroes most stale tokens'
        # gradient, and the rise came late or not at all the more replies were stale (the busier
        # the machine): at temperature 1 and lr 5e-2 it failed 1 run in ~6 under load
        "--max-staleness", "0",
        # the reward reads every sampled token, so replies cut at 8 tokens are trained, not masked
        "--truncated-replies", "train",
        # RL mechanics on a tiny random model: its replies are garbage text by nature and a step at
        # temperature 0.1 moves it several nats per token, which the collapse guard (tested in
        # tests/slime) would stop, and a random policy's reference NLL and canary replies say
        # nothing the promotion gate could use
        "--degenerate-samples", "train", "--collapse-guard", "off", "--promotion-gate", "off"])
    stop, failures = threading.Event(), []
    driver = threading.Thread(target=_traffic, args=(port, stop, failures), daemon=True)
    driver.start()
    try:
        summary = train(cfg)
    finally:
        stop.set()
        driver.join(60)
        ray.shutdown()
    assert summary["steps"] == 16 and summary["versions_published"] == 16
    assert failures == []
    rows = [json.loads(line) for line in next((tmp_path / "logs").glob("run-*/metrics.jsonl")).open()]
    assert sum(r["samples/truncated"] for r in rows) > 0 and all(r["samples/truncated_masked"] == 0 for r in rows)
    # the base weights' replies (step 1, on-policy) against the best four steps in a row after
    # them. Measured 2026-12-06 with an offline replay of the same update
    # (tests/support/learning_replay.py: tiny-qwen3, 8 replies of 8 tokens a step, on-policy) at
    # temperature 0.1, lr 2e-2 and beta2 0.999: on 20 of 20 seeds the base replies scored -0.19 to
    # 0.19, the mean first passed 0.5 at steps 3-6 and averaged 0.96-1.0 over four steps in a row
    # ending by step 9; 19 stayed at 1.0 to step 16, one fell at step 10 to a deterministic reply
    # that scores exactly 0 (its advantage is then 0: Binary RL has no baseline to move it). In the
    # loop, under load, 6 runs' base replies scored -0.16 to 0.25 and the mean first passed 0.5 at
    # steps 2-8. At temperature 1 (this test until then: lr 5e-2, beta2 0.99, 24 steps,
    # the last 8 against the first 8) it came at steps 6-15 or not within 32 steps offline, and
    # in the loop at steps 11-18 in 6 runs and not within 24 steps in 1 CI run.
    rewards = [r["reward/mean"] for r in rows]
    best = max(statistics.fmean(rewards[i:i + 4]) for i in range(1, len(rewards) - 3))
    assert best > 0.8 and best - rewards[0] > 0.4, rewards
    assert (tmp_path / "ckpt" / "checkpoint-latest").exists()
    assert rows[-1]["weight_version"] == 16
