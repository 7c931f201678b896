"""OPD learns: training on turns with hints lowers KL(student || hinted teacher) on held-out turns.

The real pieces on the tiny model (``builtin:tiny-qwen3``, real Qwen vocabulary and chat
template): the student samples its own responses each step (on-policy), the teacher is the frozen
base model with the hint appended to the last user message (:mod:`openclaw_rl.opd.hint_prompt`), the
advantage is ``teacher - old`` per token (:mod:`openclaw_rl.opd.advantages`) and the update is the
training backend's PPO step. The held-out turns use other questions with the same hint; the KL
is exact (full vocabulary) at every position of fixed responses sampled once from the initial
student.
"""

from __future__ import annotations

import os

import pytest
import torch

from openclaw_rl.models import load_tokenizer
from openclaw_rl.opd.advantages import opd_advantages
from openclaw_rl.opd.hint_prompt import teacher_prompt_ids
from openclaw_rl.opd.teacher import response_logprobs, score_teacher
from slime.record.sample import Sample

pytestmark = pytest.mark.slow
MODEL = os.environ.get("OPD_LEARNING_MODEL", "builtin:tiny-qwen3")
HINT = os.environ.get("OPD_LEARNING_HINT", "Write plain sentences: " + "plain " * 40)
# the held-out KL plateaus by step 10-15: measured 2026-12-06 on seeds 0-5 (one thread), after/before
# was 0.19-0.33 at step 10, 0.17-0.23 at 15 and 0.17-0.21 at 30 (the bar: 0.5), so 30 steps bought no margin
STEPS = int(os.environ.get("OPD_LEARNING_STEPS", "15"))
LR = os.environ.get("OPD_LEARNING_LR", "3e-3")
TRAIN_Q = [f"Tell me about topic number {i}." for i in range(8)]
HELD_OUT_Q = ["How do plants grow?", "Why is the sky blue?", "What is a prime number?", "Describe a cat."]
RESPONSE_LEN = 8


def _prompt(tok, question: str) -> tuple[list[dict], list[int]]:
    msgs = [{"role": "user", "content": question}]
    text = tok.apply_chat_template(msgs, add_generation_prompt=True, tokenize=False)
    return msgs, tok(text, add_special_tokens=False)["input_ids"]


def _sample(model, prompt_ids: list[int], gen: torch.Generator) -> list[int]:
    """Sample ``RESPONSE_LEN`` tokens at temperature 1 (no early stop), with a cache."""
    ids, out, past = torch.tensor([prompt_ids]), [], None
    with torch.no_grad():
        for _ in range(RESPONSE_LEN):
            res = model(input_ids=ids, cache=past, use_cache=True)
            past = res.cache
            nxt = int(torch.multinomial(torch.softmax(res.logits[0, -1].float(), -1), 1, generator=gen))
            out.append(nxt)
            ids = torch.tensor([[nxt]])
    return out


def _held_out_kl(backend, tok, evals) -> float:
    backend.model.eval()
    student = [_kl_parts(backend.model, p, r) for p, _, r in evals]
    with backend.model.disable_adapter():  # the frozen base is the teacher
        teacher = [_kl_parts(backend.model, t, r) for _, t, r in evals]
    return sum(float((ls.exp() * (ls - lt)).sum(-1).mean()) for ls, lt in zip(student, teacher)) / len(evals)


def _kl_parts(model, prompt, resp) -> torch.Tensor:
    """``[R, V]`` log-probs of the next token at each response position."""
    with torch.no_grad():
        return torch.log_softmax(model(torch.tensor([prompt + resp])).logits[0, len(prompt) - 1:-1].float(), -1)


def test_opd_halves_kl_to_hinted_teacher_on_held_out_turns():
    from slime.config.arguments import parse_args
    from slime.trainer.backend import TrainingBackend

    tok = load_tokenizer(MODEL)
    cfg = parse_args(["--model-path", MODEL, "--rollout-batch-size", str(len(TRAIN_Q)), "--lr", LR,
                      "--advantage-estimator", "opd", "--rollout-temperature", "1.0", "--seed", "0",
                      "--use-lora", "--lora-rank", "16"])
    backend = TrainingBackend(cfg)
    gen = torch.Generator().manual_seed(0)
    train = [(_prompt(tok, q), q) for q in TRAIN_Q]
    evals = []
    for q in HELD_OUT_Q:
        (msgs, p) = _prompt(tok, q)
        t = teacher_prompt_ids(tok, msgs, None, HINT, p)
        for _ in range(2):
            evals.append((p, t, _sample(backend.model, p, gen)))
    before = _held_out_kl(backend, tok, evals)
    for step in range(STEPS):
        samples = [_make(backend, tok, msgs, p, gen) for (msgs, p), _ in train]
        samples, metrics = opd_advantages(score_teacher(backend, samples, "base"))
        out = backend.train_step(samples)
        assert out["skipped"] == 0
        print(f"step {step}: opd adv mean {metrics['opd/adv_mean']:+.3f} |A| {metrics['opd/adv_abs_mean']:.3f}", flush=True)
    after = _held_out_kl(backend, tok, evals)
    print(f"held-out KL(student || hinted teacher): before {before:.4f}, after {after:.4f}")
    assert before > 0.005
    assert after <= 0.5 * before


def _make(backend, tok, msgs, prompt_ids, gen) -> Sample:
    backend.model.eval()
    resp = _sample(backend.model, prompt_ids, gen)
    lp = response_logprobs(backend.model, prompt_ids, resp).tolist()
    s = Sample(tokens=prompt_ids + resp, response_length=len(resp), rollout_log_probs=lp)
    s.metadata["judgement"] = {"branch": "opd", "hint": HINT,
                               "teacher_prompt_ids": teacher_prompt_ids(tok, msgs, None, HINT, prompt_ids)}
    return s
