"""Does the OPD teacher favour the openings the user accepts? A token-level check, no sampling.

On-policy distillation's advantage on a token is the teacher's log-prob minus the student's
(the same model; the teacher sees the hindsight hint appended to the user message,
:data:`openclaw_rl.opd.hint_prompt.HINT_FORMAT`). For a preference that shows in the first words
of a reply ("Alex, ...", "Sure! ..."), OPD can only teach it if the teacher gives those openings
more probability than the student does. For each held-out question this teacher-forces every
listed opening after the student's prompt and after the teacher's, and sums the probabilities.

    python -m openclaw_rl.main_job.teacher_openings [--model-path builtin:smollm2-135m]
        [--preference name-alex] [--hint "Address me by my name, Alex."]
        [--openings "Alex,|Hi Alex,|..."] [--held-out 40] [--torch-threads 1]

Prints one line per context and the paired comparison; ``--json`` prints the numbers.
Measured for ``name-alex`` in ``docs/learning.md`` ("The OPD teacher makes the name less likely").
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
from typing import Sequence

import torch

from openclaw_rl.main_job.heldout import SYSTEM, user_message
from openclaw_rl.main_job.questions import question_sets
from openclaw_rl.models import DEFAULT_MODEL, load_model, load_tokenizer
from openclaw_rl.opd.hint_prompt import HINT_FORMAT
from openclaw_rl.preferences import PREFERENCES, Preference

__all__ = ["DEFAULT_OPENINGS", "DEFAULT_HINTS", "opening_logprob", "compare_openings", "main"]

#: openings that meet the preference, per preference whose rule shows in a reply's first words
DEFAULT_OPENINGS = {"name-alex": ("Alex,", "Hi Alex,", "Hello Alex,", "Dear Alex,", "Hey Alex,", "Sure, Alex",
                                  "Of course, Alex"),
                    "start-sure": ("Sure!",)}
#: the hint a hindsight judge draws from the user's correction (the requirement it restates)
DEFAULT_HINTS = {"name-alex": "Address me by my name, Alex.", "start-sure": "Start your answer with 'Sure!'."}


@torch.no_grad()
def opening_logprob(model, tokenizer, messages: list[dict], openings: Sequence[str]) -> float:
    """Log of the summed probability that the assistant's reply to ``messages`` opens with any of
    ``openings`` (each teacher-forced after the chat template's generation prompt).

    Args:
        model: a causal LM (``transformers``). tokenizer: its tokenizer, with a chat template.
        messages: the chat so far (OpenAI message dicts), ending with the user's message.
        openings: non-empty texts, each tokenized on its own after the prompt.

    Returns:
        ``log sum_o P(o | prompt)`` in nats.

    Raises:
        ValueError: no openings, or an opening that tokenizes to nothing.
    """
    if not openings:
        raise ValueError("no openings to score")
    prompt = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    prompt_ids = tokenizer(prompt, add_special_tokens=False)["input_ids"]
    scores = []
    for text in openings:
        ids = tokenizer(text, add_special_tokens=False)["input_ids"]
        if not ids:
            raise ValueError(f"opening {text!r} has no tokens")
        logprobs_T_V = model(torch.tensor([prompt_ids + ids])).logits[0].float().log_softmax(-1)
        scores.append(sum(logprobs_T_V[len(prompt_ids) - 1 + k, tid].item() for k, tid in enumerate(ids)))
    return torch.logsumexp(torch.tensor(scores), 0).item()


def compare_openings(model, tokenizer, questions: Sequence, preference: Preference, hint: str,
                     openings: Sequence[str]) -> dict:
    """Student vs teacher probability of the accepted openings, per question and in summary.

    Args:
        model, tokenizer: the policy (student and teacher are the same weights).
        questions: :class:`openclaw_rl.main_job.questions.Question` items.
        preference: the stated preference (its instruction follows each question, as the user asks).
        hint: the hindsight hint the teacher sees. openings: see :func:`opening_logprob`.

    Returns:
        ``{"n", "student_mean_p", "teacher_mean_p", "student_median_logp", "teacher_median_logp",
        "teacher_higher" (questions where the teacher's is larger), "mean_gap_nats" (teacher minus
        student), "per_question": {id: [student logp, teacher logp]}}``.
    """
    per_question = {}
    for q in questions:
        text = user_message(q, preference)
        chat = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": text}]
        hinted = [chat[0], {"role": "user", "content": text + HINT_FORMAT.format(hint=hint)}]
        per_question[q.id] = [opening_logprob(model, tokenizer, chat, openings),
                              opening_logprob(model, tokenizer, hinted, openings)]
    student = [s for s, _ in per_question.values()]
    teacher = [t for _, t in per_question.values()]
    return {"n": len(per_question),
            "student_mean_p": statistics.mean(math.exp(v) for v in student),
            "teacher_mean_p": statistics.mean(math.exp(v) for v in teacher),
            "student_median_logp": statistics.median(student), "teacher_median_logp": statistics.median(teacher),
            "teacher_higher": sum(t > s for s, t in zip(student, teacher)),
            "mean_gap_nats": statistics.mean(t - s for s, t in zip(student, teacher)),
            "per_question": per_question}


def main(argv: list[str] | None = None) -> int:
    """CLI entry point; prints the comparison; returns 0 (2 on a bad flag, from argparse)."""
    p = argparse.ArgumentParser(prog="python -m openclaw_rl.main_job.teacher_openings",
                                description=__doc__.splitlines()[0])
    p.add_argument("--model-path", default=DEFAULT_MODEL)
    p.add_argument("--preference", default="name-alex", choices=sorted(DEFAULT_OPENINGS))
    p.add_argument("--hint", default=None, help="the teacher's hint (default: the preference's requirement)")
    p.add_argument("--openings", default=None, help="'|'-separated accepted openings (default: per preference)")
    p.add_argument("--held-out", type=int, default=40)
    p.add_argument("--torch-threads", type=int, default=1)
    p.add_argument("--json", action="store_true")
    a = p.parse_args(argv)
    openings = tuple(o for o in (a.openings.split("|") if a.openings else DEFAULT_OPENINGS[a.preference]) if o)
    if not openings:
        p.error("--openings lists no opening")
    torch.set_num_threads(a.torch_threads)
    tokenizer, model = load_tokenizer(a.model_path), load_model(a.model_path).eval()
    _, questions = question_sets(a.held_out)
    r = compare_openings(model, tokenizer, questions, PREFERENCES[a.preference],
                         a.hint or DEFAULT_HINTS[a.preference], openings)
    if a.json:
        print(json.dumps(r, indent=1))
        return 0
    print(f"student: mean P(accepted opening) {r['student_mean_p']:.4f}, median log-prob {r['student_median_logp']:.2f}")
    print(f"teacher: mean P(accepted opening) {r['teacher_mean_p']:.4f}, median log-prob {r['teacher_median_logp']:.2f}")
    print(f"teacher higher on {r['teacher_higher']}/{r['n']} questions; mean gap {r['mean_gap_nats']:+.2f} nats")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
