"""The student: brings grade-school math homework and wants answers that don't look machine-written.

Items are GSM8K problems (Cobbe et al. 2021, "Training Verifiers to Solve Math Word Problems"):
``{"question": str, "answer": "<final number>"}``. Four checks of the stated preference:

* ``correct`` — the last number in the reply is the reference answer (GSM8K's final-answer rule);
* ``plain_text`` — no markdown (lists, headings, bold), no LaTeX, no code blocks;
* ``no_chatbot_phrases`` — none of the phrases that give a chatbot away ("Certainly!", "I hope
  this helps", "As an AI", "step-by-step", ...);
* ``short`` — a few sentences: 5 to 120 words.
"""

from __future__ import annotations

import re

from openclaw_rl.personas.base import Persona, numbers_in, word_count
from openclaw_rl.simulated_user import violates_preference

_LATEX = re.compile(r"\\\(|\\\[|\$\$|\\frac|\\boxed|\\times|\\cdot|\\text\{|\\div")
CHATBOT_PHRASES = (
    "certainly", "absolutely!", "great question", "i hope this helps", "hope this helps", "hope that helps",
    "as an ai", "language model", "let's break", "let me break", "step-by-step", "step by step",
    "in conclusion", "feel free to", "let me know if", "happy to help", "i'd be happy", "delve",
    "sure!", "of course!",
)


def chatbot_phrases(reply: str) -> list[str]:
    """The phrases of :data:`CHATBOT_PHRASES` found in ``reply`` (case-insensitive)."""
    low = reply.lower().replace("\u2019", "'")
    return [p for p in CHATBOT_PHRASES if p in low]


def looks_formatted(reply: str) -> bool:
    """True for markdown (list, heading, bold), LaTeX or a code block."""
    return violates_preference(reply) or bool(_LATEX.search(reply)) or "```" in reply


def final_answer_correct(reply: str, answer: str) -> bool:
    """GSM8K's rule: the last number in ``reply`` equals the reference ``answer`` (1e-6 tolerance)."""
    nums = numbers_in(reply)
    gold = numbers_in(str(answer))
    return bool(nums and gold) and abs(nums[-1] - gold[-1]) < 1e-6


class StudentUser(Persona):
    """A student with GSM8K homework who wants a correct answer that reads like a friend wrote it."""

    name = "student"
    preference = ("Can you help me with it? Please explain it like a friend would, in a few plain sentences, "
                  "so it doesn't look machine-written: no markdown, lists, headings, bold or LaTeX, and no "
                  "chatbot phrases like 'Certainly!' or 'I hope this helps'. End with the final number.")
    description = ("You are a middle-school student doing math homework. You want the right answer, explained "
                   "briefly in plain, casual sentences that don't look machine-written (no markdown, no lists, "
                   "no LaTeX, no chatbot phrases).")
    checks = ("correct", "plain_text", "no_chatbot_phrases", "short")
    corrections = {
        "correct": "Hmm, I don't think that's the right answer. Can you check the numbers again?",
        "plain_text": ("Please write it as normal sentences, without formatting or math symbols; "
                       "my teacher would see right away that a computer wrote it."),
        "no_chatbot_phrases": "You sound like a chatbot. Can you say it the way a friend would?",
        "short": "That's too long (or too short). A few sentences is all I need.",
    }
    thanks = "Thanks, that makes sense and sounds like me!"

    def opening(self, item: dict) -> list[dict]:
        """The homework problem followed by the stated preference (no system prompt)."""
        return [{"role": "user", "content": f"Here's a problem from my math homework:\n\n{item['question']}\n\n"
                                            f"{self.preference}"}]

    def failed_checks(self, reply: str, item: dict) -> list[str]:
        """The failed checks among ``correct``, ``plain_text``, ``no_chatbot_phrases``, ``short``."""
        ok = {"correct": final_answer_correct(reply, item["answer"]),
              "plain_text": not looks_formatted(reply),
              "no_chatbot_phrases": not chatbot_phrases(reply),
              "short": 5 <= word_count(reply) <= 120}
        return [c for c in self.checks if not ok[c]]
