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
# the reward scores every sampled token, and a reply of 4 has half the positions of 8 for one
# broadcast advantage to fix, so the 12 steps are enough (the measurements are in the test)
REPLY_TOKENS = 4
#: seconds between one reply and the next request
PACE_S = 0.1


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
                                 "max_tokens": REPLY_TOKENS, "temperature": TEMPERATURE})
        except httpx.TransportError:
            break  # the run stopped its server (a mid-run outage would starve the run and fail it)
        if r.status_code != 200:
            failures.append(r.text)
        i += 1
        # a user's pace, not a flood: unpaced, this one client sent ~25 requests a second, and on
        # one core 3,307 of 3,403 replies were dropped as stale (made while a step trained) and
        # each step took longer than the last (4 s to 17 s) as the server and the rollout
        # manager ground through them beside the trainer
        stop.wait(PACE_S)


def test_mean_reward_rises_with_a_deterministic_reward(tmp_path):
    port = free_port()
    cfg = parse_run_args([
        "--model-path", "builtin:tiny-qwen3", "--num-rollout", "12", "--rollout-batch-size", "8",
        # beta1 0, beta2 0.999: no momentum, and a long memory of the early gradients' size. With
        # momentum (beta1 0.9) the steps before the policy saturated kept pushing after it (every
        # reward +1, no baseline: its own gradient vanishes), and the mean swung back from 1.0 to
        # ~0 for several steps: offline 2 seeds of 19 (4-token replies), and once in CI (2026-12-06, 8-token replies:
        # -0.09, 0.13, 0.09, 0.56, -0.38, 0.91, then no four steps in a row above 0.44). At beta2
        # 0.99 the second moment forgot the early gradients, with the same effect
        "--advantage-estimator", "broadcast", "--lr", "2e-2", "--adam-beta1", "0", "--adam-beta2", "0.999",
        "--custom-rm-path", "tests/plugins/low_ids_reward.py", "--rl-buffer-dir", str(tmp_path / "buf"),
        "--save", str(tmp_path / "ckpt"), "--save-interval", "6", "--log-dir", str(tmp_path / "logs"),
        "--port", str(port), "--api-key", "sk-learn", "--rollout-max-response-len", str(REPLY_TOKENS),
        # on-policy: each step trains on replies of the weights it updates. With one version of
        # staleness a step moves the policy so far that PPO's clip (0.2) zeroes most stale tokens'
        # gradient, and the rise came late or not at all the more replies were stale (the busier
        # the machine): at temperature 1 and lr 5e-2 it failed 1 run in ~6 under load
        "--max-staleness", "0",
        # the reward reads every sampled token, so replies cut at REPLY_TOKENS are trained, not masked
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
    assert summary["steps"] == 12 and summary["versions_published"] == 12
    assert failures == []
    rows = [json.loads(line) for line in next((tmp_path / "logs").glob("run-*/metrics.jsonl")).open()]
    assert sum(r["samples/truncated"] for r in rows) > 0 and all(r["samples/truncated_masked"] == 0 for r in rows)
    # the base weights' replies (step 1, on-policy) against the best four steps in a row after
    # them. Measured 2026-12-06 with an offline replay of the same update
    # (tests/support/learning_replay.py --seeds 0-39 --steps 12 --reply-tokens 4 --adam-beta1 0:
    # tiny-qwen3, 8 replies of 4 tokens a step, on-policy, temperature 0.1, lr 2e-2, beta2 0.999):
    # on 40 of 40 seeds the base replies scored -0.31 to 0.44, the mean first passed 0.5 at steps
    # 2-8 and was 1.0 for four steps in a row within the 12. With beta1 0.9 (the earlier setting),
    # 1 seed of 19 never had four steps above 0.5 and another fell from 1.0 to ~0 for four steps;
    # with 8-token replies and beta1 0.9, 16 steps: offline 30 of 30 seeds passed, in CI 1 run
    # did not (above). In the loop pinned to one core (as under make test's two workers) the
    # mean first passed 0.5 at steps 3, 7 and 3 in 3 runs, then stayed at 1.0.
    rewards = [r["reward/mean"] for r in rows]
    best = max(statistics.fmean(rewards[i:i + 4]) for i in range(1, len(rewards) - 3))
    assert best > 0.8 and best - rewards[0] > 0.4, rewards
    assert (tmp_path / "ckpt" / "checkpoint-latest").exists()
    assert rows[-1]["weight_version"] == 12
