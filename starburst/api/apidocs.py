"""``/docs``: the API's reference (Swagger UI) from files this server ships, under a strict
Content-Security-Policy.

FastAPI's own ``/docs`` and ``/redoc`` pages load their scripts from a CDN; the product
otherwise serves everything itself and works offline. So ``create_app`` turns those off and
this router serves Swagger UI from ``ui/static`` (``swagger-ui-dist``, vendored: see
``ui/static/VENDORED.md``), started by a script file of its own rather than an inline one.

Invariants: the page and its files carry ``POLICY``, which allows scripts, styles, images and
requests from this origin only (no inline script, no ``eval``, no other origin, not framed);
only the files in ``FILES`` are served.
"""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter, HTTPException
from fastapi.responses import FileResponse, HTMLResponse

STATIC = Path(__file__).parent / "ui" / "static"
#: The files the page may load, and their media types (nothing else is served).
FILES = {
    "swagger-ui-bundle.js": "text/javascript",
    "swagger-ui.css": "text/css",
    "swagger-init.js": "text/javascript",
    "swagger-ui-LICENSE.txt": "text/plain",
    "swagger-ui-NOTICE.txt": "text/plain",
    "swagger-ui-bundle.js.LICENSE.txt": "text/plain",
}
POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "font-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'; "
    "frame-ancestors 'none'"
)

router = APIRouter(tags=["docs"], include_in_schema=False)


@router.get("/docs")
def docs() -> HTMLResponse:
    page = (STATIC / "docs.html").read_text(encoding="utf-8")
    return HTMLResponse(page, headers={"Content-Security-Policy": POLICY})


@router.get("/docs/static/{name}")
def static(name: str) -> FileResponse:
    media = FILES.get(name)
    if media is None:
        raise HTTPException(404, f"no API docs file {name}")
    return FileResponse(
        STATIC / name, media_type=media, headers={"Content-Security-Policy": POLICY}
    )
