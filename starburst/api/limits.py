"""Limits every request meets before any route runs: body size, and no control characters.

``RequestLimits`` is a small ASGI middleware in front of the app:
- a body larger than ``MAX_BODY_BYTES`` (by its ``Content-Length``, or counted while it
  streams in: the body is read, up to the limit, before the app runs) is answered 413
  ``{"detail": ...}``;
- a ``/v1`` path or query string holding a control character (``core.controls``: C0, DEL,
  C1 and bidirectional controls; after percent-decoding) is answered 422: no job id, user,
  team or filter may carry one (a NUL byte used to reach PostgreSQL and come back as a 500).

The OpenAPI document declares both (``openapi.py``): 413 on routes that take a body, and a
``pattern`` excluding control characters on every string path and query parameter.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any
from urllib.parse import unquote_to_bytes

from starburst.core.controls import CONTROLS

MAX_BODY_BYTES = 2 * 1024 * 1024
#: a JSON-Schema pattern for strings without control characters (names, labels, ids): none
#: may reach a terminal's escape handling or read backwards (``core.controls``)
NO_CONTROL = f"^[^{CONTROLS}]*$"
_CONTROL = re.compile(f"[{CONTROLS}]")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]


def has_control(raw: bytes) -> bool:
    return _CONTROL.search(raw.decode("utf-8", "replace")) is not None


async def _answer(send: Send, status: int, detail: str) -> None:
    body = json.dumps({"detail": detail}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


class RequestLimits:
    """The ASGI middleware described in the module docstring."""

    def __init__(self, app: App, max_body: int = MAX_BODY_BYTES) -> None:
        self.app = app
        self.max_body = max_body

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        problem = self._bad_target(scope)
        if problem is not None:
            await _answer(send, 422, problem)
            return
        declared = dict(scope.get("headers") or ()).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_body:
            await _answer(send, 413, self._too_large())
            return
        await self._guarded(scope, receive, send)

    async def _guarded(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Read the body (at most ``max_body`` bytes) before the app runs, then replay it."""
        messages: list[Message] = []
        seen = 0
        while True:
            message = await receive()
            messages.append(message)
            if message.get("type") != "http.request":
                break  # a disconnect: the app sees it as it would have
            seen += len(message.get("body", b""))
            if seen > self.max_body:
                await _answer(send, 413, self._too_large())
                return
            if not message.get("more_body", False):
                break

        async def replay() -> Message:
            return messages.pop(0) if messages else await receive()

        await self.app(scope, replay, send)

    def _too_large(self) -> str:
        return f"request body larger than {self.max_body} bytes"

    @staticmethod
    def _bad_target(scope: Scope) -> str | None:
        path = scope.get("path", "")
        if not path.startswith("/v1"):
            return None
        if has_control(path.encode("utf-8", "surrogatepass")):
            return "invalid request: the path holds a control character"
        if has_control(unquote_to_bytes(scope.get("query_string", b""))):
            return "invalid request: a query parameter holds a control character"
        return None
