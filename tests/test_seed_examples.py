"""The seed's configuration examples, run as written through the launch scripts.

Each example sets the environment as the seed's README shows, runs a launch script from another
directory with ``TRAIN_JOB_DRY_RUN=1`` (the helper resolves the paths, builds the command and the
job's environment, and submits nothing), then parses that command the way the job does (the
job's environment, relative paths against ``SLIME_CALLER_CWD``) and runs every start-up check of
``slime/train.py`` (:func:`slime.train.check_run`). The seed's plugin example trains for real
(``python slime/train.py`` with only the plugins and ``DATA_PATH``).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from slime.config.flags import ConfigError
from slime.config.run_args import parse_run_args, with_absolute_paths
from slime.train import check_run
from tests.support.ray_head import driver_env

REPO = Path(__file__).resolve().parent.parent
SESSION = {"session_id": "user_session_abc123", "turns": [
    {"type": "main", "prompt": "Help me refactor this function to use async/await",
     "response": "Here is the refactored version: ...",
     "next_state": "The user accepted the change and said 'perfect, thanks!'", "trainable": True},
    {"type": "side", "prompt": "What is 2+2?", "response": "4", "trainable": False}]}


def _workdir(tmp_path: Path) -> Path:
    work = tmp_path / "elsewhere"
    work.mkdir()
    (work / "data").mkdir()
    (work / "data" / "sessions.jsonl").write_text(json.dumps(SESSION) + "\n")
    return work


def _dry_run(script: str, cwd: Path, *args: str, **env: str) -> tuple[list[str], dict, str]:
    """Run a launch script in dry-run mode; returns (trainer argv, job env vars, printed text)."""
    full = {k: v for k, v in os.environ.items() if k not in ("DATA_PATH", "RAY_ADDRESS")}
    full.update(PYTHON=sys.executable, MODEL_PATH="builtin:tiny-qwen3", TRAIN_JOB_DRY_RUN="1", **env)
    r = subprocess.run(["bash", str(REPO / script), *args], cwd=cwd, env=full, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    argv = json.loads(re.search(r"^TRAIN_JOB_ARGV=(.*)$", r.stdout, re.M).group(1))
    runtime = json.loads(re.search(r"^TRAIN_JOB_RUNTIME_ENV=(.*)$", r.stdout, re.M).group(1))
    return argv, runtime["env_vars"], r.stdout


def _job_config(argv: list[str], env_vars: dict):
    """The config the job builds: its environment, paths against the caller's directory, checked."""
    cfg = with_absolute_paths(parse_run_args(argv, environ=env_vars), cwd=env_vars["SLIME_CALLER_CWD"])
    check_run(cfg)
    return cfg


def test_env_vars_and_ckpt_args_as_written(tmp_path):
    """The seed's env block and CKPT_ARGS="--save-interval 100 --save-dir $CKPT_SAVE_DIR" (no
    --model-path, relative folders), run from another directory."""
    work = _workdir(tmp_path)
    prm = work / "models" / "prm"
    shutil.copytree(Path(_resolve("builtin:tiny-qwen3")), prm)
    argv, env_vars, out = _dry_run(
        "openclaw-combine/run_qwen3_7b_openclaw_combine.sh", work, DATA_PATH="data/sessions.jsonl",
        CKPT_SAVE_DIR="./checkpoints", CKPT_ARGS="--save-interval 100 --save-dir ./checkpoints",
        PRM_MODEL_PATH="models/prm", JUDGE_MODEL_PATH="models/prm", RL_BUFFER_DIR="buf", LOG_DIR="logs")
    for name, value in (("CKPT_SAVE_DIR", work / "checkpoints"), ("RL_BUFFER_DIR", work / "buf"),
                        ("LOG_DIR", work / "logs"), ("DATA_PATH", work / "data" / "sessions.jsonl")):
        assert f": {name}={value}\n" in out  # printed absolute before the job starts
    assert env_vars["SLIME_CALLER_CWD"] == str(work)
    assert env_vars["PRM_MODEL_PATH"] == str(prm) and env_vars["JUDGE_MODEL_PATH"] == str(prm)
    cfg = _job_config(argv, env_vars)
    assert cfg.model_path == "builtin:tiny-qwen3" and cfg.save == str(work / "checkpoints")
    assert cfg.save_interval == 100 and cfg.advantage_estimator == "combine"
    assert cfg.prm_model_path == str(prm) and cfg.judge_model_path == str(prm)
    assert cfg.data_path == str(work / "data" / "sessions.jsonl")
    assert cfg.get("rl_buffer_dir") == str(work / "buf") and cfg.log_dir == str(work / "logs")
    assert not cfg.num_rollout  # offline: one pass over the file (slime.train.num_rollout)


def _resolve(name: str) -> str:
    from openclaw_rl.models import resolve_model_path
    return str(resolve_model_path(name))


@pytest.mark.parametrize("offline", [True, False])
def test_rollout_args_with_n_4_on_live_turns_is_refused_in_one_line(tmp_path, offline):
    work = _workdir(tmp_path)
    env = {"ROLLOUT_ARGS": "--rollout-batch-size 64 --num-rollouts-per-prompt 4"}
    if offline:
        env["DATA_PATH"] = "data/sessions.jsonl"
    argv, env_vars, _ = _dry_run("openclaw-rl/run_qwen3_7b_openclaw_rl.sh", work, **env)
    assert "--num-rollout" in argv or offline  # live traffic: the helper's default step count
    with pytest.raises(ConfigError, match=r"^--n-samples-per-prompt 4: a live turn has one response, the one its "
                                          r"user saw and answered.*use 1 .* or --prompt-data for groups$"):
        _job_config(argv, env_vars)


def test_rollout_args_without_num_rollout_runs_live(tmp_path):
    argv, env_vars, _ = _dry_run("openclaw-rl/run_qwen3_7b_openclaw_rl.sh", _workdir(tmp_path),
                                 ROLLOUT_ARGS="--rollout-batch-size 64")
    cfg = _job_config(argv, env_vars)
    assert cfg.num_rollout == 100000 and cfg.rollout_batch_size == 64 and cfg.global_batch_size == 64


def test_optimizer_args_and_gpu_lists(tmp_path):
    argv, env_vars, out = _dry_run(
        "openclaw-rl/run_qwen3_7b_openclaw_rl.sh", _workdir(tmp_path),
        OPTIMIZER_ARGS="--lr 1e-6 --weight-decay 0.01 --adam-beta1 0.9 --adam-beta2 0.999",
        TRAIN_GPUS="0,1,2,3", ROLLOUT_GPUS="4,5,6,7")
    cfg = _job_config(argv, env_vars)
    assert (cfg.lr, cfg.weight_decay, cfg.adam_beta1, cfg.adam_beta2) == (1e-6, 0.01, 0.9, 0.999)
    assert "TRAIN_JOB_NUM_GPUS=8" in out
    # the id lists become the actors' devices (tests/test_gpu_placement.py: each actor gets them)
    assert (cfg.actor_num_gpus_per_node, cfg.actor_gpu_ids, cfg.rollout_num_gpus, cfg.rollout_gpu_ids) == \
        (4, "0,1,2,3", 4, "4,5,6,7")


def test_faq_gpu_names(tmp_path):
    argv, env_vars, out = _dry_run("openclaw-rl/run_qwen3_7b_openclaw_rl.sh", _workdir(tmp_path),
                                   NUM_GPUS="8", ACTOR_GPUS="4", ROLLOUT_GPUS="2", PRM_GPUS="6,7")
    cfg = _job_config(argv, env_vars)
    assert (cfg.actor_num_gpus_per_node, cfg.actor_gpu_ids, cfg.rollout_num_gpus, cfg.prm_num_gpus,
            cfg.prm_gpu_ids) == (4, None, 2, 2, "6,7")
    assert "TRAIN_JOB_NUM_GPUS=8" in out
    r = subprocess.run(["bash", str(REPO / "openclaw-rl/run_qwen3_7b_openclaw_rl.sh")], cwd=tmp_path,
                       env={**os.environ, "PYTHON": sys.executable, "MODEL_PATH": "builtin:tiny-qwen3",
                            "TRAIN_JOB_DRY_RUN": "1", "NUM_GPUS": "4", "TRAIN_GPUS": "4", "ROLLOUT_GPUS": "2"},
                       capture_output=True, text=True)
    assert r.returncode == 2 and r.stderr.strip() == ("run_qwen3_7b_openclaw_rl.sh: TRAIN_GPUS (4) + ROLLOUT_GPUS (2) "
                                                      "+ PRM_GPUS (0) exceed NUM_GPUS (4)")


def test_bad_gpu_value_is_one_line(tmp_path):
    r = subprocess.run(["bash", str(REPO / "openclaw-rl/run_qwen3_7b_openclaw_rl.sh")], cwd=tmp_path,
                       env={**os.environ, "PYTHON": sys.executable, "MODEL_PATH": "builtin:tiny-qwen3",
                            "TRAIN_JOB_DRY_RUN": "1", "TRAIN_GPUS": "gpu0"}, capture_output=True, text=True)
    assert r.returncode == 2
    assert r.stderr.strip() == ("run_qwen3_7b_openclaw_rl.sh: TRAIN_GPUS must be a GPU count or a list of ids "
                                "like 0,1,2,3, got 'gpu0'")


def test_missing_data_path_is_named_absolute(tmp_path):
    r = subprocess.run(["bash", str(REPO / "openclaw-rl/run_qwen3_7b_openclaw_rl.sh")], cwd=tmp_path,
                       env={**os.environ, "PYTHON": sys.executable, "MODEL_PATH": "builtin:tiny-qwen3",
                            "TRAIN_JOB_DRY_RUN": "1", "DATA_PATH": "sub/sessions.jsonl"},
                       capture_output=True, text=True)
    assert r.returncode == 2
    assert r.stderr.strip() == f"run_qwen3_7b_openclaw_rl.sh: DATA_PATH {tmp_path}/sub/sessions.jsonl: no such file"


@pytest.mark.parametrize("script, lora_args, want", [
    ("openclaw-rl/run_qwen3_7b_openclaw_rl.sh", "--lora-rank 64 --lora-alpha 128 --lora-dropout 0.05",
     (64, 128.0, 0.05)),
    ("openclaw-rl/run_qwen3_7b_lora_openclaw_rl.sh", "--lora-rank 64 --lora-alpha 128 --lora-dropout 0.05",
     (64, 128.0, 0.05)),
    ("openclaw-rl/run_qwen3_7b_lora_openclaw_rl.sh", "--use-lora --lora-rank 64 --lora-alpha 128", (64, 128.0, 0.0)),
    ("openclaw-opd/run_qwen3_7b_openclaw_opd.sh", "--use-lora --lora-rank 32", (32, 64.0, 0.0)),
])
def test_lora_args_as_written(tmp_path, script, lora_args, want):
    argv, env_vars, _ = _dry_run(script, _workdir(tmp_path), LORA_ARGS=lora_args)
    cfg = _job_config(argv, env_vars)
    assert cfg.use_lora and (cfg.lora_rank, cfg.lora_alpha, cfg.lora_dropout) == want


def test_majority_vote_and_judge_workers(tmp_path):
    """MAJORITY_VOTE_N=5 / MAJORITY_VOTE_THRESHOLD=0.6 exported, and `--majority-vote-n 7
    --num-judge-workers 4` added to the script: the flags win, the threshold comes from the env."""
    argv, env_vars, _ = _dry_run("openclaw-rl/run_qwen3_7b_openclaw_rl.sh", _workdir(tmp_path),
                                 "--majority-vote-n", "7", "--num-judge-workers", "4",
                                 MAJORITY_VOTE_N="5", MAJORITY_VOTE_THRESHOLD="0.6")
    assert env_vars["MAJORITY_VOTE_N"] == "5" and env_vars["MAJORITY_VOTE_THRESHOLD"] == "0.6"
    cfg = _job_config(argv, env_vars)
    assert (cfg.majority_vote_n, cfg.majority_vote_threshold, cfg.num_judge_workers) == (7, 0.6, 4)


def test_resume_ckpt_with_resume_from_checkpoint(tmp_path):
    """export RESUME_CKPT=$CKPT_SAVE_DIR/checkpoint-500, then --resume-from-checkpoint $RESUME_CKPT (or
    only the env var): a relative checkpoint is found from the caller's directory; a missing one is a
    one-line start-up error."""
    work = _workdir(tmp_path)
    ckpt = work / "checkpoints" / "checkpoint-500"
    ckpt.mkdir(parents=True)
    (ckpt / "trainer_state.json").write_text("{}")
    for args, env in (((("--resume-from-checkpoint", "./checkpoints/checkpoint-500")), {}),
                      ((), {"RESUME_CKPT": "./checkpoints/checkpoint-500"})):
        argv, env_vars, _ = _dry_run("openclaw-rl/run_qwen3_7b_openclaw_rl.sh", work, *args,
                                     CKPT_SAVE_DIR="./checkpoints", **env)
        assert _job_config(argv, env_vars).resume_from_checkpoint == str(ckpt)
    argv, env_vars, _ = _dry_run("openclaw-rl/run_qwen3_7b_openclaw_rl.sh", work, "--resume-from-checkpoint",
                                 "./checkpoints/checkpoint-400")
    with pytest.raises(ConfigError, match=rf"^--resume-from-checkpoint {work}/checkpoints/checkpoint-400: no "
                                          "checkpoint"):
        _job_config(argv, env_vars)


README_PLUGIN = re.compile(r"```python\n# my-method/(custom_\w+)\.py\n(.*?)```", re.S)


@pytest.mark.ray
@pytest.mark.slow
def test_seed_plugin_example_trains_with_data_path_and_nothing_else(ray_head, tmp_path):
    """`python slime/train.py --model-path builtin:tiny-qwen3 --custom-loss-function-path my/custom_loss.py
    --custom-rm-path my/custom_rm.py` with DATA_PATH (relative) set: the README's plugins, run from
    another directory, train one pass over the hand-written session (prompt and response only)."""
    work = _workdir(tmp_path)
    (work / "my").mkdir()
    blocks = README_PLUGIN.findall((REPO / "README.md").read_text())
    assert sorted(name for name, _ in blocks) == ["custom_loss", "custom_rm"]
    for name, body in blocks:
        (work / "my" / f"{name}.py").write_text(body)
    # on a running cluster (the suite's shared head): the actors run in its worker processes, yet
    # the store (no --save) lands in the caller's directory and the relative DATA_PATH is the caller's
    r = subprocess.run([sys.executable, str(REPO / "slime" / "train.py"), "--model-path", "builtin:tiny-qwen3",
                        "--custom-loss-function-path", "my/custom_loss.py", "--custom-rm-path", "my/custom_rm.py"],
                       cwd=work, env=driver_env(ray_head[0], "SLIME_CALLER_CWD", DATA_PATH="data/sessions.jsonl"),
                       capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-5000:]
    summary = json.loads(r.stdout[r.stdout.index("{"):])
    assert summary["steps"] == 1 and summary["samples_trained"] == 1  # the one main turn
    assert summary["final_metrics"]["judge/judged"] == 1 and summary["final_metrics"]["judge/trainable"] == 1
    metrics = [json.loads(line) for line in next((work / "logs").glob("run-*/metrics.jsonl")).read_text().splitlines()]
    step = metrics[-1]
    assert step["samples/without_logprobs"] == 1 and step["samples/rollout_logprobs_recomputed"] == 1
    assert step["train/n_tokens_without_engine_logprobs"] == step["train/n_tokens"] > 0
    assert (work / "rl_buffer" / "trajectories.sqlite").is_file() and (work / "logs" / "published").is_dir()
