"""``--prm-mode channel``: noisy-channel scoring of the next state (Min et al. 2022).

A direct judge asks the model for ``P(verdict | turn)``; a small model answers that with a strong
prior for one verdict whatever the turn says (the ``logprob`` mode of the embedded 135M model
gives ``+1`` to most corrections). The channel judge asks the reverse question: how likely is
**this next state** under each verdict,

    score(v) = log P(next_state | statement_v)        v in {+1, -1}

where ``statement_v`` is a short sentence that states the verdict in words ("The user was happy
with the answer and replied:" / "The answer was wrong, so the user complained and replied:";
for a tool result "The tool call succeeded and returned:" / "The tool call failed and
returned:"). The next state's tokens are the same under both statements, so their own
frequency cancels and no calibration is needed. ``probs`` are the two scores normalised
(``{1: p, -1: 1 - p, 0: 0.0}``), so this mode never answers ``0``; votes are the argmax (or draws
with ``vote="sample"``).

Cost: the four statement prefixes are encoded once and cached; each turn then costs two short
forward passes over its next state (at most :data:`MAX_STATE_TOKENS` tokens). Only the next state
and its role are read, never the reply.

Reference: Min, Lewis, Hajishirzi, Zettlemoyer 2022, "Noisy Channel Language Model Prompting for
Few-Shot Text Classification" (ACL).
"""

from __future__ import annotations

import asyncio
import copy
import math

from openclaw_rl.judges.backends import BackendScore, LocalJudgeBackend, _check_n
from openclaw_rl.judges.prompts import state_text

__all__ = ["ChannelJudgeBackend", "STATEMENTS", "MAX_STATE_TOKENS"]

#: the verdict statements, per next-state role (anything but "tool" reads as "user")
STATEMENTS: dict[str, dict[int, str]] = {
    "user": {1: "The user was happy with the answer and replied:",
             -1: "The answer was wrong, so the user complained and replied:"},
    "tool": {1: "The tool call succeeded and returned:", -1: "The tool call failed and returned:"},
}
#: next-state tokens scored (the head; the rest is cut)
MAX_STATE_TOKENS = 128


class ChannelJudgeBackend(LocalJudgeBackend):
    """Noisy-channel PRM votes from a local causal LM (module docstring).

    Args:
        model_path / model / tokenizer / device / dtype / seed / vote: as
            :class:`~openclaw_rl.judges.backends.LocalJudgeBackend`.

    Raises:
        ValueError: bad ``vote``.
        openclaw_rl.models.ModelPathError: bad ``model_path``.
    """

    def __init__(self, model_path: str | None = None, vote: str = "argmax", seed: int = 0, **kw):
        super().__init__(model_path, mode="logprob", vote=vote, seed=seed, **kw)
        self.mode = "channel"
        self.name = f"local:{self.model_path}:channel"
        self._prefix: dict[tuple[str, int], tuple] = {}

    def _prefix_state(self, role: str, verdict: int):
        import torch

        key = (role, verdict)
        if key not in self._prefix:
            dev = next(self.model.parameters()).device
            ids = self._prompt_ids(STATEMENTS[role][verdict])
            out = self.model(input_ids=torch.tensor([ids], device=dev), use_cache=True)
            self._prefix[key] = (out.cache, torch.log_softmax(out.logits[0, -1].float(), -1))
        return self._prefix[key]

    def state_logprobs(self, next_state: str, role: str | None) -> dict[int, float]:
        """``{1: log P(next_state | statement_+1), -1: log P(next_state | statement_-1)}`` (sums
        over the next state's first :data:`MAX_STATE_TOKENS` tokens)."""
        import torch

        role = "tool" if role == "tool" else "user"
        text = " " + (state_text(next_state, role) or "(empty)")
        ids = self._prompt_ids(text)[:MAX_STATE_TOKENS]
        dev = next(self.model.parameters()).device
        out: dict[int, float] = {}
        with self._lock, torch.inference_mode():
            for v in (1, -1):
                cache, head = self._prefix_state(role, v)
                total = float(head[ids[0]])
                if len(ids) > 1:
                    step = self.model(input_ids=torch.tensor([ids[:-1]], device=dev), cache=copy.deepcopy(cache),
                                      use_cache=True)
                    logp = torch.log_softmax(step.logits[0].float(), -1)
                    total += float(logp.gather(-1, torch.tensor(ids[1:], device=dev)[:, None]).sum())
                out[v] = total
        return out

    def state_probs(self, next_state: str, role: str | None) -> dict[int, float]:
        """The two channel scores normalised: ``{1: p, -1: 1 - p, 0: 0.0}`` (sums to 1)."""
        lp = self.state_logprobs(next_state, role)
        p_pos = 1.0 / (1.0 + math.exp(max(-700.0, min(700.0, lp[-1] - lp[1]))))
        return {1: p_pos, -1: 1.0 - p_pos, 0: 0.0}

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
        raise ValueError("the channel PRM scores a JudgeInput (next state and role), not judge messages")
