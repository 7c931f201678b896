"""PRM judge backends: the interface, a local frozen transformers model prompted with the judge
prompt, or any OpenAI-compatible endpoint.

Every backend has ``score_input(inp, n) -> BackendScore``: it takes one judged turn
(:class:`~openclaw_rl.judges.prompts.JudgeInput`) and returns ``n`` votes (``1``, ``-1``, ``0`` or
``None`` for an unparseable answer), plus the verdict probabilities when the backend has them.
Prompted backends implement ``score(messages, n)`` on the judge chat messages of
:func:`openclaw_rl.judges.prompts.build_judge_messages`, which ``score_input`` renders; the
next-state modes (:mod:`.lexical`, :mod:`.prototype`, :mod:`.channel`) override ``score_input``.
Modes and how ``auto`` picks one: :mod:`openclaw_rl.judges.modes`.

* :class:`LocalJudgeBackend` -- a frozen causal LM loaded with transformers (``PRM_MODEL_PATH``,
  default the policy's base model). Two modes:

  - ``"logprob"``: no free generation. One forward pass over the judge prompt (its KV cache
    reused), then one small forward pass per verdict reply (``Score: 1``, ``Score: -1``,
    ``Score: 0``, each followed by the end-of-turn token) gives each reply's log-probability;
    the three are normalised into ``probs``. Votes are the argmax repeated ``n`` times
    (``vote="argmax"``, default) or ``n`` draws from ``probs`` with a generator seeded from
    ``seed`` and the prompt (``vote="sample"``), so the same prompt always gets the same votes.
  - ``"generate"``: ``n`` sampled completions (temperature 0.7 by default), each parsed with
    :func:`~openclaw_rl.judges.prompts.parse_verdict`.

* :class:`OpenAIJudgeBackend` -- the real ``openai`` async SDK against ``--prm-url``; ``n`` votes
  from ``n`` concurrent requests (or one request with ``n=`` when ``use_n_param``), parsed with
  ``parse_verdict``. Requests carry ``X-Turn-Type: side`` so an OpenClaw-RL server used as judge
  never trains on them.

On the embedded 135M model both judge-prompt modes are near chance (``openclaw-rl judge-eval``;
``docs/judges.md``): the model does not follow the judge prompt. ``logprob`` is what ``auto``
picks for a model folder (a larger judge model), where it is the cheap, never-invalid choice.
"""

from __future__ import annotations

import abc
import asyncio
import copy
import hashlib
import math
import os
import threading
from dataclasses import dataclass, field
from typing import Any, Callable

from openclaw_rl.judges.prompts import VERDICT_CONTINUATIONS, VERDICTS, parse_verdict

__all__ = ["BackendScore", "JudgeBackend", "LocalJudgeBackend", "OpenAIJudgeBackend",
           "default_prm_model_path", "LOCAL_MODES"]

LOCAL_MODES = ("logprob", "generate")


@dataclass
class BackendScore:
    """What a backend returns for one judge prompt.

    Attributes:
        votes: ``n`` votes, each ``1``, ``-1``, ``0`` or None (invalid).
        probs: ``{1: p, -1: p, 0: p}`` summing to 1 (log-prob mode only), else None.
        texts: the raw judge answers (generate / endpoint), or the verdict strings voted.
    """

    votes: list[int | None]
    probs: dict[int, float] | None = None
    texts: list[str] = field(default_factory=list)


class JudgeBackend(abc.ABC):
    """Interface of a judge backend (PRM votes, or hint-judge answers for the OPD hint judge)."""

    #: short description for logs and sample metadata
    name: str = "backend"
    #: the judge mode (a ``--prm-mode`` value, ``"endpoint"``, or a hint mode), recorded in every
    #: judgement's details; ``"custom"`` for a backend that does not set it
    mode: str = "custom"

    @abc.abstractmethod
    async def score(self, messages: list[dict], n: int) -> BackendScore:
        """Return ``n`` votes for the judge ``messages``.

        Raises:
            ValueError: ``n < 1``.
        """

    async def score_input(self, inp, n: int, render: Callable[[Any], list[dict]] | None = None) -> BackendScore:
        """Return ``n`` votes for one judged turn.

        Args:
            inp: a :class:`~openclaw_rl.judges.prompts.JudgeInput`.
            n: votes wanted.
            render: turns ``inp`` into chat messages (default: the PRM judge prompt,
                ``inp.messages()``; the OPD hint judge passes its own). Modes that read the turn's
                fields directly (lexical, channel, prototype, extractive hints) ignore it.

        Raises:
            ValueError: ``n < 1``.
        """
        return await self.score(render(inp) if render else inp.messages(), n)

    async def aclose(self) -> None:
        """Release resources (HTTP clients); the default does nothing."""


def _check_n(n: int) -> None:
    if not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be a positive integer, got {n!r}")


def default_prm_model_path(policy_model_path: str | None = None) -> str:
    """``$PRM_MODEL_PATH``, else the policy's base model (``policy_model_path``, ``$MODEL_PATH``),
    else the embedded default model."""
    from openclaw_rl.models import DEFAULT_MODEL

    return (os.environ.get("PRM_MODEL_PATH") or policy_model_path or os.environ.get("MODEL_PATH")
            or DEFAULT_MODEL)


def _stable_seed(seed: int, text: str) -> int:
    digest = hashlib.sha256(f"{seed}\x00{text}".encode()).digest()
    return int.from_bytes(digest[:8], "little") & 0x7FFF_FFFF_FFFF_FFFF


class LocalJudgeBackend(JudgeBackend):
    """A frozen local judge model (transformers, CPU or GPU).

    Args:
        model_path: ``builtin:`` name or model folder; default :func:`default_prm_model_path`.
        mode: ``"logprob"`` or ``"generate"`` (see the module docstring).
        vote: log-prob mode only: ``"argmax"`` (default; the most probable verdict, ``n`` times)
            or ``"sample"`` (``n`` seeded draws from the verdict distribution).
        temperature: generate mode sampling temperature (> 0).
        max_new_tokens: generate mode answer budget.
        seed: base seed; the effective seed also hashes the prompt, so results do not depend on
            call order or concurrency.
        device / dtype: where and how to load the model (default CPU float32).
        model / tokenizer: already loaded objects (skip loading ``model_path``).

    Raises:
        ValueError: unknown ``mode`` / ``vote`` or ``temperature <= 0``.
        openclaw_rl.models.ModelPathError: bad ``model_path``.
    """

    def __init__(self, model_path: str | None = None, mode: str = "logprob", vote: str = "argmax",
                 temperature: float = 0.7, max_new_tokens: int = 48, seed: int = 0,
                 device: str | None = None, dtype=None, model=None, tokenizer=None):
        if mode not in LOCAL_MODES:
            raise ValueError(f"mode must be one of {LOCAL_MODES}, got {mode!r}")
        if vote not in ("sample", "argmax"):
            raise ValueError(f"vote must be 'sample' or 'argmax', got {vote!r}")
        if not temperature > 0:
            raise ValueError(f"temperature must be > 0, got {temperature!r}")
        from openclaw_rl.models import load_model, load_tokenizer

        self.model_path = str(model_path or default_prm_model_path())
        self.mode, self.vote, self.seed = mode, vote, seed
        self.temperature, self.max_new_tokens = temperature, max_new_tokens
        self.tokenizer = tokenizer if tokenizer is not None else load_tokenizer(self.model_path)
        self.model = model if model is not None else load_model(self.model_path, dtype=dtype)
        if device:
            self.model.to(device)
        self.model.eval().requires_grad_(False)
        self.name = f"local:{self.model_path}:{mode}"
        self._lock = threading.Lock()  # one forward/generate at a time on this model
        eos = self.tokenizer.eos_token_id
        self._end_ids = [eos] if eos is not None else []
        self._cand_ids = {v: self.tokenizer(VERDICT_CONTINUATIONS[v], add_special_tokens=False)
                          ["input_ids"] + self._end_ids for v in VERDICTS}

    # ------------------------------------------------------------------ helpers
    def prompt_text(self, messages: list[dict]) -> str:
        """The judge prompt rendered by the model's chat template (with generation prompt)."""
        return self.tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)

    def _prompt_ids(self, text: str) -> list[int]:
        return self.tokenizer(text, add_special_tokens=False)["input_ids"]

    def verdict_logprobs(self, messages: list[dict]) -> dict[int, float]:
        """Log-probability of each full verdict reply given the judge prompt (one forward pass).

        Returns:
            ``{1: logp, -1: logp, 0: logp}`` (sums over the reply's tokens, end token included).
        """
        import torch

        prompt = self._prompt_ids(self.prompt_text(messages))
        dev = next(self.model.parameters()).device
        out = {}
        with self._lock, torch.inference_mode():
            # the prompt once (logits of its last position only), then each verdict on its cache
            first = self.model(input_ids=torch.tensor([prompt], device=dev), use_cache=True,
                               logits_to_keep=1)
            cache, head = first.cache, torch.log_softmax(first.logits[0, -1].float(), -1)
            for v in VERDICTS:
                cand = self._cand_ids[v]
                total = float(head[cand[0]])
                if len(cand) > 1:
                    step = self.model(input_ids=torch.tensor([cand[:-1]], device=dev),
                                      cache=copy.deepcopy(cache), use_cache=True)
                    logp = torch.log_softmax(step.logits[0].float(), -1)
                    total += float(logp.gather(-1, torch.tensor(cand[1:], device=dev)[:, None]).sum())
                out[v] = total
        return out

    def verdict_probs(self, messages: list[dict]) -> dict[int, float]:
        """The verdict log-probabilities normalised over the three verdicts (sums to 1)."""
        lp = self.verdict_logprobs(messages)
        top = max(lp.values())
        z = sum(math.exp(x - top) for x in lp.values())
        return {v: math.exp(lp[v] - top) / z for v in VERDICTS}

    def votes_from_probs(self, probs: dict[int, float], n: int, key: str) -> BackendScore:
        """``n`` votes from a verdict distribution: the argmax ``n`` times (``vote="argmax"``; ties
        go to the first of :data:`VERDICTS` order 1, -1, 0), or ``n`` draws seeded from ``seed`` and
        ``key`` (``vote="sample"``). Shared by every local mode that yields ``probs``."""
        import torch

        if self.vote == "argmax":
            best = max(VERDICTS, key=lambda v: probs[v])
            votes = [best] * n
        else:
            gen = torch.Generator().manual_seed(_stable_seed(self.seed, key))
            weights = torch.tensor([probs[v] for v in VERDICTS], dtype=torch.float64)
            idx = torch.multinomial(weights, n, replacement=True, generator=gen).tolist()
            votes = [VERDICTS[i] for i in idx]
        return BackendScore(votes=votes, probs=probs, texts=[VERDICT_CONTINUATIONS[v] for v in votes])

    def _score_logprob(self, messages: list[dict], n: int) -> BackendScore:
        return self.votes_from_probs(self.verdict_probs(messages), n, repr(messages))

    def _score_generate(self, messages: list[dict], n: int) -> BackendScore:
        import torch

        text = self.prompt_text(messages)
        dev = next(self.model.parameters()).device
        ids = torch.tensor([self._prompt_ids(text)], device=dev)
        pad = self.tokenizer.pad_token_id
        if pad is None:
            pad = self.tokenizer.eos_token_id
        with self._lock, torch.inference_mode(), torch.random.fork_rng(devices=[]):
            torch.manual_seed(_stable_seed(self.seed, text))
            out = self.model.generate(input_ids=ids, attention_mask=torch.ones_like(ids),
                                      do_sample=True, temperature=self.temperature, top_p=1.0,
                                      top_k=0, max_new_tokens=self.max_new_tokens,
                                      num_return_sequences=n, pad_token_id=pad)
        texts = self.tokenizer.batch_decode(out[:, ids.shape[1]:], skip_special_tokens=True)
        return BackendScore(votes=[parse_verdict(t) for t in texts], texts=texts)

    async def score(self, messages: list[dict], n: int) -> BackendScore:
        """``n`` votes (see the class docstring); runs the model in a worker thread.

        Raises:
            ValueError: ``n < 1``.
        """
        _check_n(n)
        fn = self._score_logprob if self.mode == "logprob" else self._score_generate
        return await asyncio.to_thread(fn, messages, n)


class OpenAIJudgeBackend(JudgeBackend):
    """A judge behind any OpenAI-compatible ``/v1/chat/completions`` endpoint.

    Args:
        base_url: endpoint base, e.g. ``http://127.0.0.1:8000/v1`` (``--prm-url``).
        model: model name sent in requests (``--prm-model``).
        api_key: bearer key; default ``$PRM_API_KEY``, ``$OPENAI_API_KEY``, else ``"EMPTY"``.
        temperature / max_tokens: sampling settings per request.
        use_n_param: ask for ``n`` choices in one request instead of ``n`` requests (not every
            server supports ``n > 1``; the OpenClaw-RL server does not).
        seed: when set, request ``i`` sends ``seed + i``.
        timeout / max_retries: passed to ``openai.AsyncOpenAI``.
        extra_headers: sent with every request (default ``{"X-Turn-Type": "side"}``).
        client: an existing ``openai.AsyncOpenAI`` (the other connection arguments are ignored).

    ``score`` raises the SDK's ``openai.APIError`` subclasses when a request fails after the
    SDK's retries (a failed request is an infrastructure error, not an invalid vote).
    """

    def __init__(self, base_url: str, model: str, api_key: str | None = None,
                 temperature: float = 0.7, max_tokens: int = 256, use_n_param: bool = False,
                 seed: int | None = None, timeout: float = 120.0, max_retries: int = 2,
                 extra_headers: dict[str, str] | None = None, client: Any = None):
        import openai

        key = api_key or os.environ.get("PRM_API_KEY") or os.environ.get("OPENAI_API_KEY") or "EMPTY"
        self.client = client or openai.AsyncOpenAI(base_url=base_url, api_key=key,
                                                   timeout=timeout, max_retries=max_retries)
        self.model, self.temperature, self.max_tokens = model, temperature, max_tokens
        self.use_n_param, self.seed = use_n_param, seed
        self.extra_headers = {"X-Turn-Type": "side"} if extra_headers is None else dict(extra_headers)
        self.name = f"openai:{base_url}:{model}"
        self.mode = "endpoint"

    async def _request(self, messages: list[dict], n: int, seed: int | None) -> list[str]:
        kw: dict[str, Any] = dict(model=self.model, messages=messages, temperature=self.temperature,
                                  max_tokens=self.max_tokens, extra_headers=self.extra_headers)
        if n > 1:
            kw["n"] = n
        if seed is not None:
            kw["seed"] = seed
        resp = await self.client.chat.completions.create(**kw)
        return [(c.message.content or "") for c in resp.choices]

    async def score(self, messages: list[dict], n: int) -> BackendScore:
        """``n`` votes from the endpoint (see the class docstring).

        Raises:
            ValueError: ``n < 1``.
            openai.APIError: a request failed.
        """
        _check_n(n)
        if self.use_n_param:
            texts = await self._request(messages, n, self.seed)
        else:
            seeds = [None if self.seed is None else self.seed + i for i in range(n)]
            parts = await asyncio.gather(*(self._request(messages, 1, s) for s in seeds))
            texts = [t for p in parts for t in p]
        return BackendScore(votes=[parse_verdict(t) for t in texts], texts=texts)

    async def aclose(self) -> None:
        await self.client.close()
