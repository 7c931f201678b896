"""The teacher: wants grading comments on a student's solution that are specific and encouraging.

Items: a GSM8K problem with a student's worked solution (``item["work"]``), which is right or ends
in a slip (``item["flawed"]``, the slipped final number in ``item["given"]``; the reference in
``item["answer"]``). Four checks of the stated preference:

* ``specific`` — the comment refers to the student's own work: it names a number from it;
* ``addresses_result`` — a flawed solution: the comment points at the slip (says to check /
  recheck / a mistake, or gives the right number without calling the student's answer right); a
  right one: it says the answer is right and claims no mistake;
* ``encouraging`` — praise or encouragement, and no harsh words;
* ``comment_length`` — a comment, not an essay: 10 to 150 words.
"""

from __future__ import annotations

import re

from openclaw_rl.personas.base import Persona, numbers_in, word_count

ENCOURAGING = ("good", "great", "well done", "nice", "excellent", "keep", "proud", "progress", "effort",
               "you can", "almost", "close", "awesome", "fantastic", "impressive", "strong", "solid", "clear",
               "keep it up", "good job", "nicely")
HARSH = ("stupid", "lazy", "careless", "terrible", "awful", "sloppy", "pathetic", "useless", "disappointing",
         "lousy", "poor work", "bad work", "ridiculous", "no effort")
ERROR_WORDS = ("mistake", "error", "check", "recheck", "double-check", "not quite", "incorrect", "wrong",
               "slip", "revisit", "look again", "off by", "miscalculat", "should be", "careful")
CORRECT_WORDS = ("correct", "right", "accurate", "well done", "good job", "great job", "nailed", "perfect",
                 "spot on", "exactly")


def _has_any(text: str, words) -> bool:
    low = text.lower().replace("\u2019", "'")
    return any(re.search(r"\b" + re.escape(w), low) for w in words)


class TeacherUser(Persona):
    """A teacher who wants a specific, encouraging grading comment for a student's GSM8K solution."""

    name = "teacher"
    preference = ("Please write a short grading comment I can give to the student. I want comments that are "
                  "specific (point to what the student actually did, with their numbers) and encouraging "
                  "(kind and motivating, never harsh).")
    description = ("You are a teacher grading math homework. You want grading comments that are specific "
                   "(they refer to the student's own steps and numbers), say whether the answer is right, and "
                   "are encouraging and kind.")
    checks = ("specific", "addresses_result", "encouraging", "comment_length")
    corrections = {
        "specific": "This is too generic. Please point to the student's actual steps and numbers.",
        "addresses_result": "You didn't tell the student whether their answer is right. Please be accurate about it.",
        "encouraging": "That could discourage the student. Please make it kind and encouraging.",
        "comment_length": "Please keep it to a short comment of a few sentences.",
    }
    thanks = "Thank you, that's a specific and encouraging comment. I'll use it."

    def opening(self, item: dict) -> list[dict]:
        """The problem, the student's work and the stated preference (no system prompt)."""
        return [{"role": "user", "content": (
            f"I'm grading my class's math homework.\n\nProblem: {item['question']}\n\n"
            f"My student's solution:\n{item['work']}\n\n{self.preference}")}]

    def failed_checks(self, reply: str, item: dict) -> list[str]:
        """The failed checks among ``specific``, ``addresses_result``, ``encouraging``, ``comment_length``."""
        work_numbers = set(numbers_in(item["work"]))
        said = numbers_in(reply)
        gold = numbers_in(str(item["answer"]))[-1]
        if item.get("flawed"):  # names the slip, contrasts the given and right numbers, or gives the right one
            given = numbers_in(str(item["given"]))[-1]
            addressed = (_has_any(reply, ERROR_WORDS) or (gold in said and given in said)
                         or (gold in said and not _has_any(reply, CORRECT_WORDS)))
        else:
            addressed = _has_any(reply, CORRECT_WORDS) and not _has_any(
                reply, ("mistake", "incorrect", "wrong", "not correct", "not right", "not quite"))
        ok = {"specific": any(n in work_numbers for n in said),
              "addresses_result": addressed,
              "encouraging": _has_any(reply, ENCOURAGING) and not _has_any(reply, HARSH),
              "comment_length": 10 <= word_count(reply) <= 150}
        return [c for c in self.checks if not ok[c]]
