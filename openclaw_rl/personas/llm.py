"""An LLM playing a persona, through any OpenAI-compatible endpoint (``--user-llm-url``).

The rating follows G-Eval (Liu et al. 2023, "G-Eval: NLG Evaluation using GPT-4 with Better Human
Alignment"): the model is asked for a single digit 1-5 and, when the endpoint returns
``top_logprobs``, the rating is the probability-weighted mean over the digits 1-5 at the first
generated position; otherwise the first digit 1-5 of the text. Requests carry ``X-Turn-Type: side``
so an OpenClaw-RL server used as the user never trains on them.
"""

from __future__ import annotations

import math
import os
import re
import uuid

from openclaw_rl.personas.base import Persona, Rating, RatingError

_DIGIT = re.compile(r"[1-5]")


def _transcript(messages: list[dict]) -> str:
    return "\n\n".join(f"{m['role'].upper()}: {m['content']}" for m in messages if m.get("content"))


class LLMUser:
    """The persona ``persona`` played by a model behind ``base_url`` (an OpenAI-compatible ``/v1``).

    ``opening`` is the persona's (the same first message as the rule-based user, so runs compare);
    ``rate`` and ``feedback`` ask the model. Raises :class:`RatingError` when no rating can be read.
    """

    def __init__(self, persona: Persona, base_url: str, *, model: str | None = None, api_key: str | None = None,
                 timeout: float = 600.0):
        import openai

        self.persona = persona
        self.name = persona.name
        self.preference = persona.preference
        self.client = openai.OpenAI(base_url=base_url, api_key=api_key or os.environ.get("OPENAI_API_KEY", "none"),
                                    timeout=timeout, max_retries=2)
        self.model = model or self.client.models.list().data[0].id

    def _headers(self) -> dict:
        return {"X-Turn-Type": "side", "X-Session-Id": f"eval-user-{uuid.uuid4().hex}", "X-Session-Done": "true"}

    def opening(self, item: dict) -> list[dict]:
        """The persona's first messages for ``item``."""
        return self.persona.opening(item)

    def rate(self, reply: str, item: dict) -> Rating:
        """Ask the model, as the persona, for a 1-5 rating of ``reply`` (G-Eval weighting).

        Raises:
            RatingError: neither the logprobs nor the text held a digit 1-5.
            openai.OpenAIError: the endpoint failed.
        """
        prompt = (f"{_transcript(self.opening(item))}\n\nASSISTANT: {reply}\n\n"
                  f"You are the user above. Your stated preference: \"{self.preference}\"\n"
                  "How satisfied are you with the assistant's reply? Answer with a single digit from 1 "
                  "(very unsatisfied) to 5 (fully satisfied), nothing else.")
        r = self.client.chat.completions.create(
            model=self.model, temperature=0, max_tokens=4, logprobs=True, top_logprobs=20,
            messages=[{"role": "system", "content": self.persona.description},
                      {"role": "user", "content": prompt}], extra_headers=self._headers())
        choice = r.choices[0]
        score = self._weighted(choice)
        if score is None:
            m = _DIGIT.search(choice.message.content or "")
            if not m:
                raise RatingError(f"LLM user gave no 1-5 rating: {(choice.message.content or '')[:80]!r}")
            score = float(m.group())
        return Rating(round(score, 4), (), f"llm:{self.model}", "")

    @staticmethod
    def _weighted(choice) -> float | None:
        content = getattr(choice.logprobs, "content", None) if choice.logprobs else None
        if not content:
            return None
        probs = {}
        for alt in content[0].top_logprobs or []:
            tok = alt.token.strip()
            if tok in {"1", "2", "3", "4", "5"}:
                probs[tok] = probs.get(tok, 0.0) + math.exp(alt.logprob)
        total = sum(probs.values())
        if total <= 0:
            return None
        return sum(int(k) * v for k, v in probs.items()) / total

    def feedback(self, reply: str, item: dict) -> str:
        """The persona's next message after ``reply``, written by the model (side turn)."""
        msgs = [{"role": "system", "content": self.persona.description + " Stay in role; reply in one or two "
                                                                         "sentences as the user."},
                {"role": "user", "content": f"{_transcript(self.opening(item))}\n\nASSISTANT: {reply}\n\n"
                                            "Write the user's next message."}]
        r = self.client.chat.completions.create(model=self.model, temperature=0, max_tokens=80, messages=msgs,
                                                extra_headers=self._headers())
        return (r.choices[0].message.content or "").strip()
