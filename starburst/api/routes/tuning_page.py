"""``/ui/tuning``: the "choose your budget" page next to the cost dashboard.

A static page (``api/ui/static/tuning.html`` and ``tuning.js``) that calls
``/v1/tuning/runs`` and ``/v1/tuning/settings`` with the caller's token (the dashboard's,
kept in the tab's ``sessionStorage``, or ``#token=...``); the API's admin check applies.
It shows every replayed setting as a table and as a chart (cloud cost against mean-JCT
change, today's setting and the recommendation ringed, drawn by the dashboard's vendored
Chart.js). It loads only its own script, the dashboard's stylesheet and Chart.js, under the
dashboard's Content-Security-Policy.
"""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import FileResponse, HTMLResponse

from starburst.api.ui import HEADERS, STATIC

router = APIRouter(tags=["dashboard"], include_in_schema=False)


@router.get("/ui/tuning")
def tuning_page() -> HTMLResponse:
    page = (STATIC / "tuning.html").read_text(encoding="utf-8")
    return HTMLResponse(page, headers={**HEADERS, "Cache-Control": "no-store"})


@router.get("/ui/tuning/tuning.js")
def tuning_script() -> FileResponse:
    return FileResponse(
        STATIC / "tuning.js",
        media_type="text/javascript",
        headers=HEADERS,
    )
