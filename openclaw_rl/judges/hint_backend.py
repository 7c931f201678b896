"""A local hint-judge backend with structured decoding, for small judge models.

Free generation from a small local model rarely follows the hint judge's answer format (measured
with SmolLM2-135M: 0 of 12 free answers had a ``Decision:`` line). :class:`StructuredHintBackend`
therefore constrains the answer the way guided decoding does in vLLM / SGLang:

1. **decision**: the log-probabilities of the two replies ``Decision: accept`` and
   ``Decision: reject`` after the judge prompt (one forward pass each), normalised over the
   two; votes are the argmax ``n`` times (``vote="argmax"``) or ``n`` seeded draws
   (``vote="sample"``, default, so weak preferences still show up as split votes);
2. **hint**: for each accept vote, the hint is sampled after the forced prefix
   ``Decision: accept\\n<hint>`` and cut at ``</hint>`` or the first line break.

The answers are returned as texts in the documented format, so they go through the same parser
(:func:`openclaw_rl.judges.hints.parse_hint_vote`) as an endpoint judge's answers. Results depend
only on ``seed`` and the prompt, not on call order.
"""

from __future__ import annotations

import asyncio
import math

from openclaw_rl.judges.backends import BackendScore, LocalJudgeBackend, _check_n, _stable_seed

__all__ = ["StructuredHintBackend", "ACCEPT", "REJECT"]

ACCEPT = "Decision: accept"
REJECT = "Decision: reject"


class StructuredHintBackend(LocalJudgeBackend):
    """Structured hint votes from a local model (see module docstring).

    Args:
        model_path / model / tokenizer / device / dtype / seed: as :class:`LocalJudgeBackend`.
        vote: ``"sample"`` (default) or ``"argmax"``.
        temperature: hint sampling temperature (> 0).
        max_new_tokens: hint budget in tokens.

    Raises:
        ValueError: bad ``vote`` or ``temperature``.
    """

    def __init__(self, model_path: str | None = None, vote: str = "sample", temperature: float = 0.7,
                 max_new_tokens: int = 64, seed: int = 0, **kw):
        super().__init__(model_path, mode="generate", vote=vote, temperature=temperature,
                         max_new_tokens=max_new_tokens, seed=seed, **kw)
        self.name = f"local-structured:{self.model_path}"
        self.mode = "structured"

    def _reply_logprob(self, prompt_ids: list[int], reply: str) -> float:
        import torch

        cont = self._prompt_ids(reply)
        dev = next(self.model.parameters()).device
        ids = torch.tensor([prompt_ids + cont], device=dev)
        with torch.inference_mode():
            logits = self.model(input_ids=ids, logits_to_keep=len(cont) + 1).logits[0, :-1].float()
        logp = torch.log_softmax(logits, -1)
        return float(logp.gather(-1, torch.tensor(cont, device=dev)[:, None]).sum())

    def accept_probability(self, messages: list[dict], text: str | None = None) -> float:
        """P(accept) from the two decision replies' log-probs, normalised over the two
        (``text``: the already rendered prompt of ``messages``)."""
        prompt = self._prompt_ids(text if text is not None else self.prompt_text(messages))
        with self._lock:
            a, r = self._reply_logprob(prompt, ACCEPT), self._reply_logprob(prompt, REJECT)
        return 1.0 / (1.0 + math.exp(r - a))

    def _hints(self, text: str, k: int) -> list[str]:
        import torch

        prefix = self._prompt_ids(text + ACCEPT + "\n<hint>")
        dev = next(self.model.parameters()).device
        ids = torch.tensor([prefix], device=dev)
        pad = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else self.tokenizer.eos_token_id
        with self._lock, torch.inference_mode(), torch.random.fork_rng(devices=[]):
            torch.manual_seed(_stable_seed(self.seed, text))
            out = self.model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), do_sample=True,
                                      temperature=self.temperature, top_p=1.0, top_k=0,
                                      max_new_tokens=self.max_new_tokens, num_return_sequences=k,
                                      pad_token_id=pad)
        raw = self.tokenizer.batch_decode(out[:, ids.shape[1]:], skip_special_tokens=True)
        return [r.split("</hint>")[0].strip().split("\n")[0].strip() for r in raw]

    def _score(self, messages: list[dict], n: int) -> BackendScore:
        import torch

        text = self.prompt_text(messages)
        p_accept = self.accept_probability(messages, text)
        if self.vote == "argmax":
            votes = [1 if p_accept >= 0.5 else -1] * n
        else:
            gen = torch.Generator().manual_seed(_stable_seed(self.seed + 1, text))
            votes = [1 if float(torch.rand((), generator=gen)) < p_accept else -1 for _ in range(n)]
        k = votes.count(1)
        hints = iter(self._hints(text, k) if k else [])
        texts = [f"{ACCEPT}\n<hint>{next(hints)}</hint>" if v == 1 else REJECT for v in votes]
        return BackendScore(votes=votes, probs={1: p_accept, -1: 1.0 - p_accept}, texts=texts)

    async def score(self, messages: list[dict], n: int) -> BackendScore:
        """``n`` structured hint votes; ``votes`` are 1 (accept) / -1 (reject), ``texts`` the answers.

        Raises:
            ValueError: ``n < 1``.
        """
        _check_n(n)
        return await asyncio.to_thread(self._score, messages, n)
