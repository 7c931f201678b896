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

from openclaw_rl.personas.base import Persona, Rating, RatingError
from openclaw_rl.personas.llm import LLMUser
from openclaw_rl.personas.plain import PlainProseUser
from openclaw_rl.personas.student import StudentUser
from openclaw_rl.personas.teacher import TeacherUser

PERSONAS: dict[str, type[Persona]] = {"plain": PlainProseUser, "student": StudentUser, "teacher": TeacherUser}

__all__ = ["PERSONAS", "Persona", "PlainProseUser", "Rating", "RatingError", "StudentUser", "TeacherUser",
           "make_user"]


def make_user(persona: str | Persona, llm_url: str | None = None, *, llm_model: str | None = None,
              llm_api_key: str | None = None, timeout: float = 600.0):
    """The simulated user for ``persona``: rule-based, or an LLM playing it when ``llm_url`` is set.

    Args:
        persona: a name from :data:`openclaw_rl.personas.PERSONAS` or a :class:`Persona`.
        llm_url: base URL of any OpenAI-compatible endpoint (``.../v1``), or None for the rules.
        llm_model: model name sent to that endpoint (default: the first of its ``/v1/models``).
        llm_api_key: its API key (default ``$OPENAI_API_KEY`` or ``"none"``).

    Returns:
        An object with ``opening(item)``, ``rate(reply, item) -> Rating`` and ``feedback(reply, item)``.

    Raises:
        KeyError: unknown persona name.
    """
    p = PERSONAS[persona]() if isinstance(persona, str) else persona
    if not llm_url:
        return p
    return LLMUser(p, llm_url, model=llm_model, api_key=llm_api_key, timeout=timeout)
