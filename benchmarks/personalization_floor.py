"""The base model's floor on the personalization benchmark's personas, per reply budget.

Before spending hours on ``openclaw-test/run_personalization.sh``, ask whether the model can pass a
persona's rule at all within the budget: a persona nobody passes untrained gives Binary RL nothing
to reinforce, and on a small model the users' rejection of a cut reply usually decides it (docs/
evaluation.md, "Personalization benchmark"). For each persona this samples the first reply to
``--questions`` of its training questions once, with the main job's system prompt and first
message (the question with the stated preference), at the server's default temperature and up to
the largest budget, then cuts each reply at every budget in ``--budgets`` and scores it as the
bench's user would (:meth:`openclaw_rl.personalization.personas.BenchPersona.passes` with ``cut``
when the reply did not end inside the budget; the TA's threshold scales with each budget).

    python benchmarks/personalization_floor.py [--model-path builtin:smollm2-135m] \
        [--persona student,ta,teacher] [--questions 16] [--budgets 32,64,96,128] [--seed 0]

Prints, per budget and persona, the replies that pass, that were cut, and why the rest missed.
Sampling runs in this process with transformers' ``generate`` (batched, left padding), not
through the server: the same chat template and sampling settings, none of the serving machinery.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

import torch  # noqa: E402

from openclaw_rl.main_job.heldout import SYSTEM, user_message  # noqa: E402
from openclaw_rl.main_job.questions import question_sets  # noqa: E402
from openclaw_rl.models import load_model, load_tokenizer  # noqa: E402
from openclaw_rl.personalization.personas import PAPER_PERSONAS, PERSONAS, ReplyBudget, get_persona  # noqa: E402


def sample_first_replies(model, tok, prompts: list[str], max_new: int, temperature: float) -> list[list[int]]:
    """One sampled reply per prompt (token ids, up to ``max_new``, cut at the first end token)."""
    tok.padding_side = "left"
    enc = tok(prompts, return_tensors="pt", padding=True, add_special_tokens=False)
    with torch.no_grad():
        out = model.generate(**enc, max_new_tokens=max_new, do_sample=temperature > 0, temperature=temperature or None,
                             top_p=1.0, pad_token_id=tok.pad_token_id)
    replies = []
    for row in out[:, enc.input_ids.shape[1]:].tolist():
        ids = [t for t in row if t != tok.pad_token_id]
        replies.append(ids[:ids.index(tok.eos_token_id) + 1] if tok.eos_token_id in ids else ids)
    return replies


def main(argv: list[str] | None = None) -> int:
    """Run the probe (module docstring); returns 0.

    Raises:
        SystemExit(2): bad flags (an unknown persona, a budget that is not a positive integer).
    """
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model-path", default="builtin:smollm2-135m")
    p.add_argument("--persona", default=",".join(PAPER_PERSONAS))
    p.add_argument("--questions", type=int, default=16, help="training questions per persona")
    p.add_argument("--budgets", default="32,64,96,128", help="reply budgets in tokens, comma-separated")
    p.add_argument("--temperature", type=float, default=1.0, help="the server's default is 1.0")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--torch-threads", type=int, default=None)
    a = p.parse_args(argv)
    try:
        budgets = sorted({int(b) for b in a.budgets.split(",")})
    except ValueError:
        p.error(f"--budgets {a.budgets!r}: comma-separated integers")
    if not budgets or budgets[0] < 1 or a.questions < 1:
        p.error("--budgets and --questions must be >= 1")
    names = [n for n in a.persona.split(",") if n]
    for n in names:
        if n not in PERSONAS:
            p.error(f"--persona {n!r}: choose from {', '.join(PERSONAS)}")
    if a.torch_threads:
        torch.set_num_threads(a.torch_threads)
    torch.manual_seed(a.seed)
    tok, model = load_tokenizer(a.model_path), load_model(a.model_path).eval()
    count = lambda text: len(tok.encode(text, add_special_tokens=False))  # noqa: E731
    train, _ = question_sets(1)
    print(f"{a.model_path}: {a.questions} first replies per persona, temperature {a.temperature}, seed {a.seed}")
    for name in names:
        persona = get_persona(name, ReplyBudget(budgets[-1], count))
        questions = persona.questions(train)[:a.questions]
        prompts = [tok.apply_chat_template([{"role": "system", "content": SYSTEM},
                                            {"role": "user", "content": user_message(q, persona.preference)}],
                                           tokenize=False, add_generation_prompt=True) for q in questions]
        replies = sample_first_replies(model, tok, prompts, budgets[-1], a.temperature)
        for budget in budgets:
            scored = get_persona(name, ReplyBudget(budget, count))
            why: Counter[str] = Counter()
            passed = cut = 0
            for q, ids in zip(questions, replies):
                body = [t for t in ids if t != tok.eos_token_id]
                is_cut = len(body) >= budget  # the reply did not end before the budget (finish 'length')
                text = tok.decode(body[:budget], skip_special_tokens=True)
                cut += is_cut
                miss = scored.miss_reason(text, q.text, cut=is_cut)
                passed += miss is None
                if miss:
                    why[miss] += 1
            print(f"  {name:8s} budget {budget:4d}: pass {passed}/{len(questions)}, cut {cut}; missed: "
                  + (", ".join(f"{k} {v}" for k, v in why.most_common()) or "none"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
