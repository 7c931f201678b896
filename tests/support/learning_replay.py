"""Offline replay of tests/test_learning.py's update, to size it: how soon, and how surely, the
mean reward of the tiny model rises for a given reply length, sampling temperature, learning rate
and Adam betas.

The same :class:`slime.trainer.backend.TrainingBackend` step as the live run (on-policy: the
replies are sampled from the weights the step updates, Binary RL's ``broadcast`` advantages, the
low-ids reward of tests/plugins/low_ids_reward.py), without the server, Ray or the HTTP loop, so
one seed of 12 steps of 4-token replies takes ~25 s on one core. The sampling seed is
``1000 + seed``; the live run's sampling is not seeded, so a replay measures the spread over
seeds, not one run.

    .venv/bin/python -m tests.support.learning_replay --seeds 0-39 --steps 12 --reply-tokens 4 \\
        --temperature 0.1 --lr 2e-2 --adam-beta1 0 --adam-beta2 0.999

prints one JSON line per seed: ``seed``, ``curve`` (the mean reward of each step's replies, in
[-1, 1]) and ``onset`` (the first step whose mean passed 0.5, or null).
"""

from __future__ import annotations

import argparse
import asyncio
import json
from pathlib import Path

import torch

from slime.algorithms.advantages import broadcast_reward
from slime.config.arguments import parse_args
from slime.plugins.loader import load_function
from slime.record.sample import Sample, SampleStatus
from slime.trainer.backend import TrainingBackend

#: the live test's --custom-rm-path, scored the same way here
REWARD_PATH = f"{Path(__file__).resolve().parents[1] / 'plugins' / 'low_ids_reward.py'}:reward"


def replay(seed: int, steps: int, batch: int, reply_tokens: int, temperature: float, lr: float,
           adam_beta1: float, adam_beta2: float) -> list[float]:
    """Train tiny-qwen3 ``steps`` steps on its own replies; returns the mean reward of each
    step's ``batch`` replies (``reply_tokens`` tokens each, sampled at ``temperature``)."""
    torch.set_num_threads(1)
    cfg = parse_args(["--model-path", "builtin:tiny-qwen3", "--rollout-batch-size", str(batch),
                      "--lr", str(lr), "--adam-beta1", str(adam_beta1), "--adam-beta2", str(adam_beta2),
                      "--seed", str(seed),
                      "--collapse-guard", "off"])
    backend = TrainingBackend(cfg)
    reward = load_function(REWARD_PATH, "--custom-rm-path")
    tok = backend.tokenizer
    prompts = [tok(tok.apply_chat_template([{"role": "user", "content": f"say something #{i}"}],
                                           add_generation_prompt=True, tokenize=False),
                   add_special_tokens=False)["input_ids"] for i in range(7)]
    torch.manual_seed(1000 + seed)
    curve, n = [], 0
    for _ in range(steps):
        samples = []
        for _ in range(batch):
            prompt = prompts[n % len(prompts)]
            n += 1
            with torch.no_grad():
                out = backend.model.generate(torch.tensor([prompt]), max_new_tokens=reply_tokens, do_sample=True,
                                             temperature=temperature, top_p=1.0, top_k=0, pad_token_id=0)
            reply = out[0, len(prompt):].tolist()
            s = Sample(tokens=prompt + reply, response_length=len(reply), rollout_log_probs=[0.0] * len(reply),
                       source_id=n, status=SampleStatus.TRUNCATED, sampling_temperature=temperature)
            s.reward = asyncio.run(reward(cfg, s))
            samples.append(s)
        for s, lp in zip(samples, backend.policy_logprobs(samples)):
            s.rollout_log_probs = list(lp)
        backend.train_step(broadcast_reward(samples))
        curve.append(sum(s.reward for s in samples) / batch)
    return curve


def _seeds(text: str) -> list[int]:
    lo, _, hi = text.partition("-")
    return list(range(int(lo), int(hi or lo) + 1))


def main(argv: list[str] | None = None) -> None:
    """The command line above; one JSON line per seed on stdout."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=_seeds, default=_seeds("0-9"), help="a range such as 0-9")
    ap.add_argument("--steps", type=int, default=16)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--reply-tokens", type=int, default=8)
    ap.add_argument("--temperature", type=float, default=0.1)
    ap.add_argument("--lr", type=float, default=2e-2)
    ap.add_argument("--adam-beta1", type=float, default=0.9)
    ap.add_argument("--adam-beta2", type=float, default=0.999)
    a = ap.parse_args(argv)
    for seed in a.seeds:
        curve = replay(seed, a.steps, a.batch, a.reply_tokens, a.temperature, a.lr, a.adam_beta1, a.adam_beta2)
        onset = next((i + 1 for i, r in enumerate(curve) if r > 0.5), None)
        print(json.dumps({"seed": seed, "onset": onset, "curve": [round(r, 3) for r in curve]}), flush=True)


if __name__ == "__main__":
    main()
