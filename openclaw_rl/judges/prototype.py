"""``--prm-mode prototype``: the nearest labelled prototype of the next state in the model's hidden space.

Few-shot *prompting* of a 135M model is unstable: the same eight example next states in three
different orders gave 76 %, 43 % and 62 % on the extended judge case set (docs/judges.md). This
mode uses the example cases another way, as labelled points, the way prototypical networks do
(Snell, Swersky, Zemel 2017):

1. each of the :data:`ANCHORS` (24 short next states, 8 per verdict, written for this module and
   not part of the judge case set) is embedded once: the mean of the model's last hidden layer
   over the tokens of ``"User message: <text>"`` or ``"Tool result: <text>"``;
2. each verdict's prototype is the normalised mean of its anchors' normalised embeddings;
3. a turn's next state is embedded the same way; ``probs`` is the softmax of its cosine
   similarities to the three prototypes times :data:`SCALE`; votes are the argmax (or draws).

No prompt, no order, one forward pass over the next state (at most :data:`MAX_STATE_TOKENS`
tokens). Only the next state and its role are read, never the reply. The ``probs`` are
similarity weights, not calibrated probabilities.
"""

from __future__ import annotations

import asyncio
import math

from openclaw_rl.judges.backends import BackendScore, LocalJudgeBackend, _check_n
from openclaw_rl.judges.prompts import VERDICTS, state_text

__all__ = ["PrototypeJudgeBackend", "ANCHORS", "SCALE", "MAX_STATE_TOKENS"]

#: labelled anchor next states: (role, text, verdict)
ANCHORS: tuple[tuple[str, str, int], ...] = (
    ("user", "Thanks a lot, that's what I was looking for.", 1),
    ("user", "No, you got the date wrong. It was 1969.", -1),
    ("tool", "total 3\n-rw-r--r-- 1 me me 120 data.csv", 1),
    ("user", "Hmm.", 0),
    ("user", "Please don't use bullet points, I want a paragraph.", -1),
    ("tool", "ValueError: could not convert string to float: 'abc'", -1),
    ("user", "Great, now translate it into Italian.", 1),
    ("user", "Can you say more about that?", 0),
    ("user", "That's too formal. Say it like a friend would.", -1),
    ("tool", '{"temperature": 21, "unit": "C"}', 1),
    ("user", "Alright.", 0),
    ("user", "Works great, cheers! How do I also export it to PDF?", 1),
    ("tool", "sh: 1: gti: not found", -1),
    ("user", "You left out the last step again.", -1),
    ("tool", "(empty)", 0),
    ("user", "Yes, that's right.", 1),
    ("user", "This isn't what I wanted at all. Do it over.", -1),
    ("user", "Wonderful, thank you so much!", 1),
    ("user", "Where did you get that number?", 0),
    ("tool", "Saved 3 rows to results.csv", 1),
    ("tool", "fatal: not a git repository", -1),
    ("user", "I don't like it. Make it funnier.", -1),
    ("user", "Cool, moving on: what's a good name for a dog?", 1),
    ("user", "Let me think.", 0),
)
#: cosine similarities are multiplied by this before the softmax
SCALE = 20.0
MAX_STATE_TOKENS = 128


def _text(role: str | None, next_state: str) -> str:
    body = state_text(next_state, role) or "(empty)"
    return f"{'Tool result' if role == 'tool' else 'User message'}: {body}"


class PrototypeJudgeBackend(LocalJudgeBackend):
    """Nearest-prototype PRM votes from a local model's hidden states (module docstring).

    Args:
        model_path / model / tokenizer / device / dtype / seed / vote: as
            :class:`~openclaw_rl.judges.backends.LocalJudgeBackend`.
        anchors: ``(role, text, verdict)`` triples, at least one per verdict (default :data:`ANCHORS`).

    Raises:
        ValueError: bad ``vote``, or a verdict without an anchor.
        openclaw_rl.models.ModelPathError: bad ``model_path``.
    """

    def __init__(self, model_path: str | None = None, vote: str = "argmax", seed: int = 0,
                 anchors=ANCHORS, **kw):
        if {a[2] for a in anchors} != set(VERDICTS):
            raise ValueError("prototype anchors need at least one next state per verdict (1, -1, 0)")
        super().__init__(model_path, mode="logprob", vote=vote, seed=seed, **kw)
        self.mode = "prototype"
        self.name = f"local:{self.model_path}:prototype"
        self.anchors = tuple(anchors)
        self._protos = None  # verdict -> unit vector [H], built on first use

    def embed(self, next_state: str, role: str | None):
        """The unit-norm mean last-layer hidden state ``[H]`` (float32, CPU) of the next state."""
        import torch

        ids = self._prompt_ids(_text(role, next_state))[:MAX_STATE_TOKENS]
        dev = next(self.model.parameters()).device
        with torch.inference_mode():
            hidden_1_T_H = self.model.base_model(input_ids=torch.tensor([ids], device=dev)).last_hidden_state
        return torch.nn.functional.normalize(hidden_1_T_H[0].float().mean(0), dim=-1).cpu()

    def _prototypes(self):
        import torch

        if self._protos is None:
            emb = {v: [] for v in VERDICTS}
            for role, text, v in self.anchors:
                emb[v].append(self.embed(text, role))
            self._protos = {v: torch.nn.functional.normalize(torch.stack(e).mean(0), dim=-1)
                            for v, e in emb.items()}
        return self._protos

    def state_probs(self, next_state: str, role: str | None) -> dict[int, float]:
        """Softmax of :data:`SCALE` x cosine similarity to each verdict's prototype (sums to 1)."""
        with self._lock:
            protos = self._prototypes()
            q_H = self.embed(next_state, role)
        sims = {v: float(protos[v] @ q_H) for v in VERDICTS}
        top = max(sims.values())
        z = sum(math.exp(SCALE * (s - top)) for s in sims.values())
        return {v: math.exp(SCALE * (sims[v] - top)) / z for v in VERDICTS}

    def _score_state(self, inp, n: int) -> BackendScore:
        probs = self.state_probs(inp.next_state, inp.next_state_role)
        return self.votes_from_probs(probs, n, f"{inp.next_state_role}\x00{inp.next_state}")

    async def score_input(self, inp, n: int, render=None) -> BackendScore:
        """``n`` votes for one :class:`~openclaw_rl.judges.prompts.JudgeInput` (``render`` is ignored).

        Raises:
            ValueError: ``n < 1``.
        """
        _check_n(n)
        return await asyncio.to_thread(self._score_state, inp, n)

    async def score(self, messages: list[dict], n: int) -> BackendScore:
        """Not supported: this mode reads the next state itself; use :meth:`score_input`.

        Raises:
            ValueError: always.
        """
        raise ValueError("the prototype PRM scores a JudgeInput (next state and role), not judge messages")
