"""``/ui``: the cost dashboard, a static page that reads the REST API with the caller's token.

What it shows: cloud spend over time by team and by location, on-prem use with its showback,
the savings against No-Wait, team budgets with their month-end forecast, the top jobs by
cost, a CSV download of the report, and the waiting jobs with where each goes next (the
``plan`` of ``/v1/queue``, the words every view shows). Every figure comes from the same
``/v1/costs`` routes the CLI reads; the page computes nothing but sums for its charts.

Auth: the page itself carries no data, so it is served to anyone; its requests send
``Authorization: Bearer <token>``, the token being entered once in the page or handed over in
the URL fragment (``/ui#token=...``, which browsers never send to a server). It is kept in the
tab's ``sessionStorage`` only — never written to disk, gone when the tab closes (a token an
older page left in ``localStorage`` is removed). The API's roles then apply: finance and
admins see every team, a user sees their own costs and team budget. With auth off (the
embedded default) no token is needed.

Offline: the page loads only its own files (``static/``) — Chart.js is vendored there (see
``static/VENDORED.md``) — and a strict Content-Security-Policy (``POLICY``: scripts, styles,
connections only from this origin, no inline script, no framing, no forms, no plugins) on the
page and on every file of it forbids anything else.
"""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter, HTTPException
from fastapi.responses import FileResponse, HTMLResponse, RedirectResponse

STATIC = Path(__file__).parent / "static"
#: The files the page may load, and their media types (nothing else is served).
FILES = {
    "dashboard.js": "text/javascript",
    "dashboard.css": "text/css",
    "chart.umd.min.js": "text/javascript",
    "chart.js-LICENSE.md": "text/markdown",
}
POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data: "
    "blob:; connect-src 'self'; base-uri 'none'; form-action 'none'; "
    "frame-ancestors 'none'; object-src 'none'"
)
#: sent with the page and its files besides the policy
HEADERS = {
    "Content-Security-Policy": POLICY,
    "Referrer-Policy": "no-referrer",
    "X-Content-Type-Options": "nosniff",
}

router = APIRouter(tags=["dashboard"], include_in_schema=False)


@router.get("/ui")
def dashboard() -> HTMLResponse:
    page = (STATIC / "dashboard.html").read_text(encoding="utf-8")
    return HTMLResponse(page, headers={**HEADERS, "Cache-Control": "no-store"})


@router.get("/ui/")
def dashboard_slash() -> RedirectResponse:
    return RedirectResponse("/ui")


@router.get("/ui/static/{name}")
def static(name: str) -> FileResponse:
    media = FILES.get(name)
    if media is None:
        raise HTTPException(404, f"no dashboard file {name}")
    return FileResponse(STATIC / name, media_type=media, headers=HEADERS)
