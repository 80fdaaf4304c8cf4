"""Errors as people read them: every failure is JSON ``{"detail": "<one sentence>"}``.

Mapping (first match wins, most specific first):

| error                                   | status |
|-----------------------------------------|--------|
| ``JobNotFound``                         | 404    |
| ``IllegalTransition``, ``StaleVersion``, ``DuplicateJob`` | 409 |
| ``DatabaseUnavailable``, ``StaleLeader``, ``WriteConflict``, other ``TransientError`` | 503 |
| ``BacklogFull`` (too many waiting jobs)  | 429    |
| ``InvalidPage`` (a page cursor the store never handed out) | 422 |
| ``ConfigError`` (bad values, groupings, ``LimitExceeded``) | 422 |
| other ``PermanentError``                | 409    |
| other ``StarburstError``                | 400    |
| request validation (pydantic)           | 422, naming each field |
| anything else                           | 500, the error's type (the log has the rest, once) |

Invariant: no response body ever carries a traceback or a database password (the store's
messages name URLs through ``redact``).
"""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse

from starburst.adapters.db.engine import DatabaseUnavailable
from starburst.core.errors import ConfigError, PermanentError, StarburstError, TransientError
from starburst.core.lifecycle import IllegalTransition
from starburst.core.records import (
    DuplicateJob,
    InvalidPage,
    JobNotFound,
    StaleLeader,
    StaleVersion,
)
from starburst.core.submit_limits import BacklogFull

log = logging.getLogger("starburst.api")

STATUS: tuple[tuple[type[Exception], int], ...] = (
    (JobNotFound, 404),
    (IllegalTransition, 409),
    (StaleVersion, 409),
    (DuplicateJob, 409),
    (DatabaseUnavailable, 503),
    (StaleLeader, 503),
    (TransientError, 503),
    (BacklogFull, 429),
    (InvalidPage, 422),
    (ConfigError, 422),
    (PermanentError, 409),
    (StarburstError, 400),
)


def status_of(exc: Exception) -> int:
    return next((code for kind, code in STATUS if isinstance(exc, kind)), 500)


def _starburst_error(_request: Request, exc: Exception) -> JSONResponse:
    code = status_of(exc)
    headers = {"Retry-After": "5"} if code == 503 else None
    if code == 429:  # waits for the caller's own jobs to start: not worth a quick retry
        headers = {"Retry-After": "60"}
    return JSONResponse({"detail": str(exc)}, status_code=code, headers=headers)


def _validation_error(_request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    problems = []
    for err in exc.errors():
        where = ".".join(str(p) for p in err.get("loc", ()) if p not in ("body", "query"))
        problems.append(f"{where or 'request'}: {err.get('msg', 'invalid')}")
    errors = [
        {"field": ".".join(str(p) for p in e.get("loc", ())), "message": e.get("msg", "")}
        for e in exc.errors()
    ]
    return JSONResponse(
        {"detail": "invalid request: " + "; ".join(problems), "errors": errors}, status_code=422
    )


def _unexpected(request: Request, exc: Exception) -> JSONResponse:
    # the handler runs outside the ``except`` that caught ``exc``: pass it explicitly, or the
    # log line would read "NoneType: None"
    log.error(
        "unhandled error in %s %s: %s",
        request.method,
        request.url.path,
        type(exc).__name__,
        exc_info=exc,
    )
    return JSONResponse(
        {"detail": f"internal error ({type(exc).__name__}); the server log has the details"},
        status_code=500,
    )


class CatchUnexpected:
    """ASGI middleware answering any exception the routes let through with the 500 above.

    Starlette's own handler for ``Exception`` answers and then re-raises, so the server
    drops the keep-alive connection and logs the traceback a second time; this one answers
    (if nothing was sent yet), logs once, and keeps the connection.
    """

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def tracking_send(message: Any) -> None:
            nonlocal started
            started = started or message.get("type") == "http.response.start"
            await send(message)

        try:
            await self.app(scope, receive, tracking_send)
        except Exception as exc:
            if started:
                raise
            response = _unexpected(Request(scope), exc)
            await response(scope, receive, send)


def install(app: FastAPI) -> None:
    app.add_exception_handler(StarburstError, _starburst_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_middleware(CatchUnexpected)
