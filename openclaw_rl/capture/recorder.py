"""Capture glue between the server and the store (``--enable-rl-intercept``).

Per request, three steps:

* :meth:`Recorder.attribute`, once the messages are validated: finds the request's session and
  the recorded turn whose reply it continues (the server then re-uses that turn's ids, see
  :mod:`openclaw_rl.server.continuation`); nothing is written;
* :meth:`Recorder.link`, once the prompt ids are final: links the previous main turn's next
  state (that turn becomes ready for judging at once) and checks token continuity against it;
* :meth:`Recorder.record`, when generation finishes and *before* the response ends: commits the
  turn. A request that fails validation never reaches either step, so bad input never touches
  the buffer.

A failing store (disk full, read-only, I/O errors) never fails a request: each step then does
without the store (no continuation found, no link, the turn not recorded) and the failure is
counted and logged by :class:`openclaw_rl.capture.failures.CaptureFailures`.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass
from typing import Mapping, Sequence

from openclaw_rl.capture.failures import CAPTURE_ERRORS, CaptureFailures
from openclaw_rl.capture.sessions import Attribution, attribute, extract_next_state, reply_fingerprint
from openclaw_rl.capture.store import AWAITING_NEXT, ForgottenSession, TrajectoryStore, TurnRecord, TurnType
from openclaw_rl.capture.turn_rules import TurnRules

log = logging.getLogger(__name__)


@dataclass
class Continuity:
    """Token continuity of a main turn with the previous main turn of its session.

    ``ok`` is None for a session's first turn; ``break_at`` is the first prompt position where
    the new prompt differs from previous prompt + previous response.
    """

    ok: bool | None = None
    break_at: int | None = None


def check_prefix(prev_prompt: Sequence[int], prev_response: Sequence[int],
                 prompt: Sequence[int]) -> Continuity:
    """Does ``prompt`` start with ``prev_prompt + prev_response``? (Token in, token out.)"""
    expected = list(prev_prompt) + list(prev_response)
    for i, tok in enumerate(expected):
        if i >= len(prompt) or prompt[i] != tok:
            return Continuity(ok=False, break_at=i)
    return Continuity(ok=True)


class Recorder:
    """Records served turns into a :class:`TrajectoryStore`.

    Args:
        store: the trajectory store.
        rules: side-turn and context rules.
        idle_timeout: seconds without a request after which a session ends and its last turn is
            finalised without a next state.
        failures: where store failures are counted and logged (default: a private counter).
    """

    def __init__(self, store: TrajectoryStore, rules: TurnRules, idle_timeout: float = 600.0,
                 failures: CaptureFailures | None = None):
        self.store, self.rules, self.idle_timeout = store, rules, idle_timeout
        self.failures = failures or CaptureFailures()

    def _lookup(self, fingerprints):
        try:
            return self.store.lookup_continuation(fingerprints)
        except CAPTURE_ERRORS as exc:
            self.failures.failed("attribute", exc)
            return None

    async def attribute(self, messages: list[dict], body: Mapping,
                        headers: Mapping[str, str]) -> tuple[Attribution, TurnRecord | None]:
        """Attribute a validated request (changes nothing in the store).

        Returns:
            ``(attribution, continued)``: ``continued`` is the recorded turn of the same session
            whose reply the request extends (its reply is ``messages[attr.next_state_from - 1]``),
            or None.
        """
        attr = await asyncio.to_thread(attribute, messages, body, headers, self.rules, self._lookup)
        continued = None
        if attr.continued_turn_id is not None:
            try:
                continued = await asyncio.to_thread(self.store.get_turn, attr.continued_turn_id)
            except CAPTURE_ERRORS as exc:
                self.failures.failed("attribute", exc)
        return attr, continued

    async def link(self, attr: Attribution, messages: list[dict], prompt_ids: Sequence[int]) -> Continuity:
        """Link the previous main turn's next state and check token continuity against it (for a
        main turn, and for a side request that closes the session with ``X-Session-Done``: a
        client's last reaction is the next state of the session's last reply). A store failure
        is counted and gives ``Continuity()`` (unknown)."""
        try:
            if attr.turn_type == TurnType.MAIN:
                return await asyncio.to_thread(self._link_previous, attr, messages, prompt_ids)
            if attr.done:  # a closing side request still carries the reaction to the session's last reply
                await asyncio.to_thread(self._link_previous, attr, messages, prompt_ids)
        except CAPTURE_ERRORS as exc:
            self.failures.failed("link", exc)
        return Continuity()

    async def begin(self, messages: list[dict], body: Mapping, headers: Mapping[str, str],
                    prompt_ids: Sequence[int]) -> tuple[Attribution, Continuity]:
        """:meth:`attribute` then :meth:`link` (for callers that do not splice prompts)."""
        attr, _ = await self.attribute(messages, body, headers)
        return attr, await self.link(attr, messages, prompt_ids)

    def _link_previous(self, attr: Attribution, messages, prompt_ids) -> Continuity:
        prev = self.store.last_main_turn(attr.session_id)
        if prev is None:
            return Continuity()
        if prev.status == AWAITING_NEXT:
            start = attr.next_state_from if attr.continued_turn_id == prev.id else None
            text, role = extract_next_state(messages, start, self.rules)
            if text is None:
                self.store.finalize_turn(prev.id)
            else:
                self.store.set_next_state(prev.id, text, role)
        return check_prefix(prev.prompt_ids, prev.response_ids, prompt_ids)

    async def record(self, attr: Attribution, cont: Continuity, rec: TurnRecord,
                     reply: Mapping, started_at: float | None = None) -> TurnRecord | None:
        """Commit a finished turn (durable on return); closes the session if the client said so.

        ``started_at``: when the request started (UNIX seconds); a turn of a session forgotten
        since then is not recorded (:mod:`openclaw_rl.capture.forget`).

        Returns:
            The saved record, or None when the store failed (counted and logged; the caller
            serves the reply anyway) or the session was forgotten meanwhile.
        """
        rec.session_id, rec.turn_type, rec.side_reason = attr.session_id, attr.turn_type, attr.side_reason
        rec.prefix_ok, rec.prefix_break_at = cont.ok, cont.break_at
        fingerprint = reply_fingerprint(rec.messages, reply)

        def commit() -> TurnRecord:
            self.store.touch_session(attr.session_id, attr.source, started_at=started_at)
            saved = self.store.add_turn(rec, fingerprint=fingerprint, started_at=started_at)
            if attr.done:
                self.store.close_session(attr.session_id)
            return saved

        try:
            saved = await asyncio.to_thread(commit)
        except ForgottenSession as exc:
            log.info("%s", exc)
            return None
        except CAPTURE_ERRORS as exc:
            self.failures.failed("record", exc)
            return None
        self.failures.succeeded()
        return saved

    async def sweep_idle_forever(self, interval: float | None = None) -> None:
        """Background task: finalise sessions idle longer than ``idle_timeout``."""
        interval = interval or max(0.05, min(30.0, self.idle_timeout / 4))
        while True:
            await asyncio.sleep(interval)
            try:
                closed = await asyncio.to_thread(self.store.finalize_idle, self.idle_timeout, time.time())
                if closed:
                    log.info("closed %d idle session(s)", len(closed))
            except CAPTURE_ERRORS as exc:  # a failing disk: counted, logged once a minute
                self.failures.failed("sweep", exc)
            except Exception:  # never let the sweeper die
                log.exception("idle sweep failed")
