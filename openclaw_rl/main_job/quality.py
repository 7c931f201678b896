"""Quality next to satisfaction: what a person would notice that the preference rule does not.

Per held-out reply (:func:`reply_quality`): the preference's words said three or more times
(over-application), distinct word pairs (distinct-2), length in words, the
:mod:`slime.guards.behaviour` problems and whether it is on topic (shares a content word with its question,
the preference's words aside: a reply that turns to small talk shares none). Per measurement (:func:`quality_summary`) the rates and means
with 95% intervals (Wilson for rates, Student's t for means). General ability
(:func:`reference_nll`): the per-token NLL of MT-bench's reference answers under the base model
and under the trained checkpoint, paired per answer.
"""

from __future__ import annotations

import re
from pathlib import Path

from openclaw_rl.evaluation.stats import mean_interval, wilson_interval
from slime.guards.behaviour import behaviour_problems, distinct_pairs, on_topic, words

__all__ = ["OVER_APPLIED_USES", "on_topic", "quality_summary", "reference_nll", "reply_quality"]

#: the preference's words this often in one reply count as over-applied (the issue's measure)
OVER_APPLIED_USES = 3


def reply_quality(reply: str, terms: tuple[str, ...], question: str | None = None) -> dict:
    """``{"term_uses", "over_applied", "distinct_pairs", "words", "problems"}`` of one reply, and
    ``"on_topic"`` (:func:`on_topic`) when ``question`` is given.

    ``term_uses`` counts the preference's words (case-insensitive, whole words, ``Alex's`` counts).
    """
    uses = sum(len(re.findall(rf"\b{re.escape(t)}\b", reply, flags=re.I)) for t in terms)
    row = {"term_uses": uses, "over_applied": bool(terms) and uses >= OVER_APPLIED_USES,
           "distinct_pairs": distinct_pairs(reply), "words": len(words(reply)),
           "problems": [p.value for p in behaviour_problems(reply, terms)]}
    if question is not None:
        row["on_topic"] = on_topic(reply, question, terms)
    return row


def quality_summary(replies: dict[str, str], terms: tuple[str, ...], questions: dict[str, str] | None = None,
                    cut: dict[str, bool] | None = None) -> dict:
    """Rates and means over one measurement's replies.

    Args:
        replies: question id -> reply. terms: the preference's words.
        questions: question id -> question text; when given, the on-topic rate is added.
        cut: question id -> whether the reply ended on the token budget; when given, its rate is
            added as ``"cut_off"``.

    Returns:
        ``{"over_application": {"rate", "ci95"}, "any_problem": {"rate", "ci95"},
        "distinct_pairs": {"mean", "ci95"}, "words": {"mean", "ci95"}, "term_share": share of all
        words that are the preference's words, "n"}``, and ``"on_topic": {"rate", "ci95"}`` with
        ``questions``, ``"cut_off": {"rate", "ci95"}`` with ``cut``.
    """
    rows = [reply_quality(r, terms, None if questions is None else questions[k]) for k, r in replies.items()]
    n = len(rows)

    def rate(key):
        k = sum(bool(r[key]) for r in rows)
        return {"rate": k / max(1, n), "ci95": list(wilson_interval(k, n))}

    def mean(key):
        m, lo, hi = mean_interval([float(r[key]) for r in rows])
        return {"mean": m, "ci95": [lo, hi]}

    total_words = sum(r["words"] for r in rows)
    out = {"n": n, "over_application": rate("over_applied"), "any_problem": rate("problems"),
           "distinct_pairs": mean("distinct_pairs"), "words": mean("words"),
           "term_share": sum(r["term_uses"] for r in rows) / max(1, total_words)}
    if questions is not None:
        out["on_topic"] = rate("on_topic")
    if cut is not None:
        k = sum(bool(cut.get(q)) for q in replies)
        out["cut_off"] = {"rate": k / max(1, n), "ci95": list(wilson_interval(k, n))}
    return out


def reference_nll(base_model: str, checkpoint: str | Path | None, limit: int = 16) -> dict:
    """Per-token NLL of MT-bench's reference answers under the base model and, when given, the
    trained checkpoint (a LoRA adapter folder or a full model folder), paired per answer.

    Args:
        base_model: ``--model-path`` of the run. checkpoint: the run's ``checkpoint-latest``, or None.
        limit: reference answers used (:func:`openclaw_rl.rollout.gate_items.reference_set`).

    Returns:
        ``{"n", "before", "after", "rise": after / before - 1, "rise_ci95"}`` (per-token NLL in nats;
        the interval is Student's t over the per-answer relative rises); ``after`` and ``rise`` are
        None without a checkpoint; ``n`` is 0 when the reference set is not installed.
    """
    import torch
    from transformers import AutoModelForCausalLM

    from openclaw_rl.models import load_tokenizer, resolve_model_path
    from openclaw_rl.rollout.gate_items import SYSTEM, reference_set

    pairs = reference_set(limit)
    if not pairs:
        return {"n": 0, "before": None, "after": None, "rise": None, "rise_ci95": None}
    tok = load_tokenizer(base_model)
    items = []
    for q, a in pairs:
        prompt = tok.apply_chat_template([{"role": "system", "content": SYSTEM}, {"role": "user", "content": q}],
                                         add_generation_prompt=True, tokenize=False)
        p_ids = tok(prompt, add_special_tokens=False)["input_ids"]
        a_ids = tok(a, add_special_tokens=False)["input_ids"][:192]
        items.append((p_ids, a_ids))

    def nlls(model) -> list[float]:
        out = []
        with torch.no_grad():
            for p_ids, a_ids in items:
                ids = torch.tensor([p_ids + a_ids])
                logits = model(input_ids=ids).logits[0, len(p_ids) - 1:-1].float()
                lp = torch.log_softmax(logits, -1).gather(-1, torch.tensor(a_ids)[:, None])[:, 0]
                out.append(float(-lp.mean()))
        return out

    base = AutoModelForCausalLM.from_pretrained(resolve_model_path(base_model), torch_dtype=torch.float32).eval()
    before = nlls(base)
    after = None
    if checkpoint is not None and Path(checkpoint).exists():
        ckpt = Path(checkpoint).resolve()
        if (ckpt / "adapter_config.json").is_file():
            from peft import PeftModel
            trained = PeftModel.from_pretrained(base, str(ckpt)).eval()
        else:
            trained = AutoModelForCausalLM.from_pretrained(ckpt, torch_dtype=torch.float32).eval()
        after = nlls(trained)
    b = sum(before) / len(before)
    if after is None:
        return {"n": len(items), "before": b, "after": None, "rise": None, "rise_ci95": None}
    a = sum(after) / len(after)
    _, lo, hi = mean_interval([x / y - 1 for x, y in zip(after, before)])
    return {"n": len(items), "before": b, "after": a, "rise": a / b - 1, "rise_ci95": [lo, hi]}
