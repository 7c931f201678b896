"""OpenAI-style error responses (``{"error": {"message", "type", "param", "code"}}``)."""

from __future__ import annotations

import json
from typing import TypeVar

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


async def api_error_handler(_: Request, exc: APIError) -> JSONResponse:
    return JSONResponse(error_body(exc.message, exc.type, exc.param, exc.code), status_code=exc.status,
                        headers=exc.headers or None)


async def validation_error_handler(_: Request, exc: RequestValidationError) -> JSONResponse:
    errors = exc.errors()
    first = errors[0] if errors else {}
    if first.get("type") == "json_invalid":
        return JSONResponse(error_body(f"request body is not valid JSON: {first.get('msg')}",
                                       code="invalid_json"), status_code=400)
    msg, param = validation_message(errors)
    return JSONResponse(error_body(msg, param=param, code="invalid_value"), status_code=400)


async def http_error_handler(_: Request, exc: StarletteHTTPException) -> JSONResponse:
    type_ = "invalid_request_error" if exc.status_code < 500 else "server_error"
    return JSONResponse(error_body(str(exc.detail), type_), status_code=exc.status_code,
                        headers=getattr(exc, "headers", None))


def install_error_handlers(app) -> None:
    """Register the handlers on a FastAPI app (unexpected errors are turned into a 500 by the
    app's middleware, which, unlike Starlette's handler, does not re-raise)."""
    app.add_exception_handler(APIError, api_error_handler)
    app.add_exception_handler(RequestValidationError, validation_error_handler)
    app.add_exception_handler(StarletteHTTPException, http_error_handler)


M = TypeVar("M", bound=BaseModel)


def parse_json_body(raw: bytes, model: type[M]) -> M:
    """Parse a request body as JSON and validate it as ``model``.

    Raises:
        APIError: 400 ``invalid_json`` for a body that is not JSON, nested too deeply or not an
            object; 400 ``invalid_value`` naming the first problem when validation fails.
    """
    try:
        body = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise APIError(400, f"request body is not valid JSON: {exc}", code="invalid_json") from exc
    except RecursionError as exc:
        raise APIError(400, "request body is nested too deeply", code="invalid_json") from exc
    if not isinstance(body, dict):
        raise APIError(400, "request body must be a JSON object", code="invalid_json")
    try:
        return model.model_validate(body)
    except ValidationError as exc:
        message, param = validation_message(exc.errors())
        raise APIError(400, message, param=param, code="invalid_value") from exc
