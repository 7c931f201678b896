"""The README's plugin examples work exactly as written: its ``custom_loss.py`` and ``custom_rm.py``
code blocks are saved as files and run on the tiny model and a tiny classifier."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest
import torch

from openclaw_rl.capture.store import TrajectoryStore, TurnRecord
from openclaw_rl.rollout.custom_rm import CustomRewardJudge
from slime.config.arguments import parse_args
from slime.trainer.backend import TrainingBackend
from slime.plugins.loss import load_loss_plugin
from slime.plugins.check import check_plugins
from slime.record.sample import Sample
from slime.config.run_args import parse_run_args
from tests.support.tiny_classifier import positive_probability

REPO = Path(__file__).resolve().parent.parent


def _readme_file(tmp_path: Path, name: str) -> str:
    """Save the README code block that starts with ``# my-method/<name>``; returns its path."""
    blocks = re.findall(r"```python\n(.*?)```", (REPO / "README.md").read_text(), flags=re.S)
    code = next(b for b in blocks if b.startswith(f"# my-method/{name}\n"))
    path = tmp_path / "my-method" / name
    path.parent.mkdir(exist_ok=True)
    path.write_text(code)
    return str(path)


def test_readme_custom_loss_trains_the_tiny_model(tmp_path):
    spec = _readme_file(tmp_path, "custom_loss.py")
    cfg = parse_args(["--model-path", "builtin:tiny-qwen3", "--rollout-batch-size", "2", "--lr", "1e-3",
                      "--custom-loss-function-path", spec])
    assert check_plugins(cfg)[0] == f"loss: plugin {spec}:compute_loss (simple convention)"
    backend = TrainingBackend(cfg, loss_fn=load_loss_plugin(spec, cfg))
    before = [p.detach().clone() for p in backend.trainable_parameters]
    samples = [Sample(tokens=[9707, 11, 1879, 0, 151645, 872][: 3 + r], response_length=r, rollout_log_probs=[-2.0] * r,
                      advantages=[a] * r, reward=a) for r, a in ((3, 1.0), (2, -1.0))]
    metrics = backend.train_step(samples)
    assert metrics["skipped"] == 0.0 and metrics["weight_version"] == 1.0
    assert any(not torch.equal(b, p) for b, p in zip(before, backend.trainable_parameters))


def test_readme_custom_rm_scores_with_a_classifier(tiny_classifier, tmp_path):
    spec = _readme_file(tmp_path, "custom_rm.py")
    cfg = parse_run_args(["--model-path", "builtin:tiny-qwen3", "--prm-model-path", str(tiny_classifier),
                      "--num-judge-workers", "1"])
    judge = CustomRewardJudge(spec, cfg)
    store = TrajectoryStore(tmp_path / "buf")
    store.touch_session("s", "test")
    rec = store.add_turn(TurnRecord(session_id="s", turn_type="main", messages=[{"role": "user", "content": "hi"}],
                                    prompt_text="hi", prompt_ids=[1, 2], response_ids=[3, 4],
                                    response_logprobs=[-1.0, -1.0], response_text="hello!", finish_reason="stop",
                                    weight_version=0))
    store.set_next_state(rec.id, "thanks!", "user")
    res = asyncio.run(judge.judge(store.get_turn(rec.id)))
    assert res.trainable
    assert res.reward == pytest.approx(positive_probability(tiny_classifier, rec.prompt_text, "hello!", "thanks!"), abs=1e-6)
