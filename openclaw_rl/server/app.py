"""The FastAPI application: ``/v1/chat/completions`` (SSE streaming), ``/v1/responses``
(:mod:`openclaw_rl.server.responses_api`), ``/v1/messages`` (:mod:`openclaw_rl.server.messages_api`),
``/v1/models``, ``/healthz``,
``/metrics`` (Prometheus), ``/admin/update_weights_from_disk``, ``/admin/versions`` and
``/admin/rollback`` (:mod:`openclaw_rl.server.versions`); with capture also explicit feedback,
lessons and forgetting (:mod:`openclaw_rl.server.control`).

Follows the OpenAI Chat Completions API (https://platform.openai.com/docs/api-reference/chat)
for requests, responses, stream chunks and errors.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import logging
import time
import uuid
from contextlib import asynccontextmanager
from pathlib import Path

from fastapi import Depends, FastAPI, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse
from prometheus_client import Gauge

from openclaw_rl.engine import EngineError
from openclaw_rl.server.chat import ChatEvent, ChatService
from openclaw_rl.server.control import install_control_routes
from openclaw_rl.server.dashboard import install_dashboard_routes
from openclaw_rl.server.errors import (APIError, UnexpectedErrorMiddleware, error_body, install_error_handlers,
                                      parse_json_body, until_disconnect)
from openclaw_rl.server.limits import DEFAULT_MAX_REQUEST_BYTES, BodyLimitMiddleware
from openclaw_rl.server.protocol import ChatCompletionRequest
from openclaw_rl.server.messages_api import install_messages_route
from openclaw_rl.server.responses_api import install_responses_route
from openclaw_rl.server.versions import VersionRegistry

log = logging.getLogger(__name__)


def _tool_call_dicts(call, first: bool) -> dict:
    if first:
        return {"index": call.index, "id": call.id, "type": "function",
                "function": {"name": call.name, "arguments": ""}}
    return {"index": call.index, "function": {"arguments": call.arguments}}


def parse_chat_request(raw: bytes) -> ChatCompletionRequest:
    """Parse and validate a chat completion request body (:func:`~openclaw_rl.server.errors.parse_json_body`).

    Raises:
        APIError: 400 for a body that is not JSON, not an object, or fails validation.
    """
    return parse_json_body(raw, ChatCompletionRequest)


def _bearer(request: Request) -> str:
    auth = request.headers.get("authorization", "")
    return auth[7:].strip() if auth.lower().startswith("bearer ") else ""


def _under(path: str, roots: tuple[str, ...]) -> bool:
    """Whether ``path`` (links resolved) lies inside one of ``roots``."""
    from pathlib import Path

    real = Path(path).resolve()
    return any(real.is_relative_to(Path(root).resolve()) for root in roots)


def _key_matches(token: str, key: str) -> bool:
    return bool(token) and hmac.compare_digest(token.encode(), key.encode())


def admin_check(token: str, client_host: str, api_key: str | None, admin_api_key: str | None) -> None:
    """Who may call ``/admin/*`` (weight updates): with ``--admin-api-key``, whoever sends that
    key (the plain API key is not enough); without it, only clients on this machine (loopback),
    and with the API key when the server has one.

    Raises:
        APIError: 401 ``invalid_api_key`` (wrong or missing key), 403 ``admin_loopback_only``
            (a remote client and no admin key configured).
    """
    from openclaw_rl.server.config import is_loopback

    if admin_api_key:
        if not _key_matches(token, admin_api_key):
            raise APIError(401, "invalid or missing admin key (send 'Authorization: Bearer <admin key>')",
                           code="invalid_api_key")
        return
    if not is_loopback(client_host):
        raise APIError(403, "the /admin endpoints accept only local clients unless the server has --admin-api-key",
                       type_="permission_error", code="admin_loopback_only")
    if api_key and not _key_matches(token, api_key):
        raise APIError(401, "invalid or missing API key (send 'Authorization: Bearer <key>')", code="invalid_api_key")


def create_app(service: ChatService, api_key: str | None = None, recorder=None, engine_close=None,
               max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES, admin_api_key: str | None = None,
               weights_dirs: tuple[str, ...] = (), base_model_path: str | None = None,
               resume_served_version: bool = True, metrics_dir: str | None = None,
               forget_log_dirs: tuple[str, ...] = ()) -> FastAPI:
    """Build the app around a :class:`ChatService`.

    Args:
        service: serves completions (engine + tokenizer + capture).
        api_key: when set, ``/v1/*`` requires ``Authorization: Bearer <api_key>`` (401 otherwise).
        recorder: capture recorder; its idle-session sweeper runs while the app runs, and its
            store is closed on shutdown.
        engine_close: coroutine function called on shutdown (before the store is closed).
        max_request_bytes: larger request bodies get 413 before they are read
            (:class:`openclaw_rl.server.limits.BodyLimitMiddleware`).
        admin_api_key: the key of ``/admin/*`` (:func:`admin_check`).
        weights_dirs: when given, weight updates load only from folders under one of these
            (403 ``weights_path_not_allowed`` otherwise).
        base_model_path: the folder of the model the server started with (version 0 of
            ``GET /admin/versions``, the target of a rollback to it).
        resume_served_version: on a store that recorded served versions, serve the last one again.
        metrics_dir: a training run's ``--log-dir``, whose steps ``/dashboard`` shows
            (:mod:`openclaw_rl.server.dashboard`).
        forget_log_dirs: the run's log folders whose log files ``POST /admin/forget`` scrubs too
            (:func:`openclaw_rl.capture.forget.forget`).
    """
    versions = VersionRegistry(recorder.store if recorder else None)
    # a restart on the same store serves again the version it served last (when its folder is
    # still there and fits); otherwise the model it started with
    resume = next((v for v in versions.list() if v.status == "served"), None) if resume_served_version else None
    if resume is not None and (resume.version <= service.engine.weight_version or not Path(resume.model_path).is_dir()):
        resume = None
    if base_model_path and resume is None:
        versions.record(service.engine.weight_version, base_model_path)
    gate_gauge = Gauge("openclaw_served_version_gate", "the promotion gate's metrics of the served weight version "
                       "(gate/* without the prefix)", ["metric"], registry=service.admission.registry)

    @asynccontextmanager
    async def lifespan(_app):
        if resume is not None:
            try:
                await asyncio.to_thread(service.engine.load_weights, resume.model_path, resume.version)
                versions.serving = resume
                log.info("serving weight version %d again (%s), as before the restart", resume.version,
                         resume.model_path)
            except (ValueError, OSError, EngineError) as exc:
                log.warning("could not serve weight version %d again (%s); serving the model it started with",
                            resume.version, exc)
                if base_model_path:
                    versions.record(service.engine.weight_version, base_model_path)
        tasks = [asyncio.create_task(recorder.sweep_idle_forever()),
                 asyncio.create_task(feedback_summary.refresh_forever())] if recorder else []
        yield
        # graceful shutdown (:mod:`openclaw_rl.server.shutdown`): requests have ended by now
        for task in tasks:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        if engine_close:
            await engine_close()
        if recorder:
            await asyncio.to_thread(recorder.store.close)  # waits for a sweep still in its thread

    app = FastAPI(title="OpenClaw-RL intercept server", lifespan=lifespan)
    install_error_handlers(app)
    app.add_middleware(BodyLimitMiddleware, max_bytes=max_request_bytes)
    app.add_middleware(UnexpectedErrorMiddleware, log=log)  # outermost: errors of the body limit too

    async def check_key(request: Request) -> None:
        """The API key: ``Authorization: Bearer <key>`` (OpenAI clients) or ``x-api-key: <key>``
        (Anthropic clients)."""
        if not api_key:
            return
        if not _key_matches(_bearer(request) or request.headers.get("x-api-key", "").strip(), api_key):
            raise APIError(401, "invalid or missing API key (send 'Authorization: Bearer <key>' or "
                                "'x-api-key: <key>')", type_="invalid_request_error", code="invalid_api_key")

    async def check_admin(request: Request) -> None:
        host = request.client.host if request.client else ""
        admin_check(_bearer(request), host, api_key, admin_api_key)

    async def check_key_or_admin(request: Request) -> None:
        """Explicit feedback: the API key's endpoint, which the dashboard calls with the admin key."""
        try:
            await check_key(request)
        except APIError as exc:
            try:
                await check_admin(request)
            except APIError:
                raise exc from None

    async def check_page(request: Request) -> None:
        """The dashboard page: the admin check, with the key also accepted as ``?key=``."""
        host = request.client.host if request.client else ""
        admin_check(_bearer(request) or request.query_params.get("key", ""), host, api_key, admin_api_key)

    @app.get("/metrics")
    async def metrics():
        """Prometheus text format: running / queued / admitted / rejected requests, the limits and
        the served weight version (public, like /healthz)."""
        from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

        service.admission.weight_version.set(service.engine.weight_version)
        if feedback_summary is not None:
            feedback_summary.export()
        served = versions.serving
        for name, value in (served.gate if served and served.version == service.engine.weight_version else {}).items():
            if isinstance(value, (int, float)):
                gate_gauge.labels(name.removeprefix("gate/")).set(value)
        return Response(generate_latest(service.admission.registry), media_type=CONTENT_TYPE_LATEST)

    @app.get("/healthz")
    async def healthz():
        """Status, model, weight version; with an engine on engine servers (``--backend vllm`` /
        ``sglang``) also ``engine``: its replicas' URLs, versions and loads."""
        body = {"status": "ok", "model": service.model_name, "weight_version": service.engine.weight_version}
        describe = getattr(service.engine, "describe", None)
        if describe is not None:
            body["engine"] = describe()
        return body

    def model_card() -> dict:
        return {"id": service.model_name, "object": "model", "created": 0, "owned_by": "openclaw-rl"}

    # public on purpose: OpenClaw's gateway probes it without an Authorization header
    @app.get("/v1/models")
    async def models():
        return {"object": "list", "data": [model_card()]}

    @app.get("/v1/models/{model_id:path}")
    async def model(model_id: str):
        if model_id != service.model_name:
            raise APIError(404, f"model {model_id!r} is not served here (serving {service.model_name!r})",
                           code="model_not_found")
        return model_card()

    @app.post("/admin/update_weights_from_disk", dependencies=[Depends(check_admin)])
    async def update_weights(request: Request):
        """Swap in weights from a model or LoRA adapter folder (SGLang's endpoint name).

        Body: ``{"model_path": str, "weight_version": int | null}``; serving continues meanwhile.
        The engine loads and checks the new weights completely before the swap (config and
        tensor shapes must match the served model): a bad folder is a 400 naming the problem
        and the old weights keep serving.
        """
        try:
            body = json.loads(await request.body())
            path, version = body["model_path"], body.get("weight_version")
            if not isinstance(path, str) or (version is not None and not isinstance(version, int)):
                raise TypeError("model_path must be a string and weight_version an integer")
        except (json.JSONDecodeError, KeyError, TypeError, AttributeError) as exc:
            raise APIError(400, f"expected {{'model_path': str, 'weight_version': int}}: {exc}") from exc
        if weights_dirs and not _under(path, weights_dirs):
            raise APIError(403, f"model_path {path!r} is not under the server's --weights-dir "
                           f"({', '.join(weights_dirs)})", type_="permission_error", param="model_path",
                           code="weights_path_not_allowed")
        gate = body.get("gate")
        if gate is not None and not isinstance(gate, dict):
            raise APIError(400, "gate must be an object of the promotion gate's metrics", param="gate")
        new_version = await _load(path, version)
        await asyncio.to_thread(versions.record, new_version, path, gate)
        return {"success": True, "weight_version": new_version}

    async def _load(path: str, version: int | None, allow_older: bool = False) -> int:
        try:
            return await asyncio.to_thread(service.engine.load_weights, path, version, allow_older)
        except (ValueError, OSError) as exc:
            # nothing was swapped: serving goes on with the old weights
            raise APIError(400, f"could not load weights: {exc}", param="model_path",
                           code="invalid_weights") from exc
        except EngineError as exc:  # an engine server refused or failed its reload (--backend vllm / sglang)
            raise APIError(502, f"the engine server failed to load the weights: {exc}", type_="server_error",
                           code="engine_update_failed") from exc

    @app.get("/admin/versions", dependencies=[Depends(check_admin)])
    async def list_versions():
        """The served weight versions, newest first: folder, when served, the promotion gate's
        metrics, status (``served`` / ``superseded`` / ``rolled_back``), and with capture the main
        turns each sampled and how many of those were trained (:mod:`openclaw_rl.server.versions`)."""
        rows = await asyncio.to_thread(versions.list)
        turns = await asyncio.to_thread(recorder.store.turns_per_version) if recorder else {}
        return {"object": "list", "serving": service.engine.weight_version,
                "data": [VersionRegistry.to_json(v, turns.get(v.version, {"turns_sampled": 0, "turns_trained": 0})
                                                 if recorder else None) for v in rows]}

    @app.post("/admin/rollback", dependencies=[Depends(check_admin)])
    async def rollback(request: Request):
        """Serve an earlier version again: ``{"version": V}``. V's folder is loaded and checked
        like any update (requests keep being served meanwhile) and served as version V; newer
        versions are marked ``rolled_back``. 404 for a version never served here, 409 when its
        folder is gone (pruned: ``--keep-versions``)."""
        try:
            body = json.loads(await request.body())
            target = body["version"]
            if not isinstance(target, int) or isinstance(target, bool) or target < 0:
                raise TypeError("version must be a non-negative integer")
        except (json.JSONDecodeError, KeyError, TypeError, AttributeError) as exc:
            raise APIError(400, f"expected {{'version': int}}: {exc}", param="version") from exc
        served = await roll_back(target)
        return {"success": True, "weight_version": served}

    async def roll_back(target: int) -> int:
        """Load version ``target``'s folder again and serve it as ``target``; returns the version.

        Raises:
            APIError: 404 never served here, 409 its folder is gone, 400/502 the load failed.
        """
        info = await asyncio.to_thread(versions.get, target)
        if info is None:
            known = [v.version for v in await asyncio.to_thread(versions.list)]
            raise APIError(404, f"weight version {target} was never served here (known: {known})",
                           param="version", code="version_not_found")
        if not Path(info.model_path).exists() and not info.model_path.startswith("builtin:"):
            raise APIError(409, f"the folder of weight version {target} is gone ({info.model_path}); keep more "
                           "versions with --keep-versions", param="version", code="version_pruned")
        served = await _load(info.model_path, target, allow_older=True)
        await asyncio.to_thread(versions.rolled_back_to, served)
        log.warning("rolled back: serving weight version %d (%s)", served, info.model_path)
        return served

    feedback_summary = install_control_routes(
        app, recorder.store, check_key_or_admin, check_admin, service.admission.registry, roll_back,
        lambda: service.engine.weight_version, service.lessons, forget_log_dirs) if recorder else None
    if recorder:
        install_dashboard_routes(app, recorder.store, check_admin, check_page, metrics_dir)

    @app.post("/v1/chat/completions", dependencies=[Depends(check_key)])
    async def chat_completions(request: Request):
        # a large body's JSON parse and validation run off the event loop too
        req = await asyncio.to_thread(parse_chat_request, await request.body())
        headers = {k.lower(): v for k, v in request.headers.items()}
        cid = f"chatcmpl-{uuid.uuid4().hex}"
        created = int(time.time())
        events = service.run(req, headers, completion_id=cid)
        if req.stream:
            # surface request errors (prompt too long, ...) as JSON 4xx before streaming starts
            first = await events.__anext__()
            include_usage = bool(req.stream_options and req.stream_options.include_usage)
            return StreamingResponse(_sse(first, events, cid, created, service.model_name, include_usage),
                                     media_type="text/event-stream",
                                     headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})
        return JSONResponse(await _aggregate(events, cid, created, service.model_name, request))

    install_responses_route(app, service, check_key)
    install_messages_route(app, service, check_key)
    return app


async def _aggregate(events, cid: str, created: int, model: str, request: Request | None = None) -> dict:
    content, reasoning, calls, logprobs = [], [], [], []
    final: ChatEvent | None = None
    async for ev in until_disconnect(events, request):  # a client gone stops generation, nothing recorded
        logprobs.extend(ev.logprobs)
        if ev.kind == "content":
            content.append(ev.text)
        elif ev.kind == "reasoning":
            reasoning.append(ev.text)
        elif ev.kind == "tool_call":
            calls.append(ev.tool_call.to_openai())
        elif ev.kind == "finish":
            final = ev
    message = {"role": "assistant", "content": "".join(content) if (content or not calls) else None}
    if calls:
        message["tool_calls"] = calls
    if reasoning:
        message["reasoning_content"] = "".join(reasoning)
    choice = {"index": 0, "message": message, "finish_reason": final.finish_reason,
              "logprobs": {"content": logprobs} if logprobs else None}
    return {"id": cid, "object": "chat.completion", "created": created, "model": model,
            "choices": [choice], "usage": final.usage}


def _chunk(cid, created, model, delta: dict, finish=None, logprobs=None, include_usage=False) -> str:
    """One SSE chunk; with ``stream_options.include_usage`` every chunk before the final usage
    chunk carries ``"usage": null``, as OpenAI sends it."""
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    if logprobs:
        choice["logprobs"] = {"content": logprobs}
    body = {"id": cid, "object": "chat.completion.chunk", "created": created, "model": model,
            "choices": [choice]}
    if include_usage:
        body["usage"] = None
    return f"data: {json.dumps(body, ensure_ascii=False)}\n\n"


async def _sse(first: ChatEvent, events, cid, created, model, include_usage: bool):
    def chunk(delta, **kw):
        return _chunk(cid, created, model, delta, include_usage=include_usage, **kw)

    yield chunk({"role": "assistant", "content": ""})
    pending = [first]
    try:
        while True:
            ev = pending.pop() if pending else await events.__anext__()
            if ev.kind == "content":
                yield chunk({"content": ev.text}, logprobs=ev.logprobs)
            elif ev.kind == "reasoning":
                yield chunk({"reasoning_content": ev.text}, logprobs=ev.logprobs)
            elif ev.kind == "tool_call":
                yield chunk({"tool_calls": [_tool_call_dicts(ev.tool_call, True)]}, logprobs=ev.logprobs)
                yield chunk({"tool_calls": [_tool_call_dicts(ev.tool_call, False)]})
            elif ev.kind == "finish":
                yield chunk({}, finish=ev.finish_reason, logprobs=ev.logprobs)
                if include_usage:
                    usage = {"id": cid, "object": "chat.completion.chunk", "created": created,
                             "model": model, "choices": [], "usage": ev.usage}
                    yield f"data: {json.dumps(usage)}\n\n"
    except StopAsyncIteration:
        pass
    except APIError as exc:  # the engine failed mid-stream (the engine logged it): an in-band error event
        log.error("stream failed: %s", exc.message)
        yield f"data: {json.dumps(error_body(exc.message, exc.type, exc.param, exc.code))}\n\n"
    except Exception as exc:  # mid-stream failure: tell the client in-band, keep the server up
        log.exception("stream failed")
        yield f"data: {json.dumps(error_body(f'generation failed: {exc}', 'server_error'))}\n\n"
    finally:
        await events.aclose()
    yield "data: [DONE]\n\n"
