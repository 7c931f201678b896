"""The one record type that travels from capture to loss.

A :class:`Sample` holds the exact token ids the inference engine consumed (prompt) and sampled
(response), the sampling log-probs of the response tokens, the weight version that produced them,
and everything judging adds later (reward, teacher log-probs, advantages). Nothing is
re-tokenised to rebuild a sample (docs/architecture.md, invariant 1, "token in, token out");
plugins receive and return it (invariant 6).

The field names follow slime's ``slime.utils.types.Sample`` (THUDM/slime) so slime-style plugins
read naturally: ``tokens`` is prompt + response, ``response_length`` counts the trailing response
tokens, ``loss_mask`` and ``rollout_log_probs`` are aligned with the response only.
"""

from __future__ import annotations

import enum
import math
import operator
from dataclasses import dataclass, field, fields
from typing import Any

__all__ = ["LogprobSource", "Sample", "SampleStatus", "Trajectory"]


class SampleStatus(str, enum.Enum):
    """Life-cycle state of a :class:`Sample` (slime's ``Sample.Status``).

    ``PENDING``: recorded, not yet finished or judged. ``COMPLETED``: the engine stopped on an
    end-of-sequence or stop token. ``TRUNCATED``: the response hit the length limit.
    ``ABORTED``: generation was cancelled (client disconnect, weight swap policy).
    ``FAILED``: the engine or judge errored; the sample must not be trained on.
    """

    PENDING = "pending"
    COMPLETED = "completed"
    TRUNCATED = "truncated"
    ABORTED = "aborted"
    FAILED = "failed"


class LogprobSource(str, enum.Enum):
    """Where a sample's ``rollout_log_probs`` come from, which decides how the trainer uses them.

    ``ENGINE``: the serving engine's sampling log-probs under the sample's own
    ``sampling_temperature`` / ``sampling_top_p``; the trainer reproduces that distribution
    (:func:`slime.algorithms.logprobs.compute_token_logprobs`), compares (``train_rollout_logprob_abs_diff``)
    and corrects the rest with TIS. ``CONSTRAINED``: sampled under a grammar (``tool_choice``
    required / named): the log-probs are the constrained distribution's (a forced token has
    log-prob 0), which the trainer cannot reproduce without the grammar. ``NONE``: no sampling
    log-probs (tokens built from text, e.g. an imported hand-written session);
    ``rollout_log_probs`` are placeholders. For ``CONSTRAINED`` and ``NONE`` the trainer replaces
    ``rollout_log_probs`` by its own log-probs of the step's weights (before advantages are
    computed), so TIS weighs them 1 and they stay out of the train/rollout gap metric
    (docs/plugins.md, "What the trainer recomputes").
    """

    ENGINE = "engine"
    CONSTRAINED = "constrained"
    NONE = "none"


def _check_finite_floats(name: str, values: list[float]) -> None:
    for i, v in enumerate(values):
        if not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v):
            raise ValueError(f"{name}[{i}] must be a finite number, got {v!r}")


def _as_int(name: str, i: int, value: Any) -> int:
    """Return ``value`` as a python int (numpy/torch integer scalars accepted); ValueError otherwise."""
    if isinstance(value, bool):
        raise ValueError(f"{name}[{i}] must be an int, got {value!r}")
    try:
        return operator.index(value)
    except TypeError:
        raise ValueError(f"{name}[{i}] must be an int, got {value!r}") from None


#: the multimodal keys whose values are integer grids (everything else is float32 pixel data)
_INTEGER_KEYS = ("image_grid_thw", "video_grid_thw")


def _multimodal_tensors(inputs: Any) -> dict[str, Any]:
    """``multimodal_train_inputs`` with every value a CPU tensor (lists become long grids or float32)."""
    import torch

    if not isinstance(inputs, dict):
        raise ValueError(f"multimodal_train_inputs must be a dict, got {type(inputs).__name__}")
    out = {}
    for key, value in inputs.items():
        dtype = torch.long if key in _INTEGER_KEYS else torch.float32
        try:
            out[key] = value if isinstance(value, torch.Tensor) else torch.tensor(value, dtype=dtype)
        except (TypeError, ValueError, RuntimeError) as exc:
            raise ValueError(f"multimodal_train_inputs[{key!r}] is not a tensor or nested list of numbers: {exc}") from None
    return out


def _validate_multimodal(inputs: dict[str, Any]) -> None:
    import torch

    for key, value in inputs.items():
        if not isinstance(value, torch.Tensor):
            raise ValueError(f"multimodal_train_inputs[{key!r}] must be a tensor")
    for pixels, grid in (("pixel_values", "image_grid_thw"), ("pixel_values_videos", "video_grid_thw")):
        if (pixels in inputs) != (grid in inputs):
            raise ValueError(f"multimodal_train_inputs needs {pixels!r} and {grid!r} together")
        if pixels not in inputs:
            continue
        p, g = inputs[pixels], inputs[grid]
        if g.dim() != 2 or g.shape[1] != 3 or g.dtype != torch.long or bool((g < 1).any()):
            raise ValueError(f"multimodal_train_inputs[{grid!r}] must be a [N, 3] long tensor of positive "
                             f"patch counts, got shape {tuple(g.shape)} {g.dtype}")
        if p.dim() != 2 or p.shape[0] != int(g.prod(-1).sum()):
            raise ValueError(f"multimodal_train_inputs[{pixels!r}] must be [sum(t*h*w)={int(g.prod(-1).sum())}, D] "
                             f"for {grid} {g.tolist()}, got shape {tuple(p.shape)}")
        if not bool(torch.isfinite(p).all()):
            raise ValueError(f"multimodal_train_inputs[{pixels!r}] must be finite")


def _same_multimodal(a: dict[str, Any] | None, b: dict[str, Any] | None) -> bool:
    import torch

    if a is None or b is None:
        return a is b
    return a.keys() == b.keys() and all(a[k].dtype == b[k].dtype and torch.equal(a[k], b[k]) for k in a)


@dataclass
class Trajectory:
    """Where a sample sits in a multi-step agent episode (Track 2): what GRPO under
    ``--dynamic-history`` and the step-wise estimator group and score by (upstream OpenClaw-RL
    keeps the same data in untyped sample metadata; here the trainer reads only this record).

    Fields (``R`` = the sample's ``response_length``):
        id: the episode's id (a non-empty string); the step-samples of one episode (one per step
            under ``--dynamic-history``, or the pieces of a trajectory split at a chat-template
            prefix break) share it.
        group_index: the prompt the episode answers (the GRPO group), or None: the trainer then
            groups by position (``i // --n-samples-per-prompt``).
        step_spans: ``[(start, end), ...]``: each step's action tokens in response coordinates,
            ``0 <= start < end <= R``; empty: the sample is one step spanning its response.
        step_indices: the global step index ``k`` of each span (``len == len(step_spans)``);
            None: ``0, 1, ...``.
        step_scores: the step PRM's score of each span (finite floats, aligned with the spans);
            None: no step PRM (every score 0.0).

    Raises:
        ValueError: from ``__post_init__`` on an empty id, a negative group index, a span that is
            not a pair of ints, spans out of order or overlapping, scores that are not finite
            numbers, or lists that do not align (the span bounds are checked against ``R`` by
            :meth:`Sample.validate`).
    """

    id: str
    group_index: int | None = None
    step_spans: list[tuple[int, int]] = field(default_factory=list)
    step_indices: list[int] | None = None
    step_scores: list[float] | None = None

    def __post_init__(self) -> None:
        try:
            self._check()
        except TypeError as exc:  # a span that is not a pair of numbers, a score of None...
            raise ValueError(f"trajectory {self.id!r}: {exc}") from None

    def _check(self) -> None:
        if not isinstance(self.id, str) or not self.id.strip():
            raise ValueError(f"trajectory id must be a non-empty string, got {self.id!r}")
        if self.group_index is not None:
            try:
                group = None if isinstance(self.group_index, bool) else operator.index(self.group_index)
            except TypeError:
                group = None
            if group is None or group < 0:
                raise ValueError(f"trajectory group_index must be an int >= 0 or None, got {self.group_index!r}")
            self.group_index = group
        spans = []
        for i, span in enumerate(self.step_spans):
            if len(span) != 2:
                raise ValueError(f"trajectory step_spans[{i}] must be [start, end), got {span!r}")
            spans.append((_as_int("step_spans", i, span[0]), _as_int("step_spans", i, span[1])))
        self.step_spans = spans
        if self.step_indices is not None:
            self.step_indices = [_as_int("step_indices", i, k) for i, k in enumerate(self.step_indices)]
        if self.step_scores is not None:
            try:
                self.step_scores = [float(x) for x in self.step_scores]
            except ValueError:
                raise ValueError(f"trajectory {self.id}: step_scores must be numbers, got {self.step_scores!r}") from None
            _check_finite_floats("step_scores", self.step_scores)
        for i in range(1, len(spans)):
            if spans[i][0] < spans[i - 1][1]:
                raise ValueError(f"trajectory {self.id}: step span {i} {list(spans[i])} starts before span {i - 1} "
                                 f"{list(spans[i - 1])} ends; spans are the steps in order and do not overlap")
        for name in ("step_indices", "step_scores"):
            values = getattr(self, name)
            if values is not None and len(values) != len(spans):
                raise ValueError(f"trajectory {self.id}: {len(spans)} step_spans but {len(values)} {name}; "
                                 "they must align")

    def check_spans(self, response_length: int) -> None:
        """Raise ``ValueError`` unless every span is non-empty and inside ``[0, response_length]``."""
        for i, (start, end) in enumerate(self.step_spans):
            if not 0 <= start < end <= response_length:
                raise ValueError(f"trajectory {self.id}: step span {i} [{start}, {end}) is not inside the "
                                 f"{response_length} response tokens")

    def cut(self, response_length: int) -> "Trajectory":
        """The trajectory of the sample's first ``response_length`` response tokens (the context
        cut of :func:`slime.guards.admission.fit_context`): spans past it dropped, the last one clipped,
        their indices and scores kept aligned. Returns a new record."""
        keep = [i for i, (start, _) in enumerate(self.step_spans) if start < response_length]
        pick = (lambda xs: None if xs is None else [xs[i] for i in keep])
        return Trajectory(self.id, self.group_index,
                          [(self.step_spans[i][0], min(self.step_spans[i][1], response_length)) for i in keep],
                          pick(self.step_indices), pick(self.step_scores))

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe form (spans as ``[start, end]`` lists); ``Trajectory(**t.to_dict()) == t``."""
        return {"id": self.id, "group_index": self.group_index, "step_spans": [list(s) for s in self.step_spans],
                "step_indices": None if self.step_indices is None else list(self.step_indices),
                "step_scores": None if self.step_scores is None else list(self.step_scores)}


@dataclass
class Sample:
    """One rollout turn: prompt ids + sampled response ids with everything needed for the loss.

    Fields (``R`` = ``response_length``):
        tokens: prompt + response token ids, ``len(tokens) = prompt_length + R``.
        response_length: number of trailing response tokens ``R`` (0 <= R <= len(tokens)).
        rollout_log_probs: sampling log-prob of each response token under the behaviour policy
            that served it, length ``R``. Finite floats.
        loss_mask: 1 for response tokens that are trained on, 0 for tokens that are not (e.g.
            tool outputs spliced into a multi-turn response), length ``R``. Defaults to all ones.
        reward: scalar outcome reward once judged, else ``None``.
        status: :class:`SampleStatus` (a plain string such as ``"completed"`` is accepted).
        weight_version: version of the policy weights that sampled the response (>= 0); staleness
            is the trainer's current version minus this.
        session_id / turn_id / turn_index: where the turn came from in the conversation store.
        metadata: free JSON-safe dict for plugins (judge votes, next-state text, ...); the trainer
            core (``slime/``) reads no key of it (tests/slime/test_slime_seam.py).
        source_id: id of the record the sample was built from in its data source (the trajectory
            store's row id), or None; increasing with recording order, so the largest trained one
            is the checkpoint's data cursor.
        teacher_log_probs: optional per-response-token teacher log-probs (On-Policy Distillation),
            length ``R``.
        teacher_topk_ids / teacher_topk_log_probs: optional teacher top-``K`` token ids and their
            log-probs at each response position, ``[R][K]`` (top-K distillation); both or neither.
        advantages: optional per-response-token advantages, length ``R``; filled in by
            :mod:`slime.algorithms.advantages`.
        prompt: the prompt as text or chat messages, when known (slime's ``Sample.prompt``;
            prompt-dataset rollouts and reward plugins read it). Never re-tokenised.
        response: the response text, when known (slime's ``Sample.response``).
        label: the prompt's label / reference answer from a prompt dataset (slime's ``label``).
        sampling_temperature: the temperature the response was sampled at (``0``: greedy, whose
            reported log-probs are the raw temperature-1 log-softmax); None: unknown, the
            trainer uses ``--rollout-temperature``.
        sampling_top_p: the nucleus mass it was sampled with (``rollout_log_probs`` are then
            renormalised over the nucleus, as the engine reports them); None: 1.0.
        logprob_source: :class:`LogprobSource` of ``rollout_log_probs`` (a plain string such as
            ``"engine"`` is accepted).
        trajectory: the :class:`Trajectory` of an agent episode's step-sample (its id, group and
            step spans), or None for a single-turn sample (a JSON object from :meth:`to_dict` is
            turned into one).
        multimodal_train_inputs: a vision-language sample's processor outputs beyond the ids
            (slime's name): ``pixel_values`` ``[N_patches, C * T_patch * P * P]`` float32 (the
            images' patches, in the order their ``<|image_pad|>`` runs appear in ``tokens``) and
            ``image_grid_thw`` ``[N_images, 3]`` long (each image's temporal, height and width
            patch counts, ``N_patches = sum(t * h * w)``); None for a text sample. Nested lists
            (from :meth:`to_dict`) are turned into tensors. The trainer passes them to the model
            in every forward pass (policy, old and reference log-probs).

    Raises:
        ValueError: from ``__post_init__``/:meth:`validate` when any length or value is
            inconsistent (message names the field).

    Follows the record design of slime (THUDM/slime, ``slime/utils/types.py``).
    """

    tokens: list[int]
    response_length: int
    rollout_log_probs: list[float]
    loss_mask: list[int] | None = None
    reward: float | None = None
    status: SampleStatus = SampleStatus.PENDING
    weight_version: int = 0
    session_id: str = ""
    turn_id: str = ""
    turn_index: int = 0
    metadata: dict[str, Any] = field(default_factory=dict)
    source_id: int | None = None
    teacher_log_probs: list[float] | None = None
    teacher_topk_ids: list[list[int]] | None = None
    teacher_topk_log_probs: list[list[float]] | None = None
    advantages: list[float] | None = None
    prompt: str | list[dict[str, Any]] | None = None
    response: str = ""
    label: Any = None
    sampling_temperature: float | None = None
    sampling_top_p: float | None = None
    logprob_source: LogprobSource = LogprobSource.ENGINE
    multimodal_train_inputs: dict[str, Any] | None = None
    trajectory: Trajectory | None = None

    def __post_init__(self) -> None:
        if isinstance(self.trajectory, dict):
            known = {f.name for f in fields(Trajectory)}
            if set(self.trajectory) - known or "id" not in self.trajectory:
                raise ValueError(f"trajectory must have the fields {', '.join(sorted(known))} (id required), "
                                 f"got {', '.join(sorted(self.trajectory))}")
            self.trajectory = Trajectory(**self.trajectory)
        if self.multimodal_train_inputs is not None:
            self.multimodal_train_inputs = _multimodal_tensors(self.multimodal_train_inputs)
        self.tokens = [_as_int("tokens", i, t) for i, t in enumerate(self.tokens)]
        self.rollout_log_probs = [float(x) for x in self.rollout_log_probs]
        if self.loss_mask is None:
            self.loss_mask = [1] * int(self.response_length)
        else:
            self.loss_mask = [int(x) for x in self.loss_mask]
        if self.teacher_log_probs is not None:
            self.teacher_log_probs = [float(x) for x in self.teacher_log_probs]
        if self.teacher_topk_ids is not None:
            self.teacher_topk_ids = [[_as_int("teacher_topk_ids", i, t) for t in row]
                                     for i, row in enumerate(self.teacher_topk_ids)]
        if self.teacher_topk_log_probs is not None:
            self.teacher_topk_log_probs = [[float(x) for x in row] for row in self.teacher_topk_log_probs]
        if self.advantages is not None:
            self.advantages = [float(x) for x in self.advantages]
        if not isinstance(self.status, SampleStatus):
            try:
                self.status = SampleStatus(self.status)
            except ValueError:
                allowed = ", ".join(s.value for s in SampleStatus)
                raise ValueError(f"status must be one of {allowed}, got {self.status!r}") from None
        if not isinstance(self.logprob_source, LogprobSource):
            try:
                self.logprob_source = LogprobSource(self.logprob_source)
            except ValueError:
                allowed = ", ".join(s.value for s in LogprobSource)
                raise ValueError(f"logprob_source must be one of {allowed}, got {self.logprob_source!r}") from None
        if self.reward is not None:
            self.reward = float(self.reward)
        for name in ("sampling_temperature", "sampling_top_p"):
            if getattr(self, name) is not None:
                setattr(self, name, float(getattr(self, name)))
        self.validate()

    # ------------------------------------------------------------------ derived views
    @property
    def prompt_length(self) -> int:
        """Number of prompt tokens: ``len(tokens) - response_length``."""
        return len(self.tokens) - self.response_length

    @property
    def prompt_tokens(self) -> list[int]:
        """The prompt ids (a new list of length ``prompt_length``)."""
        return self.tokens[: self.prompt_length]

    @property
    def response_tokens(self) -> list[int]:
        """The response ids (a new list of length ``response_length``)."""
        return self.tokens[self.prompt_length :]

    @property
    def num_loss_tokens(self) -> int:
        """Number of response tokens with ``loss_mask == 1``."""
        return sum(self.loss_mask)  # type: ignore[arg-type]

    # ------------------------------------------------------------------ validation
    def validate(self) -> None:
        """Check all invariants; return ``None`` or raise ``ValueError`` naming the bad field.

        Call again after mutating a sample (e.g. after a plugin sets ``advantages``).
        """
        if isinstance(self.response_length, bool) or not isinstance(self.response_length, int):
            raise ValueError(f"response_length must be an int, got {self.response_length!r}")
        n = self.response_length
        if n < 0 or n > len(self.tokens):
            raise ValueError(f"response_length={n} must lie in [0, len(tokens)={len(self.tokens)}]")
        for i, t in enumerate(self.tokens):
            if isinstance(t, bool) or not isinstance(t, int) or t < 0:
                raise ValueError(f"tokens[{i}] must be a non-negative int, got {t!r}")
        if len(self.loss_mask) != n:  # type: ignore[arg-type]
            raise ValueError(f"len(loss_mask)={len(self.loss_mask)} != response_length={n}")  # type: ignore[arg-type]
        if any(m not in (0, 1) for m in self.loss_mask):  # type: ignore[union-attr]
            raise ValueError("loss_mask entries must be 0 or 1")
        if len(self.rollout_log_probs) != n:
            raise ValueError(f"len(rollout_log_probs)={len(self.rollout_log_probs)} != response_length={n}")
        _check_finite_floats("rollout_log_probs", self.rollout_log_probs)
        for name in ("teacher_log_probs", "advantages"):
            values = getattr(self, name)
            if values is None:
                continue
            if len(values) != n:
                raise ValueError(f"len({name})={len(values)} != response_length={n}")
            _check_finite_floats(name, values)
        self._validate_topk(n)
        if self.source_id is not None and (isinstance(self.source_id, bool) or not isinstance(self.source_id, int)):
            raise ValueError(f"source_id must be an int or None, got {self.source_id!r}")
        if self.reward is not None and not math.isfinite(self.reward):
            raise ValueError(f"reward must be finite or None, got {self.reward!r}")
        if isinstance(self.weight_version, bool) or not isinstance(self.weight_version, int) or self.weight_version < 0:
            raise ValueError(f"weight_version must be an int >= 0, got {self.weight_version!r}")
        if isinstance(self.turn_index, bool) or not isinstance(self.turn_index, int) or self.turn_index < 0:
            raise ValueError(f"turn_index must be an int >= 0, got {self.turn_index!r}")
        t, p = self.sampling_temperature, self.sampling_top_p
        if t is not None and not (math.isfinite(t) and t >= 0):
            raise ValueError(f"sampling_temperature must be a finite number >= 0 or None, got {t!r}")
        if p is not None and not (0 < p <= 1):
            raise ValueError(f"sampling_top_p must lie in (0, 1] or be None, got {p!r}")
        if not isinstance(self.metadata, dict):
            raise ValueError(f"metadata must be a dict, got {type(self.metadata).__name__}")
        if self.multimodal_train_inputs is not None:
            _validate_multimodal(self.multimodal_train_inputs)
        if self.trajectory is not None:
            if not isinstance(self.trajectory, Trajectory):
                raise ValueError(f"trajectory must be a Trajectory or None, got {type(self.trajectory).__name__}")
            self.trajectory.check_spans(n)

    def __eq__(self, other: object) -> bool:
        """Field-by-field equality (``multimodal_train_inputs`` tensors compared with
        ``torch.equal``: same dtype, shape and values)."""
        if other.__class__ is not self.__class__:
            return NotImplemented
        for f in fields(self):
            a, b = getattr(self, f.name), getattr(other, f.name)
            if f.name == "multimodal_train_inputs":
                if not _same_multimodal(a, b):
                    return False
            elif a != b:
                return False
        return True

    __hash__ = None  # mutable record, as a dataclass with eq=True

    def _validate_topk(self, n: int) -> None:
        ids, lps = self.teacher_topk_ids, self.teacher_topk_log_probs
        if ids is None and lps is None:
            return
        if ids is None or lps is None:
            raise ValueError("teacher_topk_ids and teacher_topk_log_probs must be set together")
        if len(ids) != n or len(lps) != n:
            raise ValueError(f"teacher top-K must have response_length={n} rows, got {len(ids)} and {len(lps)}")
        k = len(ids[0]) if ids else 0
        if any(len(r) != k for r in ids) or any(len(r) != k for r in lps) or (n and k < 1):
            raise ValueError("teacher top-K rows must all have the same K >= 1 ids and log-probs")
        for row in lps:
            _check_finite_floats("teacher_topk_log_probs", row)

    # ------------------------------------------------------------------ serialisation
    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-safe dict (lists of python ints/floats, ``status`` as its string value,
        ``multimodal_train_inputs`` tensors as nested lists, the key left out for a text sample).

        ``Sample.from_dict(s.to_dict()) == s`` holds for every valid sample.
        """
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, (SampleStatus, LogprobSource)):
                value = value.value
            elif f.name == "multimodal_train_inputs":
                if value is None:
                    continue  # a text sample's dict is what it was before images existed
                value = {k: v.tolist() for k, v in value.items()}
            elif f.name == "trajectory":
                if value is None:
                    continue  # likewise for a single-turn sample
                value = value.to_dict()
            elif isinstance(value, list):
                value = list(value)
            elif isinstance(value, dict):
                value = dict(value)
            out[f.name] = value
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Sample":
        """Build a sample from :meth:`to_dict` output.

        Raises:
            ValueError: on unknown keys, missing required keys (``tokens``, ``response_length``,
                ``rollout_log_probs``) or any invariant violation.
        """
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"unknown Sample fields: {', '.join(unknown)}")
        missing = [k for k in ("tokens", "response_length", "rollout_log_probs") if k not in data]
        if missing:
            raise ValueError(f"missing required Sample fields: {', '.join(missing)}")
        return cls(**data)
