"""The OpenAPI document tells the truth about errors: every status a route answers, its body.

FastAPI documents only the success response and a 422 whose ``detail`` is an array; the API
answers every error as ``{"detail": "<sentence>"}`` (``errors.py``), a 422 also carrying
``errors`` (one entry per field), and the middleware in ``limits.py`` answers 413 and 422 on
its own. ``document`` rewrites the generated document once:

- ``ErrorOut`` and ``ValidationErrorOut`` replace FastAPI's error schemas;
- every ``/v1`` operation lists 401 (no or bad token), 422 and 503 (database unavailable);
  operations with a body 400 (not JSON) and 413 (over ``MAX_BODY_BYTES``); and the 403, 404,
  409 and 429 of ``ROUTE_ERRORS``, keyed by method and path — an operation the table does not
  know gets all three, so a new route is never under-documented;
- ``/readyz`` its 503; ``/metrics`` is Prometheus text;
- every string path and query parameter carries the no-control-character ``pattern`` the
  middleware enforces.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi

from starburst.api.limits import MAX_BODY_BYTES, NO_CONTROL

ERROR = {"$ref": "#/components/schemas/ErrorOut"}
VALIDATION = {"$ref": "#/components/schemas/ValidationErrorOut"}

SCHEMAS: dict[str, Any] = {
    "ErrorOut": {
        "title": "ErrorOut",
        "type": "object",
        "required": ["detail"],
        "properties": {"detail": {"type": "string", "title": "Detail"}},
    },
    "ValidationErrorOut": {
        "title": "ValidationErrorOut",
        "type": "object",
        "required": ["detail"],
        "properties": {
            "detail": {"type": "string", "title": "Detail"},
            "errors": {
                "type": "array",
                "items": {
                    "type": "object",
                    "required": ["field", "message"],
                    "properties": {"field": {"type": "string"}, "message": {"type": "string"}},
                },
            },
        },
    },
}

DESCRIPTIONS = {
    "400": "The body is not JSON",
    "401": "Missing, invalid, expired or revoked API token",
    "403": "The caller's role or ownership does not allow this",
    "404": "No such object (or not visible to the caller)",
    "409": "Conflicts with the object's state",
    "413": f"The request body is larger than {MAX_BODY_BYTES} bytes",
    "422": "Invalid input; `detail` names every bad field",
    "429": "Too many of the caller's or team's jobs are waiting; `detail` names the limit",
    "503": "The database is unavailable (retry later)",
}

#: (method, path) → the 403/404/409 the route can answer, besides the common ones
ROUTE_ERRORS: dict[tuple[str, str], set[str]] = {
    ("post", "/v1/jobs"): {"403", "404", "409", "429"},
    ("get", "/v1/jobs"): {"403"},
    ("get", "/v1/jobs/{job_id}"): {"404", "409"},  # 409: a prefix matching several jobs
    ("get", "/v1/jobs/{job_id}/explain"): {"404", "409"},
    ("post", "/v1/jobs/{job_id}/cancel"): {"403", "404", "409"},
    ("get", "/v1/jobs/{job_id}/logs"): {"404", "409"},
    ("get", "/v1/arrays/{array}"): {"404"},
    ("post", "/v1/arrays/{array}/cancel"): {"403", "404", "409"},
    ("get", "/v1/costs"): {"403"},
    ("get", "/v1/costs/savings"): {"403"},
    ("get", "/v1/whoami"): set(),
    ("post", "/v1/users"): {"403"},
    ("get", "/v1/users/{name}"): {"403", "404"},
    ("post", "/v1/teams"): {"403"},
    ("post", "/v1/tokens"): {"403", "404"},
    ("delete", "/v1/tokens/{token_id}"): {"403", "404"},
    ("put", "/v1/teams/{team}/budget"): {"403", "404"},
    ("get", "/v1/teams/{team}/budget"): {"403", "404"},
}


def document(app: FastAPI) -> dict[str, Any]:
    """The app's OpenAPI document with the error responses described above (cached)."""
    if app.openapi_schema is not None:
        return app.openapi_schema
    spec = get_openapi(
        title=app.title,
        version=app.version,
        summary=app.summary,
        description=app.description,
        routes=app.routes,
    )
    components = spec.setdefault("components", {}).setdefault("schemas", {})
    components.pop("HTTPValidationError", None)
    components.pop("ValidationError", None)
    components.update(SCHEMAS)
    for path, operations in spec.get("paths", {}).items():
        for method, operation in operations.items():
            _operation(path, method, operation)
    app.openapi_schema = spec
    return spec


def _operation(path: str, method: str, operation: dict[str, Any]) -> None:
    responses = operation.setdefault("responses", {})
    for parameter in operation.get("parameters", []):
        if parameter.get("in") not in ("path", "query"):
            continue  # the middleware checks paths and query strings, not headers
        schema = parameter.get("schema", {})
        for option in schema.get("anyOf", [schema]):
            if (
                option.get("type") == "string"
                and "pattern" not in option
                and "enum" not in option
                and "$ref" not in option
            ):
                option["pattern"] = NO_CONTROL
    if path == "/readyz":
        responses["503"] = _response("503", ERROR, "Not ready; `detail` names the problems")
    if path == "/metrics":
        responses["200"] = {
            "description": "Prometheus text exposition",
            "content": {"text/plain": {"schema": {"type": "string"}}},
        }
    if not path.startswith("/v1"):
        return
    codes = {"401", "422", "503"} | ROUTE_ERRORS.get((method, path), {"403", "404", "409"})
    if "requestBody" in operation:
        codes |= {"400", "413"}
    for code in sorted(codes):
        responses[code] = _response(code, VALIDATION if code == "422" else ERROR)


def _response(code: str, schema: dict[str, Any], description: str | None = None) -> Any:
    return {
        "description": description or DESCRIPTIONS[code],
        "content": {"application/json": {"schema": schema}},
    }


def install(app: FastAPI) -> None:
    app.openapi = lambda: document(app)  # type: ignore[method-assign]
