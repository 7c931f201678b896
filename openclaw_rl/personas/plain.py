"""The main job's user as a persona: plain sentences, no markdown (:mod:`openclaw_rl.simulated_user`)."""

from __future__ import annotations

from openclaw_rl import simulated_user
from openclaw_rl.personas.base import Persona


class PlainProseUser(Persona):
    """Asks an MT-bench question (``item["question"]``) and wants plain sentences, no markdown.

    Its checks and answers are :func:`simulated_user.violates_preference` and
    :func:`simulated_user.feedback`, so the main job and the evaluation rate replies alike.
    """

    name = "plain"
    preference = simulated_user.PREFERENCE
    description = "You are a user who dislikes markdown: you want answers in plain sentences."
    checks = ("plain_text",)

    def opening(self, item: dict) -> list[dict]:
        """System prompt plus the question followed by the stated preference."""
        return [{"role": "system", "content": "You are a helpful assistant."},
                {"role": "user", "content": f"{item['question']}\n\n{self.preference}"}]

    def failed_checks(self, reply: str, item: dict) -> list[str]:
        """``["plain_text"]`` when the reply uses a markdown list, heading or bold text."""
        return ["plain_text"] if simulated_user.violates_preference(reply) else []

    def feedback(self, reply: str, item: dict) -> str:
        """Exactly the main job's :func:`simulated_user.feedback`, but a reply with a
        :meth:`person_problem` gets that problem's correction as with every persona."""
        if self.person_problem(reply) is not None:
            return super().feedback(reply, item)
        return simulated_user.feedback(reply)
