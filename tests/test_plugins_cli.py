"""``python slime/train.py`` with plugins: a bad plugin is a one-line error before anything starts
(exit 2); a plugin that fails too often during training stops the run with one line (exit 1)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.support.ray_head import driver_env
from tests.support.sessions import record_sessions

REPO = Path(__file__).resolve().parent.parent


def _train(*args: str, cwd: Path = REPO, timeout: int = 120,
           ray_port: int | None = None) -> subprocess.CompletedProcess:
    """``slime/train.py`` on the shared head at ``ray_port`` (``ray_head``), or with no Ray address
    (the runs that must fail before Ray starts)."""
    env = driver_env(ray_port) if ray_port else {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    return subprocess.run([sys.executable, str(REPO / "slime" / "train.py"), "--model-path", "builtin:tiny-qwen3",
                           "--num-rollout", "1", *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout)


def _error_line(stderr: str) -> str:
    """The one ``slime/train.py: error:`` line (Ray may still print actor logs after it)."""
    lines = [line for line in stderr.splitlines() if line.startswith("slime/train.py: error:")]
    assert len(lines) == 1, stderr[-4000:]
    return lines[0]


def _write(path: Path, body: str) -> str:
    path.write_text(textwrap.dedent(body))
    return str(path)


@pytest.mark.parametrize("model_path, expected", [
    ("/nonexistent", "no such folder"), ("builtin:nosuch", "unknown built-in model"),
    ("./", "not a model folder"),
])
def test_a_model_path_that_names_no_model_fails_before_ray_starts(tmp_path, model_path, expected):
    """One line and exit 2 in seconds, and nothing written where it ran (it took 45 s, a Ray abort
    dump and Hugging Face's 'Repo id must use alphanumeric chars' before)."""
    r = _train("--model-path", model_path, cwd=tmp_path, timeout=60)
    assert r.returncode == 2, r.stderr[-3000:]
    line = _error_line(r.stderr)
    shown = str(tmp_path) if model_path == "./" else model_path  # a path flag is made absolute first
    assert f"--model-path {shown}: " in line and expected in line, line
    assert list(tmp_path.iterdir()) == []


def test_bad_plugins_fail_at_start_up_with_one_line(tmp_path):
    loss_float = _write(tmp_path / "loss_float.py", """
        def compute_loss(policy_logits, reference_logits, rewards, advantages, config):
            return 0.5
    """)
    rollout_bad = _write(tmp_path / "rollout.py", "def generate_rollout(args):\n    return []\n")
    cases = [
        (["--custom-loss-function-path", str(tmp_path / "missing.py")], "--custom-loss-function-path", "not found"),
        (["--custom-loss-function-path", loss_float], "--custom-loss-function-path",
         "returned float; expected a scalar torch.Tensor (probe batch, before training)"),
        (["--custom-loss-function-path", "examples/method-template/custom_loss.py:nope"],
         "--custom-loss-function-path", "no function 'nope'"),
        (["--rollout-function-path", rollout_bad], "--rollout-function-path",
         "expected (args, rollout_id, data_source, evaluation=...)"),
        (["--custom-generate-function-path", "examples/plugins/custom_generate.py"],
         "--custom-generate-function-path", "needs a rollout that generates"),
        (["--custom-rm-path", "examples/plugins/slime_reward.py:nope"], "--custom-rm-path", "no function 'nope'"),
    ]
    for args, flag, expected in cases:
        r = _train(*args, cwd=tmp_path)  # run from elsewhere: repo-relative specs still resolve
        assert r.returncode == 2, r.stderr[-3000:]
        line = _error_line(r.stderr)
        assert flag in line and expected in line, r.stderr[-3000:]
        assert "Traceback" not in r.stderr


@pytest.mark.ray
@pytest.mark.slow
def test_a_reward_plugin_failing_too_often_stops_the_run(tiny_server, ray_head, tmp_path):
    data = record_sessions(tiny_server, tmp_path / "sessions.jsonl")
    spec = _write(tmp_path / "broken_rm.py", """
        def reward(args, sample):
            raise TimeoutError("reward service unreachable")
    """)
    r = _train("--data-path", str(data), "--custom-rm-path", spec, "--rollout-batch-size", "2",
               "--advantage-estimator", "broadcast",
               "--rl-buffer-dir", str(tmp_path / "buf"), "--log-dir", str(tmp_path / "logs"),
               "--save", str(tmp_path / "ckpt"), timeout=600, ray_port=ray_head[0])
    assert r.returncode == 1, r.stderr[-4000:]
    last = _error_line(r.stderr)
    assert f"samples failed in --custom-rm-path {spec}:reward" in last
    assert "--max-plugin-failure-fraction 0.5" in last and "TimeoutError: reward service unreachable" in last
    assert "Traceback (most recent call last)" in r.stderr  # each failure's traceback is in the log
    assert not (tmp_path / "ckpt" / "checkpoint-latest").exists()


@pytest.mark.ray
@pytest.mark.slow
def test_a_nan_loss_at_training_time_stops_the_run_before_the_update(tiny_server, ray_head, tmp_path):
    data = record_sessions(tiny_server, tmp_path / "sessions.jsonl", sessions=("n1", "n2", "n3"))
    spec = _write(tmp_path / "nan_loss.py", """
        def compute_loss(policy_logits, reference_logits, rewards, advantages, config):
            if config["num_samples"] > 2:  # passes the 2-sample start-up probe, fails in training
                return policy_logits.sum() * float("nan")
            return policy_logits.sum()
    """)
    r = _train("--data-path", str(data), "--custom-rm-path", "tests/plugins/low_ids_reward.py",
               "--custom-loss-function-path", spec, "--rollout-batch-size", "3", "--micro-batch-size", "3",
               "--advantage-estimator", "broadcast", "--truncated-replies", "train",  # 6-token replies are cut
               # all 3 samples are trained even when the random model sampled an id outside the
               # vocabulary (masked by default: the loss would then see 2, like the probe)
               "--degenerate-samples", "train",
               "--rl-buffer-dir", str(tmp_path / "buf"), "--log-dir", str(tmp_path / "logs"),
               "--save", str(tmp_path / "ckpt"), timeout=600, ray_port=ray_head[0])
    assert r.returncode == 1, r.stderr[-4000:]
    assert _error_line(r.stderr) == (f"slime/train.py: error: loss function plugin {spec}:compute_loss (simple convention): "
                    "returned a non-finite loss (nan); optimizer step skipped, weights unchanged")
    assert not (tmp_path / "ckpt" / "checkpoint-latest").exists()
