"""``--prm-mode probe``: a linear probe on the judge model's hidden states, mixed with the
``classifier``'s probabilities, plus the structural tool verdicts (:mod:`.tool_signals`).

A turn is judged in this order:

1. a turn with tool calls, or a tool result, gets :func:`~openclaw_rl.judges.tool_signals.tool_verdict`
   when a rule decides (repeated call, overwrite of a user's file, the result's structure), as in
   ``classifier`` mode;
2. a user next state is read twice: by the hashed n-gram classifier (:mod:`.classifier`, its
   ``probs``) and by the probe: the judge model (``builtin:smollm2-135m`` by default) reads
   ``Request: ... / Answer: ... / Reply: <next state>``; the hidden states after decoder layers
   :data:`RECIPE` ``["layers"]`` (16 and 20 of SmolLM2-135M's 30), mean-pooled over the next
   state's tokens only, are concatenated (``[2 x H]``), standardised, and a multinomial logistic
   regression gives ``{1, -1, 0}`` probabilities;
3. the two are mixed log-linearly, ``p ~ p_classifier^(1 - w) * p_probe^w * exp(b [v = +1])``
   (``w`` = ``RECIPE["mix"]`` 0.5, ``b`` = ``RECIPE["prior_plus"]`` 0.5), and the vote is the
   argmax, or ``0`` (abstain) when its probability is below ``RECIPE["floor"]`` (0.6): an unsure
   verdict is not trained on. ``b`` and the floor were chosen by cross-validation over the
   held-out batches v1-v4, ``w`` and ``l2`` over v6 and v7 (each held out in turn from the
   classifier's and the probe's training data; docs/judges.md).

The probe is trained on the generated corpus (:mod:`.feedback_corpus`, its training families,
``RECIPE["per_family"]`` examples of each), the user next states of the extended case set
(:data:`~.cases.DEFAULT_CASES_PATH`) and of the held-out batches named in ``RECIPE["case_tags"]``
(:data:`~.cases.HELDOUT_CASES_PATH`) and of the later blind batches already measured
(:data:`~.cases.MEASURED_SETS`, v6 and v7). ``heldout_v8.jsonl`` to ``heldout_v14.jsonl`` are never read here. Nothing is
committed as weights: :func:`load_probe` builds it on first use (encoding the examples with the
judge model is most of the cost; deterministic on one machine) into
``$OPENCLAW_RL_CACHE/models/feedback-probe-<key>.pt``; the key hashes the recipe, the judge
model's name, the corpus, every case file read and this module, so a change rebuilds it.

Measured numbers and the commands: ``docs/judges.md`` (section ``probe``).
"""

from __future__ import annotations

import asyncio
import hashlib
import math
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from openclaw_rl.judges.backends import BackendScore, LocalJudgeBackend, _check_n
from openclaw_rl.judges.cases import DEFAULT_CASES_PATH, HELDOUT_CASES_PATH, MEASURED_SETS, load_cases
from openclaw_rl.judges.classifier import FeedbackClassifier, load_classifier
from openclaw_rl.judges.feedback_corpus import corpus_fingerprint, generate, split
from openclaw_rl.judges.prompts import VERDICTS, state_text
from openclaw_rl.judges.tool_signals import tool_verdict
from openclaw_rl.models import build_cache_file, cache_dir

__all__ = ["RECIPE", "HiddenStateEncoder", "LinearProbe", "probe_examples", "train_probe", "probe_path",
           "load_probe", "mix_probs", "ProbeJudgeBackend"]

#: the probe's recipe; part of the cache key (change it and the probe is rebuilt). ``layers``: decoder
#: layers read (1-based, clamped to the model's depth); ``per_family``: corpus examples per template
#: family; ``case_tags``: held-out batches trained on; ``l2``: weight penalty of the regression;
#: ``mix``: the probe's weight in the log-linear mix; ``prior_plus``: log-odds added to ``+1`` after the mix
#: (acceptance without praise is the verdict both models miss most); ``floor``: below it the vote is 0
RECIPE = {"layers": (16, 20), "per_family": 1, "corpus_seed": 0, "per_template": 4, "max_state_tokens": 96,
          "max_context_chars": (300, 200), "batch": 16, "l2": 1e-1, "steps": 200, "mix": 0.5, "prior_plus": 0.5,
          "floor": 0.6,
          "case_tags": ("heldout-v1", "heldout-v2", "heldout-v3", "heldout-v4")}


class _Stop(Exception):
    """Raised by the last layer's hook: the layers after it are not run."""


class HiddenStateEncoder:
    """Mean-pooled hidden states of a next state, read from a causal LM (no LM head, no later layers).

    Args:
        model: a loaded transformers causal LM with ``model.model.layers`` (Llama / Qwen layout).
        tokenizer: its tokenizer.
        layers: decoder layers to read, 1-based (layer ``i``'s output is ``hidden_states[i]``);
            each is clamped to the model's depth.
        max_state_tokens: the next state is cut to this many tokens.
        max_context_chars: ``(request, answer)`` are cut to these many characters.

    Raises:
        ValueError: a model without ``model.layers``, or an empty ``layers``.
    """

    def __init__(self, model, tokenizer, layers: Sequence[int] = RECIPE["layers"],
                 max_state_tokens: int = RECIPE["max_state_tokens"],
                 max_context_chars: tuple[int, int] = RECIPE["max_context_chars"]):
        blocks = getattr(getattr(model, "model", None), "layers", None)
        if blocks is None or not layers:
            raise ValueError("the probe needs a decoder model with model.layers and at least one layer")
        self.model, self.tokenizer, self.blocks = model, tokenizer, blocks
        self.layers = tuple(min(max(1, int(i)), len(blocks)) for i in layers)
        self.max_state_tokens, self.max_context_chars = max_state_tokens, max_context_chars

    @property
    def dim(self) -> int:
        """Feature width ``F = len(layers) x H``."""
        return len(self.layers) * self.model.config.hidden_size

    def token_ids(self, next_state: str, request: str | None, response: str | None) -> tuple[list[int], int]:
        """``(ids, start)``: the context and next state's token ids; the next state is ``ids[start:]``."""
        req_chars, resp_chars = self.max_context_chars
        prefix = (f"Request: {' '.join((request or '').split())[:req_chars]}\n"
                  f"Answer: {' '.join((response or '').split())[:resp_chars]}\nReply:")
        head = self.tokenizer(prefix, add_special_tokens=False)["input_ids"]
        body = self.tokenizer(" " + (next_state or "(empty)"), add_special_tokens=False)["input_ids"]
        return head + body[:self.max_state_tokens], len(head)

    def encode(self, rows: Sequence[tuple[str, str | None, str | None]], batch: int = 1):
        """Features of ``rows`` of ``(next_state, request, response)``.

        Returns:
            ``features_N_F`` (float32, CPU): per row, each layer's hidden states averaged over the
            next state's tokens, concatenated in :attr:`layers` order.
        """
        import torch

        encoded = [self.token_ids(*r) for r in rows]
        out_N_F = torch.zeros(len(rows), self.dim)
        order = sorted(range(len(rows)), key=lambda i: len(encoded[i][0]))
        for start in range(0, len(order), max(1, batch)):
            idx = order[start:start + batch]
            out_N_F[idx] = self._encode_batch([encoded[i] for i in idx])
        return out_N_F

    def _encode_batch(self, encoded: list[tuple[list[int], int]]):
        import torch

        width = max(len(ids) for ids, _ in encoded)
        ids_B_T = torch.zeros(len(encoded), width, dtype=torch.long)
        mask_B_T = torch.zeros(len(encoded), width, dtype=torch.long)
        pool_B_T = torch.zeros(len(encoded), width)
        for b, (ids, start) in enumerate(encoded):  # right padding: a causal model's real positions are unchanged
            ids_B_T[b, :len(ids)] = torch.tensor(ids)
            mask_B_T[b, :len(ids)] = 1
            pool_B_T[b, start:len(ids)] = 1.0 / max(1, len(ids) - start)
        caught: dict[int, object] = {}
        last = max(self.layers)

        def hook(layer: int):
            def grab(_module, _args, output):
                caught[layer] = output[0] if isinstance(output, tuple) else output
                if layer == last:
                    raise _Stop
            return grab

        handles = [self.blocks[i - 1].register_forward_hook(hook(i)) for i in sorted(set(self.layers))]
        dev = next(self.model.parameters()).device
        try:
            with torch.inference_mode():
                self.model.model(input_ids=ids_B_T.to(dev), attention_mask=mask_B_T.to(dev), use_cache=False)
        except _Stop:
            pass
        finally:
            for h in handles:
                h.remove()
        return torch.cat([torch.einsum("bt,bth->bh", pool_B_T, caught[i].float().cpu()) for i in self.layers], -1)


@dataclass
class LinearProbe:
    """A trained probe: ``probs = softmax(((x_F - mean_F) / std_F) @ weight_F_C + bias_C)``, classes in
    :data:`~openclaw_rl.judges.prompts.VERDICTS` order (1, -1, 0); torch tensors."""

    mean_F: object
    std_F: object
    weight_F_C: object
    bias_C: object

    def probs_N_C(self, features_N_F):
        """Class probabilities ``[N, 3]`` of features ``[N, F]``."""
        import torch

        z_N_F = (features_N_F - self.mean_F) / self.std_F
        return torch.softmax(z_N_F @ self.weight_F_C + self.bias_C, -1)


def probe_examples(recipe: dict = RECIPE) -> list[tuple[str, str, str, int]]:
    """``(next_state, request, response, label)`` the probe is trained on (module docstring): the
    first ``per_family`` examples of every training family of the corpus, then the user next states of
    the extended case set, of the held-out batches tagged ``case_tags`` and of :data:`~.cases.MEASURED_SETS`."""
    train, _ = split(generate(recipe["corpus_seed"], recipe["per_template"]), seed=recipe["corpus_seed"])
    taken: dict[str, int] = {}
    out = []
    for e in train:
        if taken.get(e.family, 0) < recipe["per_family"]:
            taken[e.family] = taken.get(e.family, 0) + 1
            out.append((e.next_state, e.request, e.response, e.label))
    cases = load_cases() + (load_cases(HELDOUT_CASES_PATH, set(recipe["case_tags"])) if recipe["case_tags"] else [])
    cases += [c for path in MEASURED_SETS for c in load_cases(path)]
    out += [(c.next_state, c.request, c.response, c.expected) for c in cases if c.role == "user"]
    return out


def train_probe(features_N_F, labels: Sequence[int], recipe: dict = RECIPE) -> LinearProbe:
    """Fit the probe: class-balanced cross-entropy plus ``l2`` x squared weights, full-batch L-BFGS
    (``steps`` iterations) from zero weights on standardised features; deterministic.

    Args:
        features_N_F: ``[N, F]`` float tensor (:meth:`HiddenStateEncoder.encode`).
        labels: ``N`` verdicts in 1 / -1 / 0.

    Raises:
        ValueError: a length mismatch, or a verdict without an example.
    """
    import torch

    y_N = torch.tensor([VERDICTS.index(v) for v in labels])
    if len(y_N) != features_N_F.shape[0] or len(set(y_N.tolist())) < len(VERDICTS):
        raise ValueError("the probe needs one label per row and examples of every verdict (1, -1, 0)")
    mean_F = features_N_F.mean(0)
    std_F = features_N_F.std(0).clamp_min(1e-4)
    z_N_F = (features_N_F - mean_F) / std_F
    counts_C = torch.bincount(y_N, minlength=len(VERDICTS)).float()
    loss_fn = torch.nn.CrossEntropyLoss(weight=counts_C.sum() / (len(VERDICTS) * counts_C))
    w_F_C = torch.zeros(z_N_F.shape[1], len(VERDICTS), requires_grad=True)
    b_C = torch.zeros(len(VERDICTS), requires_grad=True)
    opt = torch.optim.LBFGS([w_F_C, b_C], max_iter=recipe["steps"], line_search_fn="strong_wolfe")

    def closure():
        opt.zero_grad()
        loss = loss_fn(z_N_F @ w_F_C + b_C, y_N) + recipe["l2"] * (w_F_C ** 2).sum()
        loss.backward()
        return loss

    opt.step(closure)
    return LinearProbe(mean_F, std_F, w_F_C.detach().clone(), b_C.detach().clone())


def _key(model_path: str, recipe: dict) -> str:
    h = hashlib.sha256(repr(sorted(recipe.items())).encode() + model_path.encode())
    h.update(corpus_fingerprint(recipe["corpus_seed"], recipe["per_template"]).encode())
    for path in (DEFAULT_CASES_PATH, HELDOUT_CASES_PATH, *MEASURED_SETS):
        h.update(path.read_bytes())
    h.update(Path(__file__).read_bytes())
    return h.hexdigest()[:16]


def probe_path(model_path: str, recipe: dict = RECIPE) -> Path:
    """Where the probe of ``model_path`` and ``recipe`` is cached:
    ``$OPENCLAW_RL_CACHE/models/feedback-probe-<key>.pt``."""
    return cache_dir() / f"feedback-probe-{_key(model_path, recipe)}.pt"


_LOADED: dict[Path, LinearProbe] = {}
_LOAD_LOCK = threading.Lock()


def load_probe(encoder: HiddenStateEncoder, model_path: str, recipe: dict = RECIPE) -> LinearProbe:
    """The probe of ``model_path`` (whose loaded model ``encoder`` reads): from the cache, else built
    now (encode :func:`probe_examples`, :func:`train_probe`) and cached with an atomic write under a
    file lock, so concurrent first uses build it once. Loaded once per process."""
    import torch

    path = probe_path(model_path, recipe)
    with _LOAD_LOCK:
        if path in _LOADED:
            return _LOADED[path]
        if not path.is_file():
            def save(tmp: str) -> None:
                rows = probe_examples(recipe)
                feats_N_F = encoder.encode([r[:3] for r in rows], recipe["batch"])
                torch.save(vars(train_probe(feats_N_F, [r[3] for r in rows], recipe)), tmp)
            build_cache_file(path, save)
        _LOADED[path] = LinearProbe(**torch.load(path, weights_only=True))
        return _LOADED[path]


def mix_probs(p_classifier: dict[int, float], p_probe: dict[int, float], weight: float,
              prior_plus: float = 0.0) -> dict[int, float]:
    """The log-linear mix ``p ~ p_classifier^(1 - weight) * p_probe^weight * exp(prior_plus [v = +1])``,
    renormalised over :data:`~openclaw_rl.judges.prompts.VERDICTS` (``{1: p, -1: p, 0: p}``, sums to 1)."""
    logits = {v: (1 - weight) * math.log(max(p_classifier[v], 1e-9)) + weight * math.log(max(p_probe[v], 1e-9))
              + (prior_plus if v == 1 else 0.0) for v in VERDICTS}
    top = max(logits.values())
    z = sum(math.exp(x - top) for x in logits.values())
    return {v: math.exp(logits[v] - top) / z for v in VERDICTS}


class ProbeJudgeBackend(LocalJudgeBackend):
    """``--prm-mode probe`` (module docstring).

    ``score_input`` returns ``n`` equal votes (one-hot ``probs`` for a structural tool verdict, else
    the mixed probabilities; the vote is ``0`` when the top one is below ``recipe["floor"]``) and the
    reason as ``texts``.

    Args:
        model_path / model / tokenizer / device / dtype / seed: as
            :class:`~openclaw_rl.judges.backends.LocalJudgeBackend`; ``vote`` is ignored (argmax).
        classifier: a :class:`~openclaw_rl.judges.classifier.FeedbackClassifier` (default
            :func:`~openclaw_rl.judges.classifier.load_classifier`).
        recipe: :data:`RECIPE`.

    Raises:
        ValueError: a model without decoder layers.
        openclaw_rl.models.ModelPathError: bad ``model_path``.
    """

    def __init__(self, model_path: str | None = None, classifier: FeedbackClassifier | None = None,
                 recipe: dict = RECIPE, vote: str = "argmax", seed: int = 0, **kw):
        super().__init__(model_path, mode="logprob", vote="argmax", seed=seed, **kw)
        self.mode, self.name, self.recipe = "probe", f"local:{self.model_path}:probe", recipe
        self.classifier = classifier or load_classifier()
        self.encoder = HiddenStateEncoder(self.model, self.tokenizer, recipe["layers"], recipe["max_state_tokens"],
                                          recipe["max_context_chars"])
        self._probe: LinearProbe | None = None  # built or loaded on first use

    def user_probs(self, next_state: str, request: str | None, response: str | None) -> dict[int, float]:
        """The mixed ``{1, -1, 0}`` probabilities of a user next state (sums to 1)."""
        with self._lock:
            if self._probe is None:
                self._probe = load_probe(self.encoder, self.model_path, self.recipe)
            p_C = self._probe.probs_N_C(self.encoder.encode([(next_state, request, response)]))[0].tolist()
        p_probe = {v: p_C[i] for i, v in enumerate(VERDICTS)}
        text = state_text(next_state) if "\n" not in (next_state or "") else next_state
        return mix_probs(self.classifier.probs(text, request, response), p_probe, self.recipe["mix"],
                         self.recipe["prior_plus"])

    def score_state(self, inp, n: int) -> BackendScore:
        """The votes for one :class:`~openclaw_rl.judges.prompts.JudgeInput` (synchronous)."""
        role = inp.next_state_role
        tv = tool_verdict(inp.next_state, inp.tool_calls, inp.user_request, getattr(inp, "history", None), role)
        if tv is not None:
            return BackendScore(votes=[tv.verdict] * n, probs={v: float(v == tv.verdict) for v in VERDICTS},
                                texts=[tv.reason] * n)
        probs = self.user_probs(inp.next_state, inp.user_request, inp.response_text)
        best = max(VERDICTS, key=lambda v: probs[v])
        vote = best if probs[best] >= self.recipe["floor"] else 0
        return BackendScore(votes=[vote] * n, probs=probs, texts=[f"probe p={probs[best]:.2f}"] * n)

    async def score_input(self, inp, n: int, render=None) -> BackendScore:
        """``n`` votes for one judged turn (``render`` is ignored); runs in a worker thread.

        Raises:
            ValueError: ``n < 1``.
        """
        _check_n(n)
        return await asyncio.to_thread(self.score_state, inp, n)

    async def score(self, messages: list[dict], n: int) -> BackendScore:
        """Not supported: this mode reads the judged turn's fields; use :meth:`score_input`.

        Raises:
            ValueError: always.
        """
        raise ValueError("the probe PRM scores a JudgeInput (next state and role), not judge messages")
