"""API errors as the Kubernetes API server reports them: ``Status`` objects with a code.

Every failed request answers with a ``meta.k8s.io/v1`` ``Status`` body (``kind: Status``,
``status: Failure``, a machine ``reason`` such as ``NotFound``/``AlreadyExists``/``Conflict``/
``Expired``, a human ``message`` and ``details``), exactly the shape the official client turns
into ``ApiException`` and that a watch carries inside an ``ERROR`` event.
"""

from __future__ import annotations

from typing import Any


class ApiError(Exception):
    """A request the stand-in refuses; ``status()`` is the body it answers with."""

    def __init__(
        self, code: int, reason: str, message: str, details: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.code, self.reason, self.message = code, reason, message
        self.details = details or {}
        self.headers = headers or {}

    def status(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }
        if self.details:
            body["details"] = self.details
        return body


def not_found(plural: str, group: str, name: str) -> ApiError:
    what = f"{plural}.{group}" if group else plural
    return ApiError(
        404, "NotFound", f'{what} "{name}" not found',
        {"name": name, "group": group, "kind": plural},
    )


def already_exists(plural: str, group: str, name: str) -> ApiError:
    what = f"{plural}.{group}" if group else plural
    return ApiError(
        409, "AlreadyExists", f'{what} "{name}" already exists',
        {"name": name, "group": group, "kind": plural},
    )


def conflict(plural: str, group: str, name: str, why: str) -> ApiError:
    what = f"{plural}.{group}" if group else plural
    return ApiError(
        409, "Conflict", f'Operation cannot be fulfilled on {what} "{name}": {why}',
        {"name": name, "group": group, "kind": plural},
    )


def bad_request(message: str) -> ApiError:
    return ApiError(400, "BadRequest", message)


def invalid(kind: str, name: str, message: str) -> ApiError:
    return ApiError(
        422, "Invalid", f'{kind} "{name}" is invalid: {message}', {"name": name, "kind": kind}
    )


def expired(message: str) -> ApiError:
    return ApiError(410, "Expired", message)


def success(name: str, group: str, plural: str, uid: str) -> dict[str, Any]:
    """The ``Status`` a delete answers with for resources that do not return the object."""
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": {"name": name, "group": group, "kind": plural, "uid": uid},
    }
