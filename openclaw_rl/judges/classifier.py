"""``--prm-mode classifier``: a small trained three-way classifier of the user's next state, plus
structural verdicts for tool calls and tool results (:mod:`.tool_signals`).

The classifier is multinomial logistic regression (a linear softmax layer; class-balanced cross-entropy
minimised with Adam) over hashed sparse features of the next state (Weinberger et al. 2009, feature
hashing):

* character 3-5-grams of the lower-cased text with digits mapped to ``0`` (they carry
  inflections, typos and every script, so German, Spanish, French and Chinese need no tokenizer);
  Chinese is also read as character uni- and bigrams;
* word uni- and bigrams, the first word, the first two words, the last word, a length bucket,
  whether the message ends with ``?`` or is punctuation only;
* the lexical judge's verdict on it (``lex:-1`` / ``lex:1`` / ``lex:0``, :mod:`.lexical`), so its
  English cues are one more weighed feature, not the decision;
* three context features from the judged turn: the next state names a number the reply and the
  request did not (a stated fact that contradicts the reply: "The confirmation says March 14."),
  it repeats the request (most of its words), it pastes the reply back with edits (the user's own
  fixed version).

It is trained on the generated corpus (:mod:`.feedback_corpus`, minus its held-back slice) and
the user next states of the shipped judge case set (:data:`~.cases.DEFAULT_CASES_PATH`, which
holds every feedback phrasing of the main job's simulated user) and of the blind held-out batches
already measured (:data:`~.cases.MEASURED_SETS`, v6 and v7; ``heldout_v8.jsonl`` to ``heldout_v14.jsonl`` are never read).
Nothing is committed as weights:
:func:`load_classifier` builds the model on first use (a few seconds on one CPU core,
deterministic) into the model cache (``$OPENCLAW_RL_CACHE/models/feedback-classifier-<key>.pt``,
the key hashes the corpus, the case files and the recipe), and later runs load it.

A verdict costs one feature extraction and one sparse dot product: well under a millisecond per
turn on a CPU (``benchmarks/judge_cost.py``). Accuracy: ``openclaw-rl judge-eval --modes
classifier`` and ``docs/judges.md``.
"""

from __future__ import annotations

import hashlib
import re
import threading
import unicodedata
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from openclaw_rl.judges.backends import BackendScore, JudgeBackend, _check_n
from openclaw_rl.judges.cases import DEFAULT_CASES_PATH, MEASURED_SETS, load_cases
from openclaw_rl.judges.feedback_corpus import corpus_fingerprint, generate, split
from openclaw_rl.judges.lexical import lexical_verdict
from openclaw_rl.judges.prompts import VERDICTS, state_text
from openclaw_rl.judges.tool_signals import tool_verdict
from openclaw_rl.models import build_cache_file, cache_dir

__all__ = ["featurize", "FeedbackClassifier", "train_classifier", "training_examples", "load_classifier",
           "classifier_path", "ClassifierBackend", "RECIPE"]

#: the training recipe; part of the cache key (change it and the model is rebuilt)
RECIPE = {"features": 4, "dim": 1 << 18, "epochs": 10, "batch": 64, "lr": 0.05, "seed": 0, "per_template": 4}
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uf900-\ufaff]")
_WORD = re.compile(r"[^\W\d_]+|\d+|[?!？！]")
_NUM = re.compile(r"\d+")
_QUOTES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u201c": '"', "\u201d": '"', "\u00a0": " "})


def _norm(text: str | None) -> str:
    return " ".join(unicodedata.normalize("NFKC", (text or "")).translate(_QUOTES).lower().split())


def _words(text: str) -> list[str]:
    out = []
    for w in _WORD.findall(text):
        out.extend(list(w) if _CJK.search(w) else [w])  # Chinese: one token per character
    return out


def _context(next_state: str, request: str, response: str) -> list[str]:
    feats = []
    nums = set(_NUM.findall(next_state))
    resp_nums = set(_NUM.findall(response))
    if nums and resp_nums and not nums <= resp_nums | set(_NUM.findall(request)):
        feats.append("ctx:new_number")
    ws, wr = set(_words(next_state)), set(_words(request))
    if len(ws) >= 3 and wr and len(ws & wr) / len(ws) >= 0.6:
        feats.append("ctx:repeats_request")
    lines = [ln.strip() for ln in next_state.splitlines() if ln.strip()]
    resp_lines = {ln.strip() for ln in response.splitlines() if ln.strip()}
    if len(lines) >= 2 and resp_lines and sum(ln in resp_lines for ln in lines) >= 1:
        feats.append("ctx:pastes_reply")
    return feats


def featurize(next_state: str | None, request: str | None = None, response: str | None = None) -> list[str]:
    """The feature strings of one user next state (module docstring); order is deterministic."""
    raw = next_state or ""
    text = _norm(raw)
    words = _words(text)
    feats = [f"w:{w}" for w in words] + [f"b:{a}_{b}" for a, b in zip(words, words[1:])]
    if words:
        feats += [f"first:{words[0]}", f"first2:{'_'.join(words[:2])}", f"last:{words[-1]}"]
    n = len(words)
    feats.append(f"len:{0 if n == 0 else 1 if n == 1 else 2 if n <= 3 else 3 if n <= 8 else 4 if n <= 20 else 5}")
    if text.endswith(("?", "？")):
        feats.append("ends:?")
    if text and not any(c.isalnum() for c in text):
        feats.append("only_punct")
    chars = f" {_NUM.sub('0', text)} "[:400]
    feats += [f"c{k}:{chars[i:i + k]}" for k in (3, 4, 5) for i in range(len(chars) - k + 1)]
    feats.append(f"lex:{lexical_verdict(raw, 'user')}")
    return feats + _context(_norm(raw) if "\n" not in raw else raw.lower(), _norm(request), (response or "").lower())


def _indices(feats: Sequence[str], dim: int) -> list[int]:
    return [zlib.crc32(f.encode("utf-8")) % dim for f in feats]


@dataclass
class FeedbackClassifier:
    """A trained linear classifier: ``weight_D_C`` (features x classes, classes in
    :data:`~openclaw_rl.judges.prompts.VERDICTS` order 1, -1, 0) and ``bias_C``; a torch tensor each."""

    weight_D_C: object
    bias_C: object

    def probs(self, next_state: str | None, request: str | None = None, response: str | None = None) -> dict[int, float]:
        """``{1: p, -1: p, 0: p}`` (softmax of the logits; sums to 1) for one user next state."""
        import torch

        idx = _indices(featurize(next_state, request, response), self.weight_D_C.shape[0])
        logits_C = self.weight_D_C[idx].sum(0) / max(1.0, len(idx)) ** 0.5 + self.bias_C
        p_C = torch.softmax(logits_C.float(), -1).tolist()
        return {v: p_C[i] for i, v in enumerate(VERDICTS)}


def training_examples(recipe: dict = RECIPE) -> list[tuple[str, str, str, int]]:
    """``(next_state, request, response, label)``: the corpus minus its held-back slice, then the
    user next states of the shipped judge case set and of :data:`~.cases.MEASURED_SETS`."""
    train, _ = split(generate(recipe["seed"], recipe["per_template"]), seed=recipe["seed"])
    out = [(e.next_state, e.request, e.response, e.label) for e in train]
    cases = load_cases() + [c for path in MEASURED_SETS for c in load_cases(path)]
    out += [(c.next_state, c.request, c.response, c.expected) for c in cases if c.role == "user"]
    return out


def train_classifier(examples: Sequence[tuple[str, str, str, int]], recipe: dict = RECIPE) -> FeedbackClassifier:
    """Fit the classifier: class-balanced cross-entropy, Adam on minibatches in a seeded order, from
    zero weights, over the features the examples use (a compact table; deterministic on one machine).

    Args:
        examples: ``(next_state, request, response, label)`` with label in 1 / -1 / 0.
        recipe: :data:`RECIPE` (``epochs``, ``batch``, ``lr``, ``seed``, ``dim``).

    Returns:
        A :class:`FeedbackClassifier` with a dense ``weight_D_C`` (rows of unseen features are 0).

    Raises:
        ValueError: no example, or a verdict without an example.
    """
    import torch

    labels = [VERDICTS.index(e[3]) for e in examples]
    if not examples or len(set(labels)) < len(VERDICTS):
        raise ValueError("the classifier needs examples of every verdict (1, -1, 0)")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # small sparse steps: more threads only contend (4 s vs 60 s on a busy 2-core box)
    try:
        return _fit(examples, labels, recipe)
    finally:
        torch.set_num_threads(threads)


def _fit(examples, labels: list[int], recipe: dict) -> FeedbackClassifier:
    import torch

    hashed = [_indices(featurize(s, q, r), recipe["dim"]) for s, q, r, _ in examples]
    vocab_F = sorted({i for row in hashed for i in row})
    col = {h: j for j, h in enumerate(vocab_F)}
    rows = [torch.tensor([col[i] for i in row]) for row in hashed]
    y_N = torch.tensor(labels)
    counts_C = torch.bincount(y_N, minlength=len(VERDICTS)).float()
    loss_fn = torch.nn.CrossEntropyLoss(weight=counts_C.sum() / (len(VERDICTS) * counts_C))
    bag = torch.nn.EmbeddingBag(len(vocab_F), len(VERDICTS), mode="sum")
    torch.nn.init.zeros_(bag.weight)
    b_C = torch.nn.Parameter(torch.zeros(len(VERDICTS)))
    opt = torch.optim.Adam([bag.weight, b_C], lr=recipe["lr"])
    gen = torch.Generator().manual_seed(recipe["seed"])
    for _ in range(recipe["epochs"]):
        order = torch.randperm(len(rows), generator=gen).tolist()
        for start in range(0, len(order), recipe["batch"]):
            batch = order[start:start + recipe["batch"]]
            flat = torch.cat([rows[b] for b in batch])
            offsets = torch.tensor([0] + [len(rows[b]) for b in batch[:-1]]).cumsum(0)
            scale = torch.cat([torch.full((len(rows[b]),), len(rows[b]) ** -0.5) for b in batch])
            loss = loss_fn(bag(flat, offsets, per_sample_weights=scale) + b_C, y_N[batch])
            opt.zero_grad()
            loss.backward()
            opt.step()
    weight_D_C = torch.zeros(recipe["dim"], len(VERDICTS))
    weight_D_C[torch.tensor(vocab_F)] = bag.weight.detach()
    return FeedbackClassifier(weight_D_C, b_C.detach().clone())


def _key(recipe: dict) -> str:
    h = hashlib.sha256(repr(sorted(recipe.items())).encode())
    h.update(corpus_fingerprint(recipe["seed"], recipe["per_template"]).encode())
    for path in (DEFAULT_CASES_PATH, *MEASURED_SETS):
        h.update(path.read_bytes())
    h.update(Path(__file__).read_bytes())  # the features and the trainer
    return h.hexdigest()[:16]


def classifier_path(recipe: dict = RECIPE) -> Path:
    """Where the model of ``recipe`` is cached: ``$OPENCLAW_RL_CACHE/models/feedback-classifier-<key>.pt``."""

    return cache_dir() / f"feedback-classifier-{_key(recipe)}.pt"


_LOADED: dict[Path, FeedbackClassifier] = {}
_LOAD_LOCK = threading.Lock()


def load_classifier(recipe: dict = RECIPE) -> FeedbackClassifier:
    """The classifier of ``recipe``: from the cache, else trained now and cached (atomic write, so
    concurrent first uses are safe; seconds on one core). Loaded once per process."""
    import torch

    path = classifier_path(recipe)
    with _LOAD_LOCK:
        if path in _LOADED:
            return _LOADED[path]
        if not path.is_file():
            def save(tmp: str) -> None:
                clf = train_classifier(training_examples(recipe), recipe)
                torch.save({"weight_D_C": clf.weight_D_C.to_sparse(), "bias_C": clf.bias_C}, tmp)
            build_cache_file(path, save)
        state = torch.load(path, weights_only=True)
        _LOADED[path] = FeedbackClassifier(state["weight_D_C"].to_dense(), state["bias_C"])
        return _LOADED[path]


class ClassifierBackend(JudgeBackend):
    """``--prm-mode classifier`` (module docstring): the structural tool verdict for tool-call turns
    and tool results (:func:`~openclaw_rl.judges.tool_signals.tool_verdict`), the trained classifier
    for a user next state. No judge model is loaded.

    ``score_input`` returns the verdict ``n`` times (argmax of the classifier's ``probs``, one-hot
    for a structural verdict) and the reason as ``texts``.

    Args:
        classifier: a :class:`FeedbackClassifier` (default :func:`load_classifier`, built on first use).
    """

    name = "classifier"
    mode = "classifier"

    def __init__(self, classifier: FeedbackClassifier | None = None):
        self.classifier = classifier or load_classifier()

    def score_state(self, inp, n: int) -> BackendScore:
        """The votes for one :class:`~openclaw_rl.judges.prompts.JudgeInput` (synchronous)."""
        role = inp.next_state_role
        tv = tool_verdict(inp.next_state, inp.tool_calls, inp.user_request, getattr(inp, "history", None), role)
        if tv is not None:
            probs = {v: float(v == tv.verdict) for v in VERDICTS}
            return BackendScore(votes=[tv.verdict] * n, probs=probs, texts=[tv.reason] * n)
        probs = self.classifier.probs(state_text(inp.next_state) if "\n" not in (inp.next_state or "")
                                      else inp.next_state, inp.user_request, inp.response_text)
        best = max(VERDICTS, key=lambda v: probs[v])
        return BackendScore(votes=[best] * n, probs=probs, texts=[f"classifier p={probs[best]:.2f}"] * n)

    async def score_input(self, inp, n: int, render=None) -> BackendScore:
        """``n`` votes for one judged turn (``render`` is ignored).

        Raises:
            ValueError: ``n < 1``.
        """
        _check_n(n)
        return self.score_state(inp, n)

    async def score(self, messages: list[dict], n: int) -> BackendScore:
        """Not supported: this mode reads the judged turn's fields; use :meth:`score_input`.

        Raises:
            ValueError: always.
        """
        raise ValueError("the classifier PRM scores a JudgeInput (next state and role), not judge messages")
