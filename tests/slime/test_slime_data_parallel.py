"""Data-parallel training (issue 15): N train actors on Ray train one policy with FSDP2 (gloo on
CPU). One step on the same global batch gives the same parameters with 1 and 2 actors; a
checkpoint (one Hugging Face folder, or one LoRA adapter, and one optimizer file) saved by 2
actors resumes on 1 and vice versa, and the resumed step equals the uninterrupted run's.

Real Ray (a local cluster on loopback, inside the suite's ``unshare -n``), real train actors
(:class:`slime.orchestration.train_group.TrainGroup`), the real backend on ``builtin:tiny-qwen3``."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from slime.config.arguments import parse_args
from slime.record.sample import Sample
from tests.support.ray_head import driver_env

pytestmark = pytest.mark.ray
TOL = 1e-5
# AdamW's first step moves each weight by lr * g / (|g| + eps): about lr wherever |g| >> eps, so the
# weights move by ~LR = 10 x TOL; where |g| ~ eps (1e-8) float32 summation order shows (at most a
# few % of LR on a handful of weights), hence the mean-difference bound besides the max one.
LR = 1e-4
BATCH = 5  # odd: the two ranks' shares differ (3 and 2 samples), so a filler micro-batch runs


@pytest.fixture(scope="module")
def ray_cluster():
    """A private local Ray cluster (no GPUs) for this module's train actors."""
    import ray

    ray.init(address="local", _node_ip_address="127.0.0.1", include_dashboard=False, num_cpus=2, num_gpus=0,
             log_to_driver=False)
    try:
        yield
    finally:
        ray.shutdown()


def _batch(seed: int) -> list[Sample]:
    """``BATCH`` samples of different lengths over the first 2000 token ids, random advantages."""
    g = torch.Generator().manual_seed(seed)
    out = []
    for i in range(BATCH):
        p, r = 4 + i % 3, 3 + (2 * i) % 5
        out.append(Sample(tokens=torch.randint(0, 2000, (p + r,), generator=g).tolist(), response_length=r,
                          rollout_log_probs=[-1.0] * r, advantages=[float(torch.randn(1, generator=g))] * r,
                          weight_version=0))
    return out


def _group(save: Path, actors: int, *extra: str, resume: Path | None = None):
    from slime.orchestration.train_group import TrainGroup

    flags = ["--model-path", "builtin:tiny-qwen3", "--rollout-batch-size", str(BATCH), "--micro-batch-size", "1",
             "--lr", str(LR), "--save", str(save), "--actor-num-gpus-per-node", str(actors), *extra]
    if resume is not None:
        flags += ["--resume-from-checkpoint", str(resume)]
    return TrainGroup(parse_args(flags))


def _run(save: Path, actors: int, steps: list[int], *extra: str, resume: Path | None = None) -> list[dict]:
    """Train ``steps`` (the batch seed of each) on ``actors`` ranks, saving after each; the metrics."""
    group = _group(save, actors, *extra, resume=resume)
    try:
        start = group.resume() or 0
        out = []
        for i, seed in enumerate(steps):
            out.append(group.train_step(_batch(seed)))
            group.save(start + i + 1)
        return out
    finally:
        group.shutdown()


def _weights(ckpt: Path) -> dict[str, torch.Tensor]:
    files = list(ckpt.glob("*.safetensors"))
    assert [f.name for f in files] in (["model.safetensors"], ["adapter_model.safetensors"]), files
    return load_file(str(files[0]))


def _max_diff(a: dict, b: dict) -> float:
    """The largest |a - b| over all weights; also asserts the mean |a - b| is under 1e-3 x LR."""
    assert a.keys() == b.keys()
    diffs = torch.cat([(a[k].double() - b[k].double()).abs().flatten() for k in a])
    assert float(diffs.mean()) < 1e-3 * LR
    return float(diffs.max())


@pytest.fixture(scope="module")
def runs(ray_cluster, tmp_path_factory):
    """The full model's reference (1 actor, steps on batches 1 and 2) and 2 actors' first step;
    ``(folder, {name: metrics})``."""
    root = tmp_path_factory.mktemp("dp")
    return root, {"one": _run(root / "one", 1, [1, 2]), "two": _run(root / "two", 2, [1])}


def test_two_actors_step_equals_one_actor_step(runs):
    root, metrics = runs
    ref1, dp1 = _weights(root / "one" / "checkpoint-1"), _weights(root / "two" / "checkpoint-1")
    assert _max_diff(ref1, dp1) < TOL
    ref2 = _weights(root / "one" / "checkpoint-2")
    assert max(float((ref1[k] - ref2[k]).abs().max()) for k in ref1) > 0.9 * LR  # a step moves weights ~LR
    for key in ("loss", "grad_norm", "pg_clipfrac", "n_tokens", "n_seq_tokens", "n_trained_samples"):
        assert metrics["two"][0][key] == pytest.approx(metrics["one"][0][key], rel=1e-5, abs=1e-7), key
    from transformers import AutoModelForCausalLM  # the 2-actor checkpoint is one HF folder
    AutoModelForCausalLM.from_pretrained(root / "two" / "checkpoint-1")


@pytest.mark.slow  # ~15 s alone, ~50 s on a loaded machine
@pytest.mark.parametrize(("saved_by", "resumed_on"), [("two", 1), ("one", 2)])
def test_checkpoint_resumes_on_another_actor_count(runs, saved_by, resumed_on):
    root, _ = runs
    out = root / f"{saved_by}_then_{resumed_on}"
    _run(out, resumed_on, [2], resume=root / saved_by / "checkpoint-1")
    assert _max_diff(_weights(root / "one" / "checkpoint-2"), _weights(out / "checkpoint-2")) < TOL


@pytest.mark.slow
@pytest.mark.exhaustive  # LoRA variant of the two-actor tests above (make test-exhaustive)
def test_lora_adapter_two_actors_and_resume(ray_cluster, tmp_path):
    lora = ("--use-lora", "--lora-rank", "4")
    _run(tmp_path / "one", 1, [1, 2], *lora)
    _run(tmp_path / "two", 2, [1], *lora)
    assert _max_diff(_weights(tmp_path / "one" / "checkpoint-1"), _weights(tmp_path / "two" / "checkpoint-1")) < TOL
    _run(tmp_path / "two_then_one", 1, [2], *lora, resume=tmp_path / "two" / "checkpoint-1")
    assert _max_diff(_weights(tmp_path / "one" / "checkpoint-2"),
                     _weights(tmp_path / "two_then_one" / "checkpoint-2")) < TOL


def _train_py(work: Path, ray_port: int, *args: str) -> dict:
    """``slime/train.py`` on recorded sessions (offline, the repository's reward plugin), driving a
    run on the head at GCS ``ray_port`` (the shared ``ray_head``); its summary."""
    import json
    import subprocess
    import sys

    repo = Path(__file__).resolve().parents[2]
    # the Ray workers import this checkout (SLIME_JOB_ENV carries the variables into the actors)
    env = driver_env(ray_port, "SLIME_CALLER_CWD", "DATA_PATH", OMP_NUM_THREADS="1", PYTHONPATH=str(repo),
                     SLIME_JOB_ENV="OMP_NUM_THREADS PYTHONPATH")
    run = subprocess.run([sys.executable, str(repo / "slime" / "train.py"), "--model-path", "builtin:tiny-qwen3",
                          "--data-path", "sessions.jsonl", "--custom-rm-path", "tests/plugins/low_ids_reward.py",
                          "--rollout-batch-size", "2", "--save", "./ckpt", "--save-interval", "1",
                          "--log-dir", "./logs", *args], cwd=work, env=env, capture_output=True, text=True,
                         timeout=900)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-4000:]
    return json.loads(run.stdout[run.stdout.index("{"):])


@pytest.mark.slow
def test_train_loop_on_two_actors_then_resumed_on_one(ray_head, tmp_path):
    """The whole loop (admission, train step, checkpoint, weight export) on 2 train actors, then
    the run resumed from its checkpoint on 1 actor: each turn trained once, versions continue."""
    import json

    (tmp_path / "sessions.jsonl").write_text("".join(json.dumps({"session_id": f"s{i}", "turns": [
        {"prompt": [{"role": "user", "content": f"question {i}"}], "response": f"answer {i}",
         "next_state": "thanks"}]}) + "\n" for i in range(6)))
    first = _train_py(tmp_path, ray_head[0], "--num-rollout", "2", "--actor-num-gpus-per-node", "2")
    assert (first["steps"], first["samples_trained"]) == (2, 4)
    assert sorted(p.name for p in (tmp_path / "ckpt" / "checkpoint-2").glob("*.safetensors")) == ["model.safetensors"]
    assert (tmp_path / "ckpt" / "published" / "version-2" / "model.safetensors").is_file()
    resumed = _train_py(tmp_path, ray_head[0], "--num-rollout", "3", "--resume-from-checkpoint", "ckpt")
    assert (resumed["start_step"], resumed["steps"], resumed["resumed_weight_version"]) == (2, 1, 2)
    state = json.loads((tmp_path / "ckpt" / "checkpoint-latest" / "trainer_state.json").read_text())
    assert (state["step"], state["weight_version"]) == (3, 3)
