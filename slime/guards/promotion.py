"""The promotion gate: a new weight version is served only if it is no worse than the last good one.

After each train step, before the new weights are exported and published, the train actor
measures them (:func:`measure_version`) on what the rollout service hands the gate
(:class:`GateData`, the service's ``gate_data()``):

1. **The user's own judged turns, held out from training.** Teacher-forced on the recorded ids:
   the mean per-token log-prob of each held-out reply. Replies the user accepted (reward > 0) must
   not become less likely, nor rejected ones (reward < 0) more likely, by more than
   ``--gate-logprob-margin`` nats per token on average, against the last good version.
2. **General ability.** Per-token NLL of a fixed reference set (the service's: for OpenClaw the
   MT-bench reference answers) may rise at most ``--gate-max-nll-rise`` (a fraction) over the
   version the run started from, so drift cannot add up step by step.
3. **Behaviour on canary prompts, sampled** (fixed seed, the rollout temperature,
   ``--gate-canary-max-tokens``): the service's fixed canary prompts and the prompts of the
   held-out turns. The share of canary replies with a :mod:`slime.guards.behaviour` problem (repetition
   loop, rare-character run, over-application, tool-call loop, a word mixing alphabets) the last
   good version's reply to the same prompt did not have, and the net share that only end at the token limit where the
   last good version's ended on their own (less those that now end on their own where the last
   good version's ran to the limit: sampling moves both ways), may each be at most
   ``--gate-max-new-problems`` (and a check fails only when at least two replies got worse: one
   sampled reply is noise; the truncation check also needs a one-sided sign test on the changed
   replies below 0.05, as which short replies stay short is mostly sampling). When half
   or more of the last good version's canary replies already show a problem (a random or
   untrained policy), these checks are skipped (``gate/canary_check_skipped``).

``--promotion-gate enforce`` (default): a version that fails is not served; the run logs one line
naming each failed check and by how much, and ``--on-gate-failure continue`` restores the trainer
to the last good weights and optimizer state (:meth:`slime.orchestration.train_group.TrainGroup.restore_last_good`)
and trains on, ``pause`` stops training (serving goes on with the last good version). ``log``
measures and reports but serves every version; ``off`` measures nothing.

The baseline (last good version) is measured lazily: items the gate has not seen under the
current weights are measured right before the train step (:meth:`PromotionGate.refresh_baseline`),
so each version is measured once. Items are keyed (``heldout:<turn>``, ``canary:<i>``,
``user:<turn>``, ``reference:<i>``), so a growing held-out set is compared item by item.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any

from slime.guards.behaviour import behaviour_problems
from slime.record.sample import Sample

__all__ = ["CanaryReply", "GateData", "GateFailureAction", "GateMode", "GateReport", "GateThresholds",
           "PromotionGate", "VersionMeasure", "measure_version", "sign_test_p"]

log = logging.getLogger("slime.train")


#: when the last good version's canary replies already show problems this often, the canary
#: checks cannot tell a worse version from it (a random or untrained policy) and are skipped
UNINFORMATIVE_CANARIES = 0.5
#: a canary check fails only when at least this many replies changed for the worse: one sampled
#: reply that now runs to the limit is noise (measured: the default run's step 2, 1 of 6)
MIN_CHANGED_CANARIES = 2
#: the truncation check also needs the replies newly cut to outnumber those that newly end beyond
#: chance (one-sided exact sign test on the changed replies): with a 32-token budget most replies
#: run to the limit, and which of the few short ones stay short is sampling noise (the default
#: run: 2 of 5 and 2 of 6 newly cut, 0 newly ended, in two of its first three steps). Five newly
#: cut and none newly ended is the least that passes (p = 0.031); a run-on collapse cuts them all.
TRUNCATION_SIGNIFICANCE = 0.05


class GateMode(StrEnum):
    """``--promotion-gate``."""

    ENFORCE = "enforce"
    LOG = "log"
    OFF = "off"


class GateFailureAction(StrEnum):
    """``--on-gate-failure``: what training does after a version fails the gate."""

    CONTINUE = "continue"
    PAUSE = "pause"


@dataclass(frozen=True)
class GateData:
    """What the rollout service gives the gate (picklable; travels to the train actors).

    Attributes:
        heldout: judged turns held out from training (``reward`` > 0 accepted, < 0 rejected),
            with their recorded prompt and response ids.
        canary_messages: fixed canary prompts as chat messages (rendered with the policy's chat
            template), each sampled once per version.
        reference: ``(messages, answer)`` pairs whose answer's per-token NLL measures general ability.
    """

    heldout: list[Sample] = field(default_factory=list)
    canary_messages: list[list[dict[str, Any]]] = field(default_factory=list)
    reference: list[tuple[list[dict[str, Any]], str]] = field(default_factory=list)

    def empty(self) -> bool:
        """True when there is nothing to measure."""
        return not (self.heldout or self.canary_messages or self.reference)


@dataclass(frozen=True)
class CanaryReply:
    """One sampled canary reply: its text, whether it ended at the token limit, its problems."""

    text: str
    hit_limit: bool
    problems: tuple[str, ...]


@dataclass
class VersionMeasure:
    """Everything measured of one weight version, keyed per item.

    Attributes:
        logprob: ``heldout:<turn>`` -> mean per-token log-prob of the held-out reply (nats).
        nll: ``reference:<i>`` -> ``(summed NLL in nats, tokens)``.
        canary: ``canary:<i>`` / ``user:<turn>`` -> :class:`CanaryReply`.
        seconds: wall time of the measurement.
    """

    logprob: dict[str, float] = field(default_factory=dict)
    nll: dict[str, tuple[float, int]] = field(default_factory=dict)
    canary: dict[str, CanaryReply] = field(default_factory=dict)
    seconds: float = 0.0

    def merge(self, other: "VersionMeasure") -> None:
        """Add ``other``'s items (same weights, other items) into this one."""
        self.logprob.update(other.logprob)
        self.nll.update(other.nll)
        self.canary.update(other.canary)
        self.seconds += other.seconds

    def keys(self) -> set[str]:
        """Every measured item key."""
        return set(self.logprob) | set(self.nll) | set(self.canary)

    def per_token_nll(self, keys: Sequence[str] | None = None) -> float | None:
        """Per-token NLL of the reference set (over ``keys`` only when given); None if unmeasured."""
        items = [self.nll[k] for k in (keys if keys is not None else self.nll) if k in self.nll]
        tokens = sum(n for _, n in items)
        return sum(s for s, _ in items) / tokens if tokens else None


@dataclass(frozen=True)
class GateThresholds:
    """The gate's thresholds (``--gate-*`` flags)."""

    logprob_margin: float = 0.25
    max_nll_rise: float = 0.05
    max_new_problems: float = 0.1


@dataclass
class GateReport:
    """The verdict on one candidate version.

    Attributes:
        passed: every check within its threshold (always True with nothing to compare).
        failed: one ``"<check> <value> > <threshold>"`` string per failed check.
        metrics: ``gate/*`` numbers (what the run logs and the server records).
        candidate: the measure it was judged on (becomes the baseline when promoted).
    """

    passed: bool
    failed: list[str]
    metrics: dict[str, float]
    candidate: VersionMeasure | None = None

    def line(self) -> str:
        """The one-line reason of a failure (empty when passed)."""
        return "; ".join(self.failed)


def sign_test_p(worse: int, better: int) -> float:
    """One-sided exact sign test: the probability of at least ``worse`` of ``worse + better``
    changed items changing for the worse when either direction is equally likely (1.0 with no
    change). Returns a probability in (0, 1]."""
    n = worse + better
    return sum(math.comb(n, k) for k in range(worse, n + 1)) / 2 ** n if n else 1.0


def _item_key(kind: str, sample: Sample, index: int) -> str:
    return f"{kind}:{sample.turn_id or sample.source_id or index}"


def measure_version(backend: Any, data: GateData, skip: set[str] | frozenset[str] = frozenset(), *,
                    canary_max_tokens: int = 32, temperature: float = 1.0, seed: int = 1234) -> VersionMeasure:
    """Measure the backend's current weights on ``data``'s items not in ``skip``.

    Args:
        backend: a :class:`slime.trainer.backend.TrainingBackend` (its ``model``, ``tokenizer``,
            ``policy_logprobs``).
        data: the gate's items.
        skip: item keys already measured for these weights.
        canary_max_tokens: most new tokens of a canary reply.
        temperature: canary sampling temperature (> 0: sampled with ``seed``; 0: greedy).
        seed: ``torch.manual_seed`` before sampling, so the same weights give the same replies.

    Returns:
        The :class:`VersionMeasure` of the measured items.
    """
    t0 = time.perf_counter()
    out = VersionMeasure()
    todo = [(k, s) for i, s in enumerate(data.heldout) if (k := _item_key("heldout", s, i)) not in skip]
    if todo:
        for (key, _), lps in zip(todo, backend.policy_logprobs([s for _, s in todo])):
            out.logprob[key] = sum(lps) / len(lps) if lps else 0.0
    refs = [(f"reference:{i}", m, a) for i, (m, a) in enumerate(data.reference) if f"reference:{i}" not in skip]
    if refs:
        samples = [_reference_sample(backend.tokenizer, m, a) for _, m, a in refs]
        for (key, _, _), lps in zip(refs, backend.policy_logprobs(samples)):
            out.nll[key] = (-sum(lps), len(lps))
    prompts: list[tuple[str, list[int]]] = []
    for i, messages in enumerate(data.canary_messages):
        if f"canary:{i}" not in skip:
            prompts.append((f"canary:{i}", _render(backend.tokenizer, messages)))
    for i, s in enumerate(data.heldout):
        if (key := _item_key("user", s, i)) not in skip:
            prompts.append((key, list(s.tokens[:len(s.tokens) - s.response_length])))
    if prompts:
        replies = sample_replies(backend.model, backend.tokenizer, [p for _, p in prompts], canary_max_tokens,
                                 temperature, seed)
        for (key, _), reply in zip(prompts, replies):
            out.canary[key] = reply
    out.seconds = time.perf_counter() - t0
    return out


def _render(tokenizer: Any, messages: list[dict[str, Any]]) -> list[int]:
    ids = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=True)
    return list(ids["input_ids"] if isinstance(ids, dict) or hasattr(ids, "keys") else ids)


def _reference_sample(tokenizer: Any, messages: list[dict[str, Any]], answer: str, max_answer_tokens: int = 96) -> Sample:
    prompt = _render(tokenizer, messages)
    response = tokenizer(answer, add_special_tokens=False)["input_ids"][:max_answer_tokens]
    return Sample(tokens=prompt + response, response_length=len(response), rollout_log_probs=[0.0] * len(response),
                  sampling_temperature=1.0, sampling_top_p=1.0)


def sample_replies(model: Any, tokenizer: Any, prompts: list[list[int]], max_new_tokens: int,
                   temperature: float, seed: int) -> list[CanaryReply]:
    """Sample one reply per prompt (left-padded batch, ``model.generate``; no grad, eval mode).

    Args:
        model: a causal LM (a peft model too). tokenizer: its tokenizer.
        prompts: prompt token ids. max_new_tokens: the reply budget.
        temperature: > 0 samples (``torch.manual_seed(seed)`` first), 0 is greedy.

    Returns:
        One :class:`CanaryReply` per prompt: the decoded text (special tokens dropped), whether it
        used the whole budget without an end-of-sequence token, its :mod:`slime.guards.behaviour` problems.
    """
    import torch

    eos = tokenizer.eos_token_id
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else eos
    device = next(model.parameters()).device
    width = max(len(p) for p in prompts)
    ids_B_T = torch.full((len(prompts), width), pad, dtype=torch.long)
    mask_B_T = torch.zeros((len(prompts), width), dtype=torch.long)
    for i, p in enumerate(prompts):
        ids_B_T[i, width - len(p):] = torch.tensor(p)
        mask_B_T[i, width - len(p):] = 1
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            torch.manual_seed(seed)
            kwargs = dict(do_sample=True, temperature=temperature, top_p=1.0, top_k=0) if temperature > 0 else \
                dict(do_sample=False)
            out_B_T = model.generate(input_ids=ids_B_T.to(device), attention_mask=mask_B_T.to(device),
                                     max_new_tokens=max_new_tokens, pad_token_id=pad, eos_token_id=eos, **kwargs)
    finally:
        model.train(was_training)
    replies = []
    for row in out_B_T[:, width:].tolist():
        ended = eos in row
        if ended:
            row = row[:row.index(eos)]
        text = tokenizer.decode(row, skip_special_tokens=True)
        cut = not ended and len(row) >= max_new_tokens
        if cut:  # a character the budget split in half decodes as U+FFFD: not the model's fault
            text = text.rstrip("\ufffd")
        replies.append(CanaryReply(text, cut, tuple(p.value for p in behaviour_problems(text))))
    return replies


class PromotionGate:
    """Decides whether a candidate version is served (see the module docstring).

    Args:
        mode: :class:`GateMode`. thresholds: :class:`GateThresholds`.

    Holds the measure of the version the run started from (``base``, for the NLL bound) and of the
    last good version (``baseline``), item by item.
    """

    def __init__(self, mode: GateMode | str = GateMode.ENFORCE, thresholds: GateThresholds = GateThresholds()):
        self.mode = GateMode(mode)
        self.thresholds = thresholds
        self.base: VersionMeasure | None = None
        self.baseline = VersionMeasure()
        self.history: list[dict[str, Any]] = []

    @property
    def active(self) -> bool:
        """True unless ``--promotion-gate off``."""
        return self.mode != GateMode.OFF

    def refresh_baseline(self, measure_fn) -> float:
        """Measure the current (last good) weights on the items the baseline lacks.

        Args:
            measure_fn: ``measure_fn(skip: set[str]) -> VersionMeasure`` on the current weights.

        Returns:
            Seconds spent.
        """
        extra = measure_fn(self.baseline.keys())
        self.baseline.merge(extra)
        if self.base is None:
            self.base = VersionMeasure(dict(self.baseline.logprob), dict(self.baseline.nll), dict(self.baseline.canary))
        else:
            for k, v in extra.nll.items():  # a reference item new to the base (the set is fixed: rare)
                self.base.nll.setdefault(k, v)
        return extra.seconds

    def judge(self, candidate: VersionMeasure, heldout_rewards: dict[str, float]) -> GateReport:
        """Compare ``candidate`` with the baseline and the base.

        Args:
            candidate: the new version's measure (every item).
            heldout_rewards: ``heldout:<turn>`` -> the judge's reward of that held-out turn.

        Returns:
            The :class:`GateReport` (``passed`` is the verdict whatever the mode).
        """
        t = self.thresholds
        m: dict[str, float] = {"gate/seconds": candidate.seconds}
        failed: list[str] = []
        acc = [self.baseline.logprob[k] - candidate.logprob[k] for k, r in heldout_rewards.items()
               if r > 0 and k in candidate.logprob and k in self.baseline.logprob]
        rej = [candidate.logprob[k] - self.baseline.logprob[k] for k, r in heldout_rewards.items()
               if r < 0 and k in candidate.logprob and k in self.baseline.logprob]
        m["gate/heldout_accepted"], m["gate/heldout_rejected"] = float(len(acc)), float(len(rej))
        if acc:
            m["gate/accepted_logprob_drop"] = drop = sum(acc) / len(acc)
            if drop > t.logprob_margin:
                failed.append(f"accepted replies less likely by {drop:.3f} nats/token > {t.logprob_margin}")
        if rej:
            m["gate/rejected_logprob_rise"] = rise = sum(rej) / len(rej)
            if rise > t.logprob_margin:
                failed.append(f"rejected replies more likely by {rise:.3f} nats/token > {t.logprob_margin}")
        keys = sorted(set(candidate.nll) & set(self.base.nll if self.base else {}))
        if keys and self.base is not None:
            base_nll, new_nll = self.base.per_token_nll(keys), candidate.per_token_nll(keys)
            m["gate/reference_nll"], m["gate/reference_nll_base"] = new_nll, base_nll
            m["gate/reference_nll_rise"] = rise = new_nll / base_nll - 1 if base_nll else 0.0
            if rise > t.max_nll_rise:
                failed.append(f"reference NLL up {rise:+.1%} over the start > {t.max_nll_rise:.0%}")
        shared = [k for k in candidate.canary if k in self.baseline.canary]
        baseline_bad = sum(bool(self.baseline.canary[k].problems) for k in shared) / len(shared) if shared else 0.0
        if shared and baseline_bad >= UNINFORMATIVE_CANARIES:  # e.g. a random test model: nothing to lose
            m["gate/canary_check_skipped"] = 1.0
        elif shared:
            new_problems = [k for k in shared if candidate.canary[k].problems and not self.baseline.canary[k].problems]
            new_cut = [k for k in shared if candidate.canary[k].hit_limit and not self.baseline.canary[k].hit_limit]
            # a reply that now ends on its own offsets one newly cut: sampling moves both ways
            new_ended = [k for k in shared if self.baseline.canary[k].hit_limit and not candidate.canary[k].hit_limit]
            net_cut = len(new_cut) - len(new_ended)
            n = len(shared)
            m["gate/canaries"] = float(n)
            m["gate/canary_problem_share"] = sum(bool(candidate.canary[k].problems) for k in shared) / n
            m["gate/new_problem_share"] = share = len(new_problems) / n
            m["gate/new_truncation_share"] = cut = max(net_cut, 0) / n
            if share > t.max_new_problems and len(new_problems) >= MIN_CHANGED_CANARIES:
                k = new_problems[0]
                failed.append(f"{len(new_problems)}/{n} canary replies newly degenerate > {t.max_new_problems:.0%} "
                              f"({', '.join(candidate.canary[k].problems)}: {candidate.canary[k].text[:60]!r})")
            m["gate/new_truncation_p"] = p_cut = sign_test_p(len(new_cut), len(new_ended))
            if cut > t.max_new_problems and net_cut >= MIN_CHANGED_CANARIES and p_cut < TRUNCATION_SIGNIFICANCE:
                failed.append(f"{len(new_cut)}/{n} canary replies newly run to the token limit, {len(new_ended)} newly "
                              f"end on their own: net {cut:.0%} > {t.max_new_problems:.0%} (sign test p={p_cut:.3f})")
        m["gate/passed"] = float(not failed)
        return GateReport(not failed, failed, m, candidate)

    def promote(self, candidate: VersionMeasure) -> None:
        """The candidate is served: it becomes the baseline (items it lacks are dropped)."""
        self.baseline = candidate

    def record(self, version: int, step: int, report: GateReport, served: bool) -> dict[str, Any]:
        """Append one row to :attr:`history` (what ``summary.json`` lists per version); returns it."""
        row = {"version": version, "step": step, "served": served, "passed": report.passed,
               "failed": list(report.failed),
               **{k: v for k, v in report.metrics.items() if isinstance(v, float) and math.isfinite(v)}}
        self.history.append(row)
        return row

    def to_dict(self) -> dict[str, Any]:
        """The gate's settings, for the run summary."""
        return {"mode": self.mode.value, **asdict(self.thresholds)}
