"""The main job's simulated user: talks to the server through the ``openai`` SDK while training runs.

One session per training question: the question with the stated preference, the policy's reply,
the user's reaction (a correction or a praise, see :class:`openclaw_rl.preferences.Preference`;
a reply that leaves the question gets "You didn't answer my question." like any other miss),
a second reply, and the reaction to that one too. The last reaction is sent as the session's
closing request (``X-Session-Done: true``, a side turn of one token), so every main turn gets a
next state and none is left unjudgeable. The user knows whether each reply met its preference;
that truth is logged per turn (never shown to the judges) so the run can measure the judge.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass

from openclaw_rl.main_job.heldout import SYSTEM, user_message
from openclaw_rl.main_job.questions import Question
from openclaw_rl.preferences import Preference

__all__ = ["TruthRecord", "UserDriver"]


@dataclass(frozen=True)
class TruthRecord:
    """What the user saw in one main turn: session, turn index in the session, the reply text,
    whether it met the preference, the reaction sent back, and whether the reply ended on the
    token budget (finish reason ``length``; the user rejects such a reply as cut off)."""

    session_id: str
    index: int
    reply: str
    satisfied: bool
    reaction: str
    cut: bool = False


class UserDriver:
    """``concurrency`` user threads taking training questions in turn until :meth:`stop`.

    Args:
        base_url / api_key: the server root (no ``/v1``) and its key.
        questions: training questions (cycled). preference: the user's preference.
        max_tokens: reply budget. turns: main turns per session. concurrency: user threads.
        session_prefix: session ids are this plus a counter (the history's earlier sessions get
            their own, so a live session never joins one).
        limit: the threads end once sessions ``0 .. limit-1`` were taken (None: run until :meth:`stop`).
        before_session: called with the session number before it starts (the personalization
            benchmark paces sessions to the trainer with it); None: start at once.
    """

    def __init__(self, base_url: str, api_key: str, questions: list[Question], preference: Preference,
                 max_tokens: int, turns: int = 2, concurrency: int = 2, model: str = "policy",
                 session_prefix: str = "user-", limit: int | None = None,
                 before_session: Callable[[int], None] | None = None):
        self.base_url, self.api_key, self.model = base_url, api_key, model
        self.session_prefix = session_prefix
        self.limit, self.before_session = limit, before_session
        self.questions, self.preference = questions, preference
        self.max_tokens, self.turns = max_tokens, turns
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._next = 0
        self.truth: list[TruthRecord] = []
        self.sessions = self.requests = self.failed = 0
        self._threads = [threading.Thread(target=self._run, daemon=True, name=f"simulated-user-{k}")
                         for k in range(max(1, concurrency))]

    def start(self) -> "UserDriver":
        """Start the user threads; returns self."""
        for t in self._threads:
            t.start()
        return self

    def stop(self, timeout: float = 900) -> None:
        """Finish the sessions in progress and wait for the threads."""
        self._stop.set()
        for t in self._threads:
            t.join(timeout)

    def join(self, timeout: float | None = None) -> None:
        """Wait for the threads to end by themselves (with ``limit``: after the last session)."""
        for t in self._threads:
            t.join(timeout)

    def running(self) -> bool:
        """Whether any user thread is still talking."""
        return any(t.is_alive() for t in self._threads)

    def _take(self) -> tuple[int, Question] | None:
        with self._lock:
            i = self._next
            if self.limit is not None and i >= self.limit:
                return None
            self._next += 1
        if self.before_session is not None:
            self.before_session(i)
        return i, self.questions[i % len(self.questions)]

    def _run(self) -> None:
        import openai

        client = openai.OpenAI(base_url=self.base_url + "/v1", api_key=self.api_key, max_retries=0, timeout=900)
        while not self._stop.is_set():
            taken = self._take()
            if taken is None:
                return
            i, q = taken
            sid = f"{self.session_prefix}{i}"
            messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user_message(q, self.preference)}]
            try:
                for k in range(self.turns):
                    stream = client.chat.completions.create(model=self.model, messages=messages, stream=True,
                                                            max_tokens=self.max_tokens,
                                                            extra_headers={"X-Session-Id": sid})
                    parts, finish = [], None
                    for c in stream:
                        if c.choices:
                            parts.append(c.choices[0].delta.content or "")
                            finish = c.choices[0].finish_reason or finish
                    reply, cut = "".join(parts), finish == "length"
                    reaction = self.preference.feedback(reply, key=f"{sid}:{k}", question=q.text, cut=cut)
                    with self._lock:
                        self.requests += 1
                        self.truth.append(TruthRecord(sid, k, reply, self.preference.satisfied(reply, q.text, cut=cut),
                                                      reaction, cut))
                    messages += [{"role": "assistant", "content": reply}, {"role": "user", "content": reaction}]
                # the closing request carries the reaction to the last reply (its own reply is a side turn)
                client.chat.completions.create(model=self.model, messages=messages, max_tokens=1,
                                               extra_headers={"X-Session-Id": sid, "X-Turn-Type": "side",
                                                              "X-Session-Done": "true"})
            except openai.OpenAIError as exc:
                with self._lock:
                    self.failed += 1
                print(f"simulated user: request failed: {exc}", file=sys.stderr)
            with self._lock:
                self.sessions += 1
