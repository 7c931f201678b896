"""Error responses: OpenAI's shape (``{"error": {"message", "type", "param", "code"}}``) on every
endpoint except the Anthropic Messages API's (``/v1/messages``), which gets Anthropic's
(``{"type": "error", "error": {"type", "message"}}``,
https://docs.anthropic.com/en/api/errors), so each client's SDK raises its own typed error.
"""

from __future__ import annotations

import json
import logging
from typing import Any, AsyncIterator, TypeVar

from fastapi import Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException


class APIError(Exception):
    """An error returned to the client with an HTTP status and OpenAI error fields."""

    def __init__(self, status: int, message: str, type_: str = "invalid_request_error",
                 param: str | None = None, code: str | None = None, headers: dict[str, str] | None = None):
        super().__init__(message)
        self.status, self.message, self.type, self.param, self.code = status, message, type_, param, code
        self.headers = headers or {}


def error_body(message: str, type_: str = "invalid_request_error", param: str | None = None,
               code: str | None = None) -> dict:
    """The JSON body of an OpenAI error."""
    return {"error": {"message": message, "type": type_, "param": param, "code": code}}


#: the endpoints this server serves (named by the 404 of an unknown path)
ENDPOINTS = ("POST /v1/chat/completions", "POST /v1/responses", "GET /v1/responses/{id}", "POST /v1/messages",
             "GET /v1/models")
#: paths whose errors take Anthropic's shape
ANTHROPIC_PATHS = ("/v1/messages",)
#: Anthropic's error type per HTTP status (https://docs.anthropic.com/en/api/errors)
_ANTHROPIC_TYPES = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
                    404: "not_found_error", 413: "request_too_large", 429: "rate_limit_error",
                    500: "api_error", 503: "overloaded_error", 529: "overloaded_error"}


def anthropic_error_body(status: int, message: str) -> dict:
    """The JSON body of an Anthropic API error for HTTP ``status``."""
    type_ = _ANTHROPIC_TYPES.get(status, "invalid_request_error" if status < 500 else "api_error")
    return {"type": "error", "error": {"type": type_, "message": message}}


def error_response(request: Request, status: int, message: str, type_: str = "invalid_request_error",
                   param: str | None = None, code: str | None = None,
                   headers: dict[str, str] | None = None) -> JSONResponse:
    """The error response in the shape of the API the request's path belongs to."""
    if request.url.path in ANTHROPIC_PATHS:
        body = anthropic_error_body(status, message)
    else:
        body = error_body(message, type_, param, code)
    return JSONResponse(body, status_code=status, headers=headers or None)


class ClientDisconnected(Exception):
    """The client went away before a non-streamed reply was ready (nothing is recorded)."""


class UnexpectedErrorMiddleware:
    """ASGI middleware: an unexpected error before the response started becomes a 500 error JSON
    (:class:`ClientDisconnected` a 499) *without* re-raising, so uvicorn keeps the connection alive
    (Starlette's own handler re-raises after its 500). An error after the response started (a
    stream cut mid-way) is re-raised: uvicorn logs it and closes the connection.

    A plain ASGI middleware rather than ``@app.middleware("http")``: Starlette's
    ``BaseHTTPMiddleware`` passes every chunk of a streamed response through an extra memory
    stream and task, a per-token cost on every SSE stream
    (https://www.starlette.io/middleware/#limitations).

    Args:
        app: the ASGI app.
        log: where unexpected errors are logged (with their traceback).
    """

    def __init__(self, app: Any, log: logging.Logger):
        self.app, self.log = app, log

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        started = False

        async def tracked_send(message):
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, receive, tracked_send)
        except ClientDisconnected:
            if started:
                raise
            await self._error(send, 499, error_body("client disconnected", "invalid_request_error"))
        except Exception as exc:
            if started:
                raise
            self.log.exception("unhandled error")
            await self._error(send, 500, error_body(f"internal error: {exc}", "server_error"))

    @staticmethod
    async def _error(send, status: int, body: dict) -> None:
        data = json.dumps(body).encode()
        await send({"type": "http.response.start", "status": status,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())]})
        await send({"type": "http.response.body", "body": data})


async def until_disconnect(events: AsyncIterator, request: Request | None, every: int = 8) -> AsyncIterator:
    """Yield ``events`` (a non-streamed reply being generated), checking every ``every`` events
    whether the client is still there.

    Raises:
        ClientDisconnected: the client left; generation is stopped before the turn is recorded.
    """
    n = 0
    async for event in events:
        n += 1
        if request is not None and n % every == 0 and await request.is_disconnected():
            await events.aclose()
            raise ClientDisconnected()
        yield event


def _loc_to_param(loc) -> str | None:
    parts = [str(p) for p in loc if p not in ("body",)]
    return ".".join(parts) or None


def validation_message(errors: list[dict]) -> tuple[str, str | None]:
    """One-line message and ``param`` for a list of pydantic errors."""
    first = errors[0] if errors else {}
    param = _loc_to_param(first.get("loc", ()))
    msg = first.get("msg", "invalid request")
    if len(errors) > 1:
        msg += f" (and {len(errors) - 1} more problem(s))"
    return (f"{param}: {msg}" if param else msg), param


async def api_error_handler(request: Request, exc: APIError) -> JSONResponse:
    return error_response(request, exc.status, exc.message, exc.type, exc.param, exc.code, exc.headers)


async def validation_error_handler(request: Request, exc: RequestValidationError) -> JSONResponse:
    errors = exc.errors()
    first = errors[0] if errors else {}
    if first.get("type") == "json_invalid":
        return error_response(request, 400, f"request body is not valid JSON: {first.get('msg')}",
                              code="invalid_json")
    msg, param = validation_message(errors)
    return error_response(request, 400, msg, param=param, code="invalid_value")


async def http_error_handler(request: Request, exc: StarletteHTTPException) -> JSONResponse:
    type_ = "invalid_request_error" if exc.status_code < 500 else "server_error"
    message, code = str(exc.detail), None
    if exc.status_code in (404, 405) and exc.detail in ("Not Found", "Method Not Allowed"):
        # no such route: name the ones there are (a client pointed at the wrong path learns it)
        message = (f"{request.method} {request.url.path} is not an endpoint of this server; it serves "
                   f"{', '.join(ENDPOINTS)}")
        code = "unknown_url" if exc.status_code == 404 else "method_not_allowed"
    return error_response(request, exc.status_code, message, type_, code=code,
                          headers=getattr(exc, "headers", None))


def install_error_handlers(app) -> None:
    """Register the handlers on a FastAPI app (unexpected errors are turned into a 500 by the
    app's middleware, which, unlike Starlette's handler, does not re-raise)."""
    app.add_exception_handler(APIError, api_error_handler)
    app.add_exception_handler(RequestValidationError, validation_error_handler)
    app.add_exception_handler(StarletteHTTPException, http_error_handler)


M = TypeVar("M", bound=BaseModel)


def load_json_object(raw: bytes) -> dict:
    """Parse a request body as a JSON object.

    Raises:
        APIError: 400 ``invalid_json`` for a body that is not JSON, nested too deeply or not an
            object.
    """
    try:
        body = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise APIError(400, f"request body is not valid JSON: {exc}", code="invalid_json") from exc
    except RecursionError as exc:
        raise APIError(400, "request body is nested too deeply", code="invalid_json") from exc
    if not isinstance(body, dict):
        raise APIError(400, "request body must be a JSON object", code="invalid_json")
    return body


def parse_json_body(raw: bytes, model: type[M]) -> M:
    """Parse a request body as JSON and validate it as ``model``.

    Raises:
        APIError: 400 ``invalid_json`` for a body that is not JSON, nested too deeply or not an
            object; 400 ``invalid_value`` naming the first problem when validation fails.
    """
    body = load_json_object(raw)
    try:
        return model.model_validate(body)
    except ValidationError as exc:
        message, param = validation_message(exc.errors())
        raise APIError(400, message, param=param, code="invalid_value") from exc


def _union_branch(part) -> bool:
    """A pydantic union-branch tag in an error location (``list[InputItem]``, ``TextBlock``,
    ``str``), as opposed to a field name or list index (field names here are lower-case)."""
    return isinstance(part, str) and ("[" in part or part[:1].isupper() or part == "str")


def parse_items_body(raw: bytes, model: type[M]) -> M:
    """:func:`parse_json_body` for APIs whose fields are "a string or a list of typed items"
    (the Responses API's ``input``, Anthropic's ``content``): a bad item is reported as that item's
    problem (``input.2.type: ...``), not as "input should be a valid string".

    Raises:
        APIError: as :func:`parse_json_body`.
    """
    body = load_json_object(raw)
    try:
        return model.model_validate(body)
    except ValidationError as exc:
        errors = exc.errors()
        deeper = [e for e in errors if not (e["loc"] and e["loc"][-1] == "str")] or errors
        cleaned = [{**e, "loc": tuple(p for p in e["loc"] if not _union_branch(p))} for e in deeper]
        message, param = validation_message(cleaned)
        raise APIError(400, message, param=param, code="invalid_value") from exc
