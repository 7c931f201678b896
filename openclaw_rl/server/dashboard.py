"""``/dashboard``: a local page where a person sees what the agent learned and takes control.

One HTML page with its script and style sheet, all shipped in this package
(``dashboard_assets/``; no CDN, no network fetch). It polls the admin API every few seconds
while it is open, so it follows a live run:

* conversations (``GET /admin/conversations``): each turn with its reply, next state, the judge's
  vote and hint, the explicit rating (rate a turn +1 / -1 with an optional correction:
  ``POST /v1/feedback``; undo: ``DELETE``), and forget a conversation (``POST /admin/forget``);
* training (``GET /admin/training``): steps, reward, loss, KL, satisfaction where the run logs it,
  from the run's ``metrics.jsonl`` (``--metrics-dir``);
* weight versions (``GET /admin/versions``) with their promotion-gate results and a rollback button
  (``POST /admin/rollback``);
* lessons (``GET/PATCH/DELETE /admin/lessons``) and the feedback summary with the judge's
  agreement (``GET /admin/feedback``);
* storage (``GET /admin/storage``): every file of the buffer folder and its size, rows per table.

Access: the page and every call it makes are admin calls (:func:`openclaw_rl.server.app.admin_check`):
a local client, or the admin key, which a browser gives as ``/dashboard?key=KEY`` (the page then
sends it as ``Authorization: Bearer``).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from fastapi import Depends, FastAPI
from fastapi.responses import FileResponse

from openclaw_rl.capture.overview import conversations, storage, training_steps
from openclaw_rl.server.errors import APIError

__all__ = ["ASSETS", "install_dashboard_routes"]

#: the page's files (installed with the package)
ASSETS = Path(__file__).parent / "dashboard_assets"
_TYPES = {"dashboard.js": "text/javascript", "dashboard.css": "text/css"}


def install_dashboard_routes(app: FastAPI, store, check_admin, check_page, metrics_dir: str | None) -> None:
    """Add ``/dashboard``, its assets and the read-only admin views it needs to ``app``.

    Args:
        app: the server's app. store: its trajectory store. check_admin: the admin dependency
        of the API calls. check_page: the admin dependency of the page (accepts ``?key=``).
        metrics_dir: the run's ``--log-dir`` (its ``*/metrics.jsonl``), or None.
    """

    @app.get("/dashboard", dependencies=[Depends(check_page)], include_in_schema=False)
    async def page():
        return FileResponse(ASSETS / "index.html", media_type="text/html",
                            headers={"Cache-Control": "no-store", "X-Frame-Options": "DENY"})

    @app.get("/dashboard/{name}", include_in_schema=False)
    async def asset(name: str):
        if name not in _TYPES:
            raise APIError(404, f"no dashboard file {name!r}", code="not_found")
        return FileResponse(ASSETS / name, media_type=_TYPES[name], headers={"Cache-Control": "no-store"})

    @app.get("/admin/conversations", dependencies=[Depends(check_admin)])
    async def list_conversations(limit: int = 20):
        """The most recently active sessions with their turns (:func:`openclaw_rl.capture.overview.conversations`)."""
        return {"object": "list", "data": await asyncio.to_thread(conversations, store, max(1, min(limit, 500)))}

    @app.get("/admin/training", dependencies=[Depends(check_admin)])
    async def training():
        """The run's logged steps (:func:`openclaw_rl.capture.overview.training_steps`)."""
        return await asyncio.to_thread(training_steps, metrics_dir)

    @app.get("/admin/storage", dependencies=[Depends(check_admin)])
    async def stored():
        """Files of the buffer folder and rows per table (:func:`openclaw_rl.capture.overview.storage`)."""
        return await asyncio.to_thread(storage, store)
