"""Simulated users with a stated preference, shared by the main job and the evaluation.

A :class:`~openclaw_rl.personas.base.Persona` says who the user is, what they ask first and what
they prefer; it rates a reply (1-5) and answers it the way a person would, by deterministic rules.
:class:`~openclaw_rl.personas.llm.LLMUser` plays the same persona with any OpenAI-compatible model.

* ``plain`` — the main job's user (:mod:`openclaw_rl.simulated_user`): plain sentences, no markdown.
* ``student`` — brings grade-school math homework (GSM8K) and wants answers that do not look
  machine-written.
* ``teacher`` — wants grading comments on a student's GSM8K solution that are specific and
  encouraging.
"""

from openclaw_rl.personas.base import Persona, Rating, RatingError, make_user
from openclaw_rl.personas.plain import PlainProseUser
from openclaw_rl.personas.student import StudentUser
from openclaw_rl.personas.teacher import TeacherUser

PERSONAS: dict[str, type[Persona]] = {"plain": PlainProseUser, "student": StudentUser, "teacher": TeacherUser}

__all__ = ["PERSONAS", "Persona", "PlainProseUser", "Rating", "RatingError", "StudentUser", "TeacherUser",
           "make_user"]
