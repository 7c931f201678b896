"""The person in control: explicit feedback, lessons and forgetting on the server's API.

* ``POST /v1/feedback`` ``{"id": "chatcmpl-..." | "turn_id": "<session>:<index>", "rating": 1 | -1,
  "correction": str?}`` rates a recorded main turn (the API key's endpoint, like chat
  completions); ``DELETE /v1/feedback/{id or turn id}`` undoes it (:mod:`openclaw_rl.capture.feedback`).
* ``GET /admin/feedback``: the ratings, newest first, with the judge's vote on each and the
  summary (counts, the judge's agreement with the ratings), also on ``/metrics``
  (``openclaw_feedback{kind=...}``, refreshed every few seconds from the store).
* ``GET /admin/lessons``, ``PATCH /admin/lessons/{id}`` ``{"text": str}``, ``DELETE /admin/lessons/{id}``
  (:mod:`openclaw_rl.capture.lessons`).
* ``POST /admin/forget`` ``{"session_id": str} | {"before": ISO date} | {"all": true}``, optional
  ``"rollback": true`` (:mod:`openclaw_rl.capture.forget`; the rollback is ``POST /admin/rollback``'s).

Errors are OpenAI-style JSON: 400 bad body or a turn that cannot be rated (a side turn), 404
unknown turn / no rating to undo / unknown lesson / unknown session, 503 when the store fails
(nothing recorded is lost: each change is one transaction).
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from collections.abc import Awaitable, Callable
from typing import Any

from fastapi import Depends, FastAPI, Request
from prometheus_client import Gauge
from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt

from openclaw_rl.capture.feedback import FeedbackBook, FeedbackNotFound, NotRateable, TurnNotFound, judge_vote
from openclaw_rl.capture.forget import forget, parse_before, select_sessions
from openclaw_rl.capture.lessons import LessonBook, LessonNotFound
from openclaw_rl.server.errors import APIError, parse_json_body

__all__ = ["FeedbackRequest", "ForgetRequest", "install_control_routes"]

log = logging.getLogger(__name__)

#: seconds between refreshes of the feedback summary /metrics shows
SUMMARY_REFRESH_S = 5.0


class FeedbackRequest(BaseModel):
    """Body of ``POST /v1/feedback``: the turn by ``id`` (chat completion id) or ``turn_id``, the
    ``rating`` (+1 / -1) and an optional ``correction`` (becomes the turn's hint)."""

    model_config = ConfigDict(extra="forbid")
    id: str | None = Field(None, min_length=1, max_length=256)
    turn_id: str | None = Field(None, min_length=1, max_length=512)
    rating: StrictInt
    correction: str | None = Field(None, max_length=8000)


class LessonEdit(BaseModel):
    """Body of ``PATCH /admin/lessons/{id}``."""

    model_config = ConfigDict(extra="forbid")
    text: str = Field(min_length=1, max_length=8000)


class ForgetRequest(BaseModel):
    """Body of ``POST /admin/forget``: exactly one of ``session_id``, ``before`` (ISO date), ``all``;
    ``rollback``: serve the last version trained before the forgotten turns again."""

    model_config = ConfigDict(extra="forbid")
    session_id: str | None = Field(None, min_length=1)
    before: str | None = None
    all: StrictBool = False
    rollback: StrictBool = False


async def _body(request: Request, model: type[BaseModel]) -> Any:
    """Parse and validate a JSON body (:func:`~openclaw_rl.server.errors.parse_json_body`); 400 otherwise."""
    return parse_json_body(await request.body(), model)


async def _store_call(fn: Callable, *args):
    """Run a store call off the event loop; the control layer's exceptions become API errors."""
    try:
        return await asyncio.to_thread(fn, *args)
    except TurnNotFound as exc:
        raise APIError(404, str(exc), param="id", code="turn_not_found") from exc
    except FeedbackNotFound as exc:
        raise APIError(404, str(exc), param="id", code="feedback_not_found") from exc
    except LessonNotFound as exc:
        raise APIError(404, str(exc), param="id", code="lesson_not_found") from exc
    except NotRateable as exc:
        raise APIError(400, str(exc), param="id", code="turn_not_rateable") from exc
    except LookupError as exc:
        raise APIError(404, str(exc), code="not_found") from exc
    except ValueError as exc:
        raise APIError(400, str(exc), code="invalid_value") from exc
    except (sqlite3.Error, OSError) as exc:
        raise APIError(503, f"the trajectory store failed: {exc}", type_="server_error",
                       code="store_unavailable") from exc


class FeedbackSummary:
    """The feedback summary in memory (``/metrics`` never reads the store), refreshed in the
    background every :data:`SUMMARY_REFRESH_S` seconds and after each rating."""

    def __init__(self, book: FeedbackBook, registry):
        self.book = book
        self.values: dict[str, float] = {}
        self.gauge = Gauge("openclaw_feedback", "explicit feedback: ratings (total, positive, negative, "
                           "corrections, applied, after_training) and the judge's agreement with them "
                           "(judge_agree, judge_disagree, judge_abstained, judge_agreement; -1: none yet)",
                           ["kind"], registry=registry)

    def refresh(self, background: bool = False) -> dict[str, float]:
        """Read the summary from the store (in a worker thread); a failing store keeps the old one.
        ``background``: the periodic refresh, which never reopens a connection a failed write
        dropped (:meth:`openclaw_rl.capture.store.TrajectoryStore.read`)."""
        try:
            self.values = self.book.summary(reopen=not background)
        except (sqlite3.Error, OSError) as exc:
            log.debug("feedback summary: the store failed (%s)", exc)
        return self.values

    def export(self) -> None:
        """Set the gauges from the last summary."""
        for kind, value in self.values.items():
            self.gauge.labels(kind).set(value)

    async def refresh_forever(self) -> None:
        """Background task of the app's lifespan."""
        while True:
            await asyncio.to_thread(self.refresh, True)
            await asyncio.sleep(SUMMARY_REFRESH_S)


def install_control_routes(app: FastAPI, store, check_key, check_admin, registry,
                           roll_back: Callable[[int], Awaitable[int]], serving: Callable[[], int],
                           lesson_prompt=None, log_dirs: tuple[str, ...] = ()) -> FeedbackSummary:
    """Add the feedback, lessons and forget endpoints (module docstring) to ``app``.

    Args:
        app: the server's app. store: its trajectory store. check_key / check_admin: the API-key
        and admin dependencies. registry: the Prometheus registry of ``/metrics``. roll_back:
        ``await roll_back(version) -> served version`` (``POST /admin/rollback``'s work).
        serving: the weight version served now. lesson_prompt: the server's
        :class:`openclaw_rl.capture.lessons.LessonPrompt` (``--inject-lessons``), refreshed when a
        lesson is edited or deleted here; None without it. log_dirs: the run's log folders, whose
        log files lose a forgotten conversation's lines too (``--run-log-dir``).

    Returns:
        The :class:`FeedbackSummary` (the app runs its ``refresh_forever`` and exports it on
        ``/metrics``).
    """
    feedback, lessons = FeedbackBook(store), LessonBook(store)
    summary = FeedbackSummary(feedback, registry)

    @app.post("/v1/feedback", dependencies=[Depends(check_key)])
    async def rate(request: Request):
        """Rate a turn (module docstring); a second rating of the same turn replaces the first."""
        body = await _body(request, FeedbackRequest)
        ref = body.id or body.turn_id
        if not ref or (body.id and body.turn_id):
            raise APIError(400, "give the turn as exactly one of 'id' (the chat completion id) or 'turn_id'",
                           param="id", code="invalid_value")
        if body.rating not in (1, -1):
            raise APIError(400, f"rating must be 1 or -1, got {body.rating}", param="rating", code="invalid_value")
        fb, note = await _store_call(feedback.rate, ref, body.rating, body.correction)
        await asyncio.to_thread(summary.refresh)
        return fb.to_json(judge_vote(await _store_call(store.judgement, fb.turn_id)), note)

    @app.delete("/v1/feedback/{ref:path}", dependencies=[Depends(check_key)])
    async def undo(ref: str):
        """Undo a turn's rating; 404 when it has none (a second undo too)."""
        old = await _store_call(feedback.undo, ref)
        await asyncio.to_thread(summary.refresh)
        out = {**old.to_json(), "deleted": True}
        if old.applied_step is not None:
            out["note"] = (f"the rating was already used in train step {old.applied_step}; the weights trained "
                           "then keep it (roll back to undo that)")
        return out

    @app.get("/admin/feedback", dependencies=[Depends(check_admin)])
    async def list_feedback(limit: int = 100):
        """The newest ratings with the judge's vote on each, and the summary."""
        rows = await _store_call(feedback.list, max(1, min(limit, 10000)))
        values = await asyncio.to_thread(summary.refresh)
        return {"object": "list", "summary": values, "data": [fb.to_json(vote) for fb, vote in rows]}

    @app.get("/admin/lessons", dependencies=[Depends(check_admin)])
    async def list_lessons():
        """The live lessons, most source turns first."""
        return {"object": "list", "data": [x.to_json() for x in await _store_call(lessons.list)]}

    @app.patch("/admin/lessons/{lesson_id}", dependencies=[Depends(check_admin)])
    async def edit_lesson(lesson_id: int, request: Request):
        """Replace a lesson's text."""
        body = await _body(request, LessonEdit)
        out = (await _store_call(lessons.edit, lesson_id, body.text)).to_json()
        if lesson_prompt is not None:
            lesson_prompt.refresh()
        return out

    @app.delete("/admin/lessons/{lesson_id}", dependencies=[Depends(check_admin)])
    async def delete_lesson(lesson_id: int):
        """Delete a lesson (no longer a hint); 404 for an unknown or already deleted one."""
        await _store_call(lessons.delete, lesson_id)
        if lesson_prompt is not None:
            lesson_prompt.refresh()
        return {"object": "lesson", "id": lesson_id, "deleted": True}

    @app.post("/admin/forget", dependencies=[Depends(check_admin)])
    async def forget_sessions(request: Request):
        """Forget sessions (module docstring); with ``rollback`` serve ``rollback_to`` again when
        the served version was trained on them."""
        body = await _body(request, ForgetRequest)
        before = None
        if body.before is not None:
            try:
                before = parse_before(body.before)
            except ValueError as exc:
                raise APIError(400, str(exc), param="before", code="invalid_value") from exc
        sessions = await _store_call(select_sessions, store, body.session_id, before, body.all)
        report = await _store_call(forget, store, sessions, log_dirs)
        await asyncio.to_thread(summary.refresh)
        if lesson_prompt is not None:
            lesson_prompt.refresh()
        if body.rollback and serving() in report.versions_trained_on and report.rollback_to is not None:
            report.rolled_back = await roll_back(report.rollback_to)
        return report.to_json()

    return summary
