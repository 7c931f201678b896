"""The OPD teacher-openings check: teacher-forced probabilities of accepted reply openings, the
student's prompt against the hinted teacher's. Real tiny model, real tokenizer and chat template."""

from __future__ import annotations

import json
import math

import pytest
import torch

from openclaw_rl.main_job.teacher_openings import main, opening_logprob
from openclaw_rl.models import load_model, load_tokenizer

MODEL = "builtin:tiny-qwen3"


@pytest.fixture(scope="module")
def policy():
    return load_model(MODEL).eval(), load_tokenizer(MODEL)


def test_one_opening_is_its_teacher_forced_logprob_and_several_add_up(policy):
    model, tok = policy
    chat = [{"role": "user", "content": "What is 2 + 2?"}]
    prompt_ids = tok(tok.apply_chat_template(chat, tokenize=False, add_generation_prompt=True),
                     add_special_tokens=False)["input_ids"]
    ids = tok("Alex,", add_special_tokens=False)["input_ids"]
    with torch.no_grad():
        logprobs = model(torch.tensor([prompt_ids + ids])).logits[0].log_softmax(-1)
    by_hand = sum(logprobs[len(prompt_ids) - 1 + k, t].item() for k, t in enumerate(ids))
    assert opening_logprob(model, tok, chat, ["Alex,"]) == pytest.approx(by_hand, abs=1e-4)
    both = opening_logprob(model, tok, chat, ["Alex,", "Hi Alex,"])
    other = opening_logprob(model, tok, chat, ["Hi Alex,"])
    assert math.exp(both) == pytest.approx(math.exp(by_hand) + math.exp(other), rel=1e-4)
    with pytest.raises(ValueError, match="no openings"):
        opening_logprob(model, tok, chat, [])


def test_the_cli_compares_student_and_teacher_per_question(capsys):
    assert main(["--model-path", MODEL, "--held-out", "3", "--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert r["n"] == 3 and len(r["per_question"]) == 3
    gaps = [t - s for s, t in r["per_question"].values()]
    assert r["mean_gap_nats"] == pytest.approx(sum(gaps) / 3)
    assert r["teacher_higher"] == sum(g > 0 for g in gaps)
    assert all(s != t for s, t in r["per_question"].values())  # the hint changes the teacher's prompt


def test_an_empty_openings_flag_is_a_one_line_error(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--model-path", MODEL, "--openings", "|"])
    assert exit_info.value.code == 2 and "--openings lists no opening" in capsys.readouterr().err
