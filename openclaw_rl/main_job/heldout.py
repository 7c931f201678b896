"""Held-out measurement: how often the served policy meets the user's preference on questions it
is never trained on, and the paired comparison of two measurements.

Each question is asked once, as a side turn (never trained on), at temperature 1 with a fixed seed
per question (``seed + index``), so a measurement is reproducible for the same weights and the
same questions are asked before and after training.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

from openclaw_rl.evaluation.stats import mcnemar_exact, paired_delta, wilson_interval
from openclaw_rl.main_job.questions import Question
from openclaw_rl.opd.hint_prompt import HINT_FORMAT
from openclaw_rl.preferences import Preference

__all__ = ["measure", "compare"]

SYSTEM = "You are a helpful assistant."


def user_message(question: Question, preference: Preference) -> str:
    """The user's first message: the question, then the stated preference (none when its
    instruction is empty)."""
    return f"{question.text}\n\n{preference.instruction}" if preference.instruction else question.text


def measure(base_url: str, api_key: str, questions: list[Question], preference: Preference,
            max_tokens: int, seed: int = 1000, concurrency: int = 2, model: str = "policy",
            hint: str | None = None) -> dict:
    """Ask every question once and check each reply against ``preference`` as the simulated user
    does (:meth:`openclaw_rl.preferences.Preference.satisfied` with the question: the rule, and
    nothing a person objects to, a reply that leaves the question included).

    Args:
        base_url: server root (no ``/v1``). api_key: its key.
        questions: the held-out questions. preference: what the user asked for.
        max_tokens: reply budget. seed: question ``i`` is sampled with ``seed + i``.
        concurrency: requests in flight. model: the served model name.
        hint: when set, appended to the user message as OPD's teacher sees a hint
            (:data:`openclaw_rl.opd.hint_prompt.HINT_FORMAT`): measures what the hinted teacher does.

    Returns:
        ``{"rate", "n", "ci95": [low, high] (Wilson), "satisfied": {question id: bool},
        "replies": {question id: text}, "cut": {question id: bool} (the reply ended on
        ``max_tokens``; a person rejects it, :meth:`Preference.quality_problem`), "seconds"}``.

    Raises:
        openai.OpenAIError: a request failed (a measurement with holes would not be paired).
    """
    import openai

    client = openai.OpenAI(base_url=base_url + "/v1", api_key=api_key, max_retries=2, timeout=900)
    t0 = time.time()
    suffix = HINT_FORMAT.format(hint=hint) if hint else ""

    def ask(item: tuple[int, Question]) -> tuple[str, str]:
        i, q = item
        r = client.chat.completions.create(
            model=model, max_tokens=max_tokens, temperature=1.0, seed=seed + i,
            messages=[{"role": "system", "content": SYSTEM},
                      {"role": "user", "content": user_message(q, preference) + suffix}],
            extra_headers={"X-Turn-Type": "side", "X-Session-Id": f"heldout-{time.time_ns()}-{i}"})
        return q.id, (r.choices[0].message.content or "", r.choices[0].finish_reason == "length")

    with ThreadPoolExecutor(max(1, concurrency)) as pool:
        answered = dict(pool.map(ask, enumerate(questions)))
    asked = {q.id: q.text for q in questions}
    replies = {qid: text for qid, (text, _) in answered.items()}
    cut = {qid: was_cut for qid, (_, was_cut) in answered.items()}
    satisfied = {qid: preference.satisfied(text, asked[qid], cut=cut[qid]) for qid, text in replies.items()}
    n, ok = len(satisfied), sum(satisfied.values())
    return {"rate": ok / max(1, n), "n": n, "ci95": list(wilson_interval(ok, n)), "satisfied": satisfied,
            "replies": replies, "cut": cut, "seconds": round(time.time() - t0, 1)}


def compare(before: dict, after: dict) -> dict:
    """Paired comparison of two :func:`measure` results on the same questions.

    Returns:
        ``{"before", "after", "delta", "delta_ci95": [low, high]`` (Student's t over the per-question
        differences), ``"mcnemar": {"n", "improved", "worsened", "p_value"}`` (exact)}.
    """
    b = {k: float(v) for k, v in before["satisfied"].items()}
    a = {k: float(v) for k, v in after["satisfied"].items()}
    d = paired_delta(b, a)
    return {"before": before["rate"], "after": after["rate"], "delta": d["delta"], "delta_ci95": d["ci95"],
            "mcnemar": mcnemar_exact(before["satisfied"], after["satisfied"])}
