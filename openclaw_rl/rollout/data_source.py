"""The trainer's view of the trajectory store: judged turns in, samples out.

:class:`StoreDataSource` is the ``data_source`` handed to the rollout function (slime's
``generate_rollout(args, rollout_id, data_source, evaluation=False)``). It waits until enough
trainable judged turns exist, claims them (``judged -> claimed``), drops samples staler than
``--max-staleness`` weight versions (counted, never trained), and marks trained turns after the
step. The backlog waits on disk in SQLite, not in memory.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter

from openclaw_rl.capture.images import ImageRecordError
from openclaw_rl.capture.store import AWAITING_NEXT, JUDGED, JUDGING, READY, TrajectoryStore
from openclaw_rl.rollout.feedback import PersonOverrides
from openclaw_rl.rollout.samples import UntokenizedTurnError, turn_to_sample
from slime.record.sample import Sample

log = logging.getLogger(__name__)


class RolloutTimeout(TimeoutError):
    """Not enough judged turns arrived in time."""


class TrafficEnded(RolloutTimeout):
    """The run's live traffic ended (:meth:`TrajectoryStore.end_live_traffic`) and no recorded turn
    is left that could still become a sample: waiting longer cannot fill the batch."""


class DataSourceClosed(RuntimeError):
    """The data source was closed while a rollout waited (the run is shutting down)."""


class StoreDataSource:
    """Draws training samples from a :class:`TrajectoryStore`.

    Args:
        store: the store.
        max_staleness: drop samples whose ``weight_version`` is more than this many versions
            behind the trainer (None: keep all).
        poll_s: polling period while waiting.
        prepare: optional callable run on each batch of claimed turns before they become samples
            (the service gives turns imported as text their ids there); returns the turns.
        finite: offline data (nothing new arrives): :meth:`take` returns a short batch, possibly
            empty, once no turn is left that could still be judged trainable.
        holdout_every: every judged turn whose id is a multiple of this (and whose reward is not
            0) is held out of training for the promotion gate (``held_out``; 0: none).
        tokenizer: callable returning the policy's tokenizer, to render a person's correction or
            an edited lesson as a teacher prompt (:class:`openclaw_rl.rollout.feedback.PersonOverrides`).
        history_only: take only the history turns a run queued (``--history-only``,
            :mod:`openclaw_rl.rollout.history`); with ``finite`` the data ends when they are used up.
        newest_first: take the newest judged live turns first (``--sample-order newest``): the
            samples closest to the policy being trained. Before each claim, live turns that fell more
            than ``max_staleness`` versions behind are claimed and handled as oldest-first handles them
            when they come up: held out for the gate (``holdout_every``) or dropped as stale. Not with
            ``history_only`` (live turns are left for a later run).

    History turns (``history_rank`` set) come first, the most recent first, and are never dropped
    as stale: ``max_staleness`` bounds live turns (their ``metadata["history"]`` is True).

    A person's explicit rating overrides the judge's reward, and lessons they edited or deleted
    change the turn's hint (:mod:`openclaw_rl.rollout.feedback`); a rated turn is never held out.

    ``health_check``: optional callable run on every poll of :meth:`take`; what it raises (e.g.
    :class:`slime.plugins.failures.PluginFailureError` when too many judgements of a step failed)
    ends the wait and the run.
    """

    def __init__(self, store: TrajectoryStore, max_staleness: int | None = None, poll_s: float = 0.2,
                 prepare=None, finite: bool = False, processor=None, holdout_every: int = 0, tokenizer=None,
                 history_only: bool = False, newest_first: bool = False):
        self.store, self.max_staleness, self.poll_s = store, max_staleness, poll_s
        self.newest_first = newest_first
        self.overrides = PersonOverrides(store, tokenizer)
        self.holdout_every = holdout_every
        self.processor = processor  # a vision-language policy's processor: turns with images
        self.prepare, self.finite, self.history_only = prepare, finite, history_only
        self.health_check = None
        self.current_version = 0
        self.stats: Counter = Counter()
        self._closed = threading.Event()

    def close(self) -> None:
        """Wake up and fail any waiting :meth:`take` (claimed samples go back to the queue)."""
        self._closed.set()

    def backlog(self) -> dict[str, int]:
        """Turns waiting per stage: ``unjudged`` (ready) and ``judged`` (trainable, unclaimed)."""
        c = self.store.counts()
        return {"unjudged": c.get(READY, 0), "judged": c.get(JUDGED, 0)}

    def take(self, n: int, timeout_s: float | None = None, progress=None) -> list[Sample]:
        """Claim ``n`` trainable samples, waiting for the judges if needed.

        Args:
            n: number of samples.
            timeout_s: give up after this long (None: wait forever).
            progress: optional callable ``(have, n)`` for a progress bar.

        Returns:
            Samples with ``reward`` and ``source_id`` (the store's row id) set; stale ones are dropped and
            replaced.

            With ``finite`` (offline data) fewer, possibly none, once the data is used up.

        Raises:
            RolloutTimeout: fewer than ``n`` arrived within ``timeout_s`` (claimed ones are
                returned to the queue first); :class:`TrafficEnded` (a subclass) at once when the
                live traffic ended and no recorded turn is left to become a sample.
        """
        deadline = None if timeout_s is None else time.time() + timeout_s
        out: list[Sample] = []
        while len(out) < n:
            if self.newest_first and self.max_staleness is not None and not self.history_only:
                # live turns that fell behind go where oldest-first sends them: held out for the gate or dropped
                behind = self.store.claim_judged_ids(
                    self.store.judged_live_before(self.current_version - self.max_staleness))
                for turn in self.prepare(behind) if self.prepare and behind else behind:
                    self._admit(turn)  # stale, so never a sample
            claimed = self.store.claim_judged(n - len(out), history_only=self.history_only,
                                              newest_first=self.newest_first)
            for turn in self.prepare(claimed) if self.prepare and claimed else claimed:
                sample = self._admit(turn)
                if sample is not None:
                    out.append(sample)
            if progress:
                progress(len(out), n)
            if self.health_check is not None:
                try:
                    self.health_check()
                except Exception:
                    self.release(out)
                    raise
            if len(out) < n and self.finite and self.exhausted():
                self.stats["short_batches"] += 1
                log.info("offline data used up: a batch of %d instead of %d", len(out), n)
                return out
            if len(out) < n:
                if self._closed.is_set():
                    self.release(out)
                    raise DataSourceClosed("the run is shutting down")
                if not self.finite and self.store.live_traffic_ended() and self.exhausted():
                    self.release(out)
                    raise TrafficEnded(f"the live traffic ended: only {len(out)} of {n} judged samples "
                                       f"and none left to judge")
                if deadline is not None and time.time() > deadline:
                    self.release(out)
                    raise RolloutTimeout(f"only {len(out)} of {n} judged samples after {timeout_s:.0f}s "
                                         f"(backlog {self.backlog()})")
                self._closed.wait(self.poll_s)
        return out

    def _admit(self, turn) -> Sample | None:
        """One claimed turn as a training sample, or None when it is held out for the promotion gate
        (every ``holdout_every``-th judged turn with a reward, unless a person rated it), cannot be
        tokenised or is stale (more than ``max_staleness`` versions behind; history turns never are)."""
        judgement = self.store.judgement(turn.id) or {}
        reward, details, rated = self.overrides.apply(turn, judgement.get("reward"), judgement.get("details"))
        try:
            sample = turn_to_sample(turn, reward, True, self.processor)
        except (UntokenizedTurnError, ImageRecordError) as exc:
            log.warning("dropping %s", exc)
            self._drop(turn.id, "untokenized")
            return None
        if self.holdout_every and sample.reward and not rated and turn.id % self.holdout_every == 0:
            self.store.hold_out([turn.id])  # the promotion gate's, never trained
            self.stats["held_out"] += 1
            return None
        staleness = self.current_version - sample.weight_version
        history = turn.history_rank is not None
        if self.max_staleness is not None and staleness > self.max_staleness and not history:
            self._drop(turn.id, "stale")
            return None
        sample.metadata["staleness"] = staleness
        sample.metadata["judgement"] = details
        sample.metadata["history"] = history
        if rated:
            sample.metadata["explicit_rating"] = int(reward)
            self.stats["explicit_ratings"] += 1
        return sample

    def exhausted(self) -> bool:
        """No turn (``history_only``: no history turn) is waiting to be judged, being judged or
        judged and unclaimed."""
        c = self.store.counts(history_only=self.history_only)
        return not (c.get(READY, 0) or c.get(JUDGING, 0) or c.get(JUDGED, 0) or c.get(AWAITING_NEXT, 0))

    def _drop(self, turn_id: int, reason: str) -> None:
        self.stats[f"dropped_{reason}"] += 1
        self.store.save_judgement(turn_id, f"dropped:{reason}", None, False, {"dropped": reason}, final=True)

    def release(self, samples: list[Sample]) -> None:
        """Give claimed samples back (e.g. the step failed); samples not from the store are ignored."""
        self.store.recover_claims([s.source_id for s in samples if s.source_id is not None])

    def mark_trained(self, samples: list[Sample], step: int) -> None:
        """The samples were used in train step ``step`` (samples not from the store are ignored)."""
        self.store.mark_trained([s.source_id for s in samples if s.source_id is not None], step)
        rated = [s.source_id for s in samples if s.source_id is not None and "explicit_rating" in s.metadata]
        if rated:
            self.overrides.feedback.mark_applied(rated, step)
        self.stats["trained"] += len(samples)
