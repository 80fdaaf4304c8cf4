"""API errors as the Kubernetes API server reports them: ``Status`` objects with a code.

Every failed request answers with a ``meta.k8s.io/v1`` ``Status`` body (``kind: Status``,
``status: Failure``, a machine ``reason`` such as ``NotFound``/``AlreadyExists``/``Conflict``/
``Expired``, a human ``message`` and ``details``), exactly the shape the official client turns
into ``ApiException`` and that a watch carries inside an ``ERROR`` event.
"""

from __future__ import annotations

import re
from typing import Any


class ApiError(Exception):
    """A request the stand-in refuses; ``status()`` is the body it answers with."""

    def __init__(
        self,
        code: int,
        reason: str,
        message: str,
        details: dict[str, Any] | None = None,
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


def _details(name: str, group: str, plural: str) -> dict[str, Any]:
    """A Status's details; the group is left out for the core group (``omitempty``)."""
    return (
        {"name": name, "group": group, "kind": plural} if group else {"name": name, "kind": plural}
    )


def not_found(plural: str, group: str, name: str) -> ApiError:
    what = f"{plural}.{group}" if group else plural
    return ApiError(
        404,
        "NotFound",
        f'{what} "{name}" not found',
        _details(name, group, plural),
    )


def already_exists(plural: str, group: str, name: str) -> ApiError:
    what = f"{plural}.{group}" if group else plural
    return ApiError(
        409,
        "AlreadyExists",
        f'{what} "{name}" already exists',
        _details(name, group, plural),
    )


def conflict(plural: str, group: str, name: str, why: str) -> ApiError:
    what = f"{plural}.{group}" if group else plural
    return ApiError(
        409,
        "Conflict",
        f'Operation cannot be fulfilled on {what} "{name}": {why}',
        _details(name, group, plural),
    )


def bad_request(message: str) -> ApiError:
    return ApiError(400, "BadRequest", message)


#: the API group of the kinds the stand-in validates (a real server names them ``Kind.group``)
_GROUPS = {"Job": "batch", "Lease": "coordination.k8s.io"}
#: field error types as Kubernetes words them in a message, and their ``causes`` reasons
_CAUSES = {
    "Invalid value": "FieldValueInvalid",
    "Required value": "FieldValueRequired",
    "Forbidden": "FieldValueForbidden",
    "Unsupported value": "FieldValueNotSupported",
    "Duplicate value": "FieldValueDuplicate",
    "Not found": "FieldValueNotFound",
    "Too long": "FieldValueTooLong",
    "Too many": "FieldValueTooMany",
}
_FIELD_ERROR = re.compile(r"(?:^|, )([A-Za-z][\w.\[\]/-]*): (" + "|".join(_CAUSES) + ")")


def causes(message: str) -> list[dict[str, str]]:
    """``details.causes`` of a 422 as a real server lists them: one per field error in
    ``message`` (``field: Type: detail``, several inside ``[...]`` separated by ``, ``)."""
    text = message[1:-1] if message.startswith("[") and message.endswith("]") else message
    found = list(_FIELD_ERROR.finditer(text))
    out = []
    for i, match in enumerate(found):
        end = found[i + 1].start() if i + 1 < len(found) else len(text)
        detail = text[match.start(2) : end]
        out.append({"reason": _CAUSES[match.group(2)], "message": detail, "field": match.group(1)})
    return out


def invalid(kind: str, name: str, message: str) -> ApiError:
    """422 Invalid for ``kind`` (bare, or already ``Kind.group``) with its field causes."""
    bare, _, group = kind.partition(".")
    group = group or _GROUPS.get(bare, "")
    qualified = f"{bare}.{group}" if group else bare
    details: dict[str, Any] = {"name": name, "kind": bare}
    if group:
        details["group"] = group
    if found := causes(message):
        details["causes"] = found
    return ApiError(422, "Invalid", f'{qualified} "{name}" is invalid: {message}', details)


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
