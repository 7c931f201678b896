"""The step PRM judge: one score per agent step, from ``--prm-m`` votes of ``+1`` / ``-1``.

Upstream OpenClaw-RL judges each step of a tool-call, terminal, SWE or GUI episode with a process
reward model (its ``terminal-rl/agent/prm_agent.py``, ``swe-rl/swe_prm.py``): the judge sees the
task, a window of the history, the step's action and what came back, and answers ``+1`` (a
correct step that advances the task) or ``-1``. Here:

* :func:`build_step_messages` renders step ``k`` of an episode: the task, a **head-and-tail
  window** of ``steps[:k]`` (the first ``head`` and last ``tail`` steps with a
  ``... N steps omitted ...`` marker between; every shown text clipped head + tail to a character
  budget, :class:`HistoryWindow`), the step's action and its observation, and the instruction to
  end with the verdict on its own line, exactly ``+1`` or ``-1``.
* :func:`parse_step_vote` reads one answer. A vote counts only when the answer's **last non-empty
  line** is the verdict: ``+1``, ``1`` or ``-1`` after stripping surrounding whitespace, markdown
  emphasis or backticks, a ``\\boxed{...}`` wrapper (upstream's answer format) and one trailing
  period. Anything else (``0``, ``+2``, ``1.0``, ``-1 because ...``, ``Score: 1``, an empty
  answer) is an invalid vote (``None``).
* :class:`StepPRM` asks a voter for ``m`` answers per step (concurrently: one batched generate on a
  local model, ``m`` concurrent requests to an endpoint) and reduces them with
  :func:`step_score`: the mean of the valid votes, ``0.0`` when none is valid.
* Voters: :class:`BackendVoter` over the Binary RL judge's backends (a local model in the
  ``generate`` mode, e.g. the embedded ``builtin:smollm2-135m``, or an OpenAI-compatible
  ``--prm-url``), built from the service flags by :func:`build_step_prm`; and
  :class:`ObservationRuleJudge`, a deterministic rule judge for offline runs and exact tests.

The scores are raw (in ``[-1, 1]``); ``--prm-step-coef`` is applied once, by the ``step_wise``
advantage estimator (:mod:`slime.methods.step_wise`).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

__all__ = ["HistoryWindow", "Step", "StepScore", "StepRequest", "StepVoter", "BackendVoter", "ObservationRuleJudge",
           "StepPRM", "STEP_PRM_SYSTEM", "build_step_messages", "build_step_prm", "clip_text", "parse_step_vote",
           "render_history", "step_score"]

STEP_PRM_SYSTEM = ("You review one step of an AI agent that works on a task with tools. You see the task, "
                   "part of the earlier steps, and the step to judge: the agent's action and what came back.")

STEP_PRM_INSTRUCTION = (
    "Judge only the current step.\n"
    "+1 if the action is a correct, well-formed step that moves the task forward and its result shows progress.\n"
    "-1 if the action is wrong, malformed, useless or repeated, or its result shows an error or no progress.\n"
    "You may reason briefly first. End with your verdict alone on the last line: exactly +1 or -1."
)


@dataclass(frozen=True)
class Step:
    """One agent step: the action text the policy produced (tool call included) and the observation
    the environment returned for it (tool output; ``""`` when none)."""

    action: str
    observation: str


@dataclass(frozen=True)
class StepScore:
    """The step PRM's result for one step.

    Attributes:
        score: mean of the valid votes, in ``[-1, 1]``; ``0.0`` when no vote is valid.
        votes: one entry per vote: ``1``, ``-1`` or ``None`` (invalid answer).
        texts: the raw answers (for inspection; not compared).
    """

    score: float
    votes: list[int | None]
    texts: list[str] = field(default_factory=list, compare=False)


@dataclass(frozen=True)
class HistoryWindow:
    """How much of an episode the judge sees (upstream's ``head_tail`` history mode, its default
    of two head and two tail steps).

    Attributes:
        head / tail: earlier steps shown from the start / the end of ``steps[:k]``.
        step_chars: characters kept of each history action and observation (head + tail).
        current_chars: characters kept of the judged step's action and observation.
        task_chars: characters kept of the task.
    """

    head: int = 2
    tail: int = 2
    step_chars: int = 800
    current_chars: int = 2000
    task_chars: int = 4000

    def __post_init__(self):
        if min(self.head, self.tail) < 0 or min(self.step_chars, self.current_chars, self.task_chars) < 16:
            raise ValueError(f"bad HistoryWindow {self}: head/tail >= 0 and character budgets >= 16")


def clip_text(text: str, limit: int) -> str:
    """``text`` stripped, or when longer than ``limit`` its first and last ``limit // 2`` characters
    around a ``[... N chars omitted ...]`` line (``N`` the characters left out)."""
    text = (text or "").strip()
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n[... {len(text) - 2 * half} chars omitted ...]\n{text[len(text) - half:]}"


def _step_block(number: int, step: Step, limit: int) -> str:
    return (f"Step {number} action:\n{clip_text(step.action, limit) or '(empty)'}\n"
            f"Step {number} observation:\n{clip_text(step.observation, limit) or '(empty)'}")


def render_history(steps: Sequence[Step], k: int, window: HistoryWindow = HistoryWindow()) -> str:
    """The history before step ``k`` (0-based) as text: steps numbered from 1; when ``k`` exceeds
    ``head + tail``, the first ``head`` and last ``tail`` with ``... N steps omitted ...`` between;
    ``"(no earlier steps)"`` for ``k == 0``.

    Raises:
        IndexError: ``k`` outside ``[0, len(steps)]``.
    """
    if not 0 <= k <= len(steps):
        raise IndexError(f"step {k} of an episode of {len(steps)} steps")
    if k == 0:
        return "(no earlier steps)"
    shown = list(range(k)) if k <= window.head + window.tail else \
        list(range(window.head)) + [None] + list(range(k - window.tail, k))
    blocks = [f"... {k - window.head - window.tail} steps omitted ..." if i is None
              else _step_block(i + 1, steps[i], window.step_chars) for i in shown]
    return "\n\n".join(blocks)


def build_step_messages(task: str, steps: Sequence[Step], k: int,
                        window: HistoryWindow = HistoryWindow()) -> list[dict[str, str]]:
    """The judge's chat messages for step ``k`` (0-based) of an episode.

    Returns:
        ``[system, user]``: the user message holds ``Task``, ``Earlier steps``
        (:func:`render_history`), ``Current step`` (number ``k + 1``, action and observation) and
        :data:`STEP_PRM_INSTRUCTION`.

    Raises:
        IndexError: ``k`` is not a step of ``steps``.
    """
    if not 0 <= k < len(steps):
        raise IndexError(f"step {k} of an episode of {len(steps)} steps")
    user = "\n\n".join([f"Task:\n{clip_text(task, window.task_chars) or '(empty)'}",
                        f"Earlier steps:\n{render_history(steps, k, window)}",
                        f"Current step ({k + 1}):\n{_step_block(k + 1, steps[k], window.current_chars)}",
                        STEP_PRM_INSTRUCTION])
    return [{"role": "system", "content": STEP_PRM_SYSTEM}, {"role": "user", "content": user}]


_WRAP_RE = re.compile(r"^(?:\*\*|__|`+)?\s*(?:\\boxed\s*\{\s*([^{}]*?)\s*\}|([^{}]*?))\s*(?:\*\*|__|`+)?\.?$")
_VOTE_RE = re.compile(r"[+-]?1")


def parse_step_vote(text: str | None) -> int | None:
    """One answer's vote: ``1``, ``-1`` or ``None`` (the module docstring has the exact rule).

    Examples: ``"+1"`` -> 1, ``"1"`` -> 1, ``"+1."`` -> 1, ``"reasoning...\\n-1"`` -> -1,
    ``"\\boxed{-1}"`` -> -1; ``"-1 because"``, ``"0"``, ``"+2"``, ``"1.0"``, ``""`` -> None.
    """
    lines = [ln.strip() for ln in (text or "").splitlines() if ln.strip()]
    if not lines:
        return None
    m = _WRAP_RE.match(lines[-1])
    if not m:
        return None
    token = (m.group(1) if m.group(1) is not None else m.group(2) or "").strip()
    if not _VOTE_RE.fullmatch(token):
        return None
    return -1 if token.startswith("-") else 1


def step_score(texts: Sequence[str]) -> StepScore:
    """Reduce answers to a :class:`StepScore`: each parsed by :func:`parse_step_vote`, the score the
    mean of the valid votes (``0.0`` when none)."""
    votes = [parse_step_vote(t) for t in texts]
    valid = [v for v in votes if v is not None]
    return StepScore(score=sum(valid) / len(valid) if valid else 0.0, votes=votes, texts=list(texts))


@dataclass(frozen=True)
class StepRequest:
    """What a voter judges: the episode's ``task`` and ``steps``, the step index ``k`` and the
    rendered judge ``messages`` (:func:`build_step_messages`)."""

    task: str
    steps: Sequence[Step]
    k: int
    messages: list[dict[str, str]]

    @property
    def step(self) -> Step:
        """The judged step ``steps[k]``."""
        return self.steps[self.k]


class StepVoter(Protocol):
    """Anything that answers a :class:`StepRequest` ``m`` times (raw answer texts)."""

    name: str

    async def vote_texts(self, request: StepRequest, m: int) -> list[str]:
        """``m`` answers to ``request`` (each parsed later by :func:`parse_step_vote`)."""
        ...


class BackendVoter:
    """A step voter over a Binary RL judge backend that returns answer texts: a
    :class:`~openclaw_rl.judges.backends.LocalJudgeBackend` in ``generate`` mode or an
    :class:`~openclaw_rl.judges.backends.OpenAIJudgeBackend` (``--prm-url``).

    Raises:
        ValueError: a local backend in another mode (``logprob`` scores ``Score: v`` replies, not
            free answers).
    """

    def __init__(self, backend: Any):
        if getattr(backend, "mode", "generate") not in ("generate", "endpoint"):
            raise ValueError(f"the step PRM needs answer texts: a generate-mode or endpoint backend, got mode "
                             f"{backend.mode!r}")
        self.backend = backend
        self.name = getattr(backend, "name", type(backend).__name__)

    async def vote_texts(self, request: StepRequest, m: int) -> list[str]:
        """``m`` answers from ``backend.score(messages, m)`` (its own votes, in the Binary RL
        ``Score:`` format, are ignored). Raises what the backend raises (``openai.APIError``)."""
        return list((await self.backend.score(request.messages, m)).texts)

    async def aclose(self) -> None:
        """Close the backend (HTTP client)."""
        await self.backend.aclose()


#: observation patterns :class:`ObservationRuleJudge` counts as a failed step (case-insensitive)
FAILURE_PATTERNS = (r"\btraceback\b", r"\berror\b", r"\bexception\b", r"command not found", r"no such file",
                    r"permission denied", r"timed? ?out", r"\binvalid\b", r"\bfailed\b", r"exit (?:code|status) [1-9]",
                    r"not (?:a )?valid", r"unknown tool", r"malformed")


class ObservationRuleJudge:
    """A deterministic step judge (no model): ``-1`` when the action is empty, the observation is
    empty, or the observation matches a failure pattern (:data:`FAILURE_PATTERNS`: tracebacks,
    errors, missing commands or files, timeouts, malformed or unknown tool calls), else ``+1``.

    For offline runs without a judge model and for exact tests of everything downstream of the
    judge; every one of its ``m`` answers is the same (``"rule: <why>\\n+1"``).

    Args:
        patterns: regular expressions replacing :data:`FAILURE_PATTERNS`.
    """

    name = "rule:observation"

    def __init__(self, patterns: Sequence[str] = FAILURE_PATTERNS):
        self._rx = re.compile("|".join(f"(?:{p})" for p in patterns), re.I) if patterns else None

    def verdict(self, step: Step) -> tuple[int, str]:
        """``(vote, reason)`` for one step."""
        if not step.action.strip():
            return -1, "empty action"
        if not step.observation.strip():
            return -1, "empty observation"
        hit = self._rx.search(step.observation) if self._rx else None
        if hit:
            return -1, f"observation shows {hit.group(0)!r}"
        return 1, "observation shows no failure"

    async def vote_texts(self, request: StepRequest, m: int) -> list[str]:
        """``m`` identical answers ``"rule: <reason>\\n<+1|-1>"``."""
        vote, why = self.verdict(request.step)
        return [f"rule: {why}\n{vote:+d}"] * m

    async def aclose(self) -> None:
        """Nothing to release."""


class StepPRM:
    """Scores every step of an episode (``--prm-m`` votes each, mean of the valid ones).

    Args:
        voter: a :class:`StepVoter`.
        m: votes per step (``--prm-m``, >= 1).
        window: the history shown (:class:`HistoryWindow`).
        num_workers: steps judged at once (an ``asyncio.Semaphore`` per event loop).

    Raises:
        ValueError: ``m < 1`` or ``num_workers < 1``.
    """

    def __init__(self, voter: StepVoter, m: int = 3, window: HistoryWindow = HistoryWindow(), num_workers: int = 4):
        if int(m) < 1 or int(num_workers) < 1:
            raise ValueError(f"the step PRM needs m >= 1 and num_workers >= 1, got m={m}, num_workers={num_workers}")
        self.voter, self.m, self.window, self.num_workers = voter, int(m), window, int(num_workers)
        self._sems: dict[Any, asyncio.Semaphore] = {}

    def _sem(self) -> asyncio.Semaphore:
        loop = asyncio.get_running_loop()
        if loop not in self._sems:
            self._sems = {loop: asyncio.Semaphore(self.num_workers)}
        return self._sems[loop]

    async def score_step(self, task: str, steps: Sequence[Step], k: int) -> StepScore:
        """Score step ``k`` (0-based) of ``steps`` seen after ``steps[:k]``.

        Raises:
            IndexError: ``k`` outside ``steps``; whatever the voter raises (an endpoint's
                ``openai.APIError``).
        """
        request = StepRequest(task, steps, k, build_step_messages(task, steps, k, self.window))
        async with self._sem():
            texts = await self.voter.vote_texts(request, self.m)
        if len(texts) != self.m:
            raise ValueError(f"step PRM voter {getattr(self.voter, 'name', self.voter)!r} returned {len(texts)} "
                             f"answers for m={self.m}")
        return step_score(texts)

    async def score_steps(self, task: str, steps: Sequence[Step]) -> list[StepScore]:
        """One :class:`StepScore` per step, in order (steps judged concurrently)."""
        steps = list(steps)
        return list(await asyncio.gather(*(self.score_step(task, steps, k) for k in range(len(steps)))))

    async def aclose(self) -> None:
        """Release the voter's resources."""
        close = getattr(self.voter, "aclose", None)
        if close is not None:
            await close()


def build_step_prm(flags: Any, policy_model_path: str | None = None, *, window: HistoryWindow = HistoryWindow(),
                   num_workers: int | None = None, **backend_kw: Any) -> StepPRM:
    """The step PRM a run's service flags describe.

    Args:
        flags: :class:`openclaw_rl.rollout.flags.OpenClawFlags` (``service_flags(cfg)``): with
            ``prm_url`` an :class:`~openclaw_rl.judges.backends.OpenAIJudgeBackend` on it
            (``prm_model_name``, ``prm_api_key``), else a local generate-mode
            :class:`~openclaw_rl.judges.backends.LocalJudgeBackend` on ``prm_model_path``, else
            ``policy_model_path``, else the default judge model; sampled at ``prm_temperature``
            with at most ``prm_max_new_tokens``; ``prm_m`` votes; ``num_judge_workers`` steps at once.
            ``--prm-model-path rule:observation`` is the deterministic :class:`ObservationRuleJudge`.
        policy_model_path: the policy's model (the local judge's fallback).
        window: the history window.
        num_workers: overrides ``flags.num_judge_workers``.
        **backend_kw: more keyword arguments for the backend (``model=``, ``tokenizer=``, ``seed=``).

    Raises:
        ValueError: ``prm_temperature == 0`` with a local model (sampling needs a temperature > 0;
            greedy judging is for endpoints), or bad backend settings.
    """
    from openclaw_rl.judges.backends import LocalJudgeBackend, OpenAIJudgeBackend, default_prm_model_path

    workers = num_workers if num_workers is not None else getattr(flags, "num_judge_workers", 4)
    if flags.prm_model_path == ObservationRuleJudge.name:
        return StepPRM(ObservationRuleJudge(), m=flags.prm_m, window=window, num_workers=workers)
    temperature, max_new = float(flags.prm_temperature), int(flags.prm_max_new_tokens)
    if flags.prm_url:
        backend: Any = OpenAIJudgeBackend(flags.prm_url, flags.prm_model_name or "default", api_key=flags.prm_api_key,
                                          temperature=temperature, max_tokens=max_new, **backend_kw)
    else:
        if temperature <= 0:
            raise ValueError("--prm-temperature must be > 0 for a local step PRM model (give --prm-url for greedy)")
        path = flags.prm_model_path or default_prm_model_path(policy_model_path)
        backend = LocalJudgeBackend(path, mode="generate", temperature=temperature, max_new_tokens=max_new,
                                    **backend_kw)
    return StepPRM(BackendVoter(backend), m=flags.prm_m, window=window, num_workers=workers)
