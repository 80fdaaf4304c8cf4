"""Errors as people read them: every failure is JSON ``{"detail": "<one sentence>"}``.

Mapping (first match wins, most specific first):

| error                                   | status |
|-----------------------------------------|--------|
| ``JobNotFound``                         | 404    |
| ``IllegalTransition``, ``StaleVersion``, ``DuplicateJob`` | 409 |
| ``DatabaseUnavailable``, ``StaleLeader``, other ``TransientError`` | 503 |
| ``ConfigError`` (bad values, cursors, groupings) | 422 |
| other ``PermanentError``                | 409    |
| other ``StarburstError``                | 400    |
| request validation (pydantic)           | 422, naming each field |
| anything else                           | 500, the error's type only (the log has the rest) |

Invariant: no response body ever carries a traceback or a database password (the store's
messages name URLs through ``redact``).
"""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse

from starburst.adapters.db.engine import DatabaseUnavailable
from starburst.adapters.db.records import DuplicateJob, JobNotFound, StaleLeader, StaleVersion
from starburst.core.errors import ConfigError, PermanentError, StarburstError, TransientError
from starburst.core.lifecycle import IllegalTransition

log = logging.getLogger("starburst.api")

STATUS: tuple[tuple[type[Exception], int], ...] = (
    (JobNotFound, 404),
    (IllegalTransition, 409),
    (StaleVersion, 409),
    (DuplicateJob, 409),
    (DatabaseUnavailable, 503),
    (StaleLeader, 503),
    (TransientError, 503),
    (ConfigError, 422),
    (PermanentError, 409),
    (StarburstError, 400),
)


def status_of(exc: Exception) -> int:
    return next((code for kind, code in STATUS if isinstance(exc, kind)), 500)


def _starburst_error(_request: Request, exc: Exception) -> JSONResponse:
    code = status_of(exc)
    headers = {"Retry-After": "5"} if code == 503 else None
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
    log.exception("unhandled error in %s %s", request.method, request.url.path)
    return JSONResponse(
        {"detail": f"internal error ({type(exc).__name__}); the server log has the details"},
        status_code=500,
    )


def install(app: FastAPI) -> None:
    app.add_exception_handler(StarburstError, _starburst_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(Exception, _unexpected)
