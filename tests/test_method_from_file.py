"""A method written in one file outside the packages trains through a real Ray job.

The test writes ``ToyMethod`` into a temporary folder: its own flag (``--toy-momentum``) and its
own advantage (the reward minus a running mean of past rewards), then submits
``slime/train.py --advantage-estimator <tmp>/toy_method.py:ToyMethod`` to a private Ray head for
two steps on recorded sessions (offline, a deterministic reward plugin). Nothing in ``slime/`` or
``openclaw_rl/`` names the method: it is found by its file path, in the driver and in both actors.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.support.ray_head import job_env
from tests.support.sessions import record_sessions

REPO = Path(__file__).resolve().parent.parent
pytestmark = [pytest.mark.ray, pytest.mark.slow]

TOY_METHOD = '''
"""A toy method: advantage = reward - running mean of the rewards of earlier steps."""
from dataclasses import dataclass

from slime.algorithms.advantages import broadcast_to_tokens
from slime.config.flags import flag
from slime.methods import Method


@dataclass(frozen=True)
class ToyFlags:
    toy_momentum: float = flag(0.9, "weight of the old running mean in its update", ge=0, le=1)


class ToyMethod(Method):
    """Reward minus a running mean (a baseline kept across steps in the driver's instance)."""

    Flags = ToyFlags

    def __init__(self, cfg):
        super().__init__(cfg)
        self.mean = 0.0

    def compute_advantages(self, samples):
        rewards = [float(s.reward) for s in samples]
        baseline = self.mean
        for s, r in zip(samples, rewards):
            s.advantages = broadcast_to_tokens(s, r - baseline)
        m = self.flags.toy_momentum
        self.mean = m * self.mean + (1 - m) * sum(rewards) / len(rewards)
        return list(samples), {"toy/baseline": baseline, "toy/momentum": m,
                               "toy/adv_mean": sum(r - baseline for r in rewards) / len(rewards)}
'''


def test_a_method_from_one_file_trains_two_steps_in_a_ray_job(tiny_server, ray_head, tmp_path):
    port, dash = ray_head
    method_dir = tmp_path / "my-method"
    method_dir.mkdir()
    (method_dir / "toy_method.py").write_text(textwrap.dedent(TOY_METHOD))
    data = record_sessions(tiny_server, tmp_path / "sessions.jsonl")
    env = job_env(port, dash)
    train = [sys.executable, "slime/train.py", "--model-path", "builtin:tiny-qwen3",
             "--advantage-estimator", f"{method_dir}/toy_method.py:ToyMethod", "--toy-momentum", "0.5",
             "--data-path", str(data), "--custom-rm-path", "tests/plugins/low_ids_reward.py",
             "--rollout-batch-size", "2", "--num-rollout", "2", "--rollout-max-response-len", "8", "--lr", "1e-3",
             "--truncated-replies", "train",  # the tiny model's 6-token replies are all cut
             # the method's mechanics on a random policy, whose garbage replies the degenerate-sample filter
             # would mask now and then (tests/slime/test_degenerate_samples.py checks the filter)
             "--degenerate-samples", "train",
             "--rl-buffer-dir", str(tmp_path / "buf"), "--log-dir", str(tmp_path / "logs"),
             "--save", str(tmp_path / "ckpt")]
    r = subprocess.run(["ray", "job", "submit", "--address", f"http://127.0.0.1:{dash}", "--working-dir", str(REPO),
                        "--", *train], env={**env, "PATH": f"{Path(sys.executable).parent}:{env['PATH']}"},
                       cwd=tmp_path, capture_output=True, text=True, timeout=900)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out[-6000:]
    assert "succeeded" in out
    rows = [json.loads(line) for line in next((tmp_path / "logs").glob("run-*/metrics.jsonl")).read_text().splitlines()]
    assert [row["step"] for row in rows] == [1, 2]
    assert all(row["train/skipped"] == 0.0 and row["train/n_trained_samples"] == 2.0 for row in rows)
    first, second = rows
    assert first["toy/momentum"] == second["toy/momentum"] == 0.5  # the method's own flag reached it
    assert first["toy/baseline"] == 0.0
    assert second["toy/baseline"] == pytest.approx(0.5 * first["reward/mean"])  # its state lives across steps
    for row in rows:  # its advantage is what was trained on
        assert row["toy/adv_mean"] == pytest.approx(row["reward/mean"] - row["toy/baseline"])
    assert (tmp_path / "ckpt" / "checkpoint-latest" / "trainer_state.json").is_file()
