"""The fast path of ``POST /v1/jobs``: a well-formed submission skips FastAPI's machinery.

A sweep script's submissions are all alike: a JSON body, a bearer token, maybe an
``Idempotency-Key``. For each, FastAPI and Starlette pass the request through their
middleware, match the route among all the others, resolve the dependency graph, validate
the body, then validate and serialise the response again; on two cores that was most of a
submission's server time. ``SubmitFastPath`` (plain ASGI, in front of the whole app:
``StarburstApi.front``) answers such a request itself with the route's own steps —
``caller_of`` (the same authentication), ``JobSubmit`` (the same validation), ``accept`` (the
same submission), ``answer`` and ``JobDetail`` (the same response, as FastAPI serialises it;
for a job that never moved built as bytes directly, ``starburst.api.replies``)
— and what the layers it skips gave it: the body limit (``RequestLimits``: a body over it
is the app's 413), the wake after a write (``ApiContext.wake``), and, around it in
``create_app``, the 500 of an unexpected error (``errors.CatchUnexpected``).

Invariant: the fast path answers only what the route would answer the same way. It takes
``POST /v1/jobs`` with no query string, ``Content-Type: application/json``, a JSON object
that ``JobSubmit`` accepts, at most one ``Idempotency-Key`` of 1–128 characters and a caller
``caller_of`` accepts; for anything else, and whenever a step up to the submission raises (a
401/403/409/422 to word, a database error), it hands the request, body replayed, to the app,
which repeats the steps and answers as it always did. Repeating is safe: ``accept`` raises
only before anything is stored. Once a job is stored, nothing is repeated: an error while
answering is the 500 the app would give.
``tests/api/test_fast_submit.py`` compares both paths' answers.
"""

from __future__ import annotations

import json
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from starburst.api.context import ApiContext
from starburst.api.deps import caller_of
from starburst.api.limits import MAX_BODY_BYTES
from starburst.api.replies import reply, send_json
from starburst.api.routes.jobs import accept
from starburst.api.schemas.jobs import JobSubmit
from starburst.core.records import Submission

MAX_KEY = 128  # as the route's ``Header(max_length=128)``


class SubmitFastPath:
    """ASGI middleware: answers well-formed ``POST /v1/jobs`` requests directly; ``app``
    answers the rest."""

    def __init__(self, app: ASGIApp, context: ApiContext, max_body: int = MAX_BODY_BYTES) -> None:
        self.app = app
        self.ctx = context
        self.max_body = max_body

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if not candidate(scope):
            await self.app(scope, receive, send)
            return
        messages, whole = await _read(scope, receive, self.max_body)
        result = await self._accept(scope, messages) if whole else None
        if result is None:
            await self.app(scope, _replay(messages, receive), send)
            return
        status, payload = await reply(self.ctx, result)
        await send_json(send, status, payload)
        if self.ctx.wake is not None:
            self.ctx.wake()

    async def _accept(self, scope: Scope, messages: list[Message]) -> Submission | None:
        """The stored submission, or None: leave this request to the app."""
        headers = _headers(scope)
        if headers is None:
            return None
        body = b"".join(m.get("body", b"") for m in messages if m["type"] == "http.request")
        try:
            data = json.loads(body)
            if not isinstance(data, dict):
                return None
            submission = JobSubmit.model_validate(data)
            caller = await caller_of(self.ctx, headers.get("authorization", ""))
            return await accept(self.ctx, submission, caller, headers.get("key"))
        except Exception:  # the app repeats the steps and words the answer (module docstring)
            return None


def candidate(scope: Scope) -> bool:
    """A request the fast path may answer: ``POST /v1/jobs`` without a query string."""
    return (
        scope["type"] == "http"
        and scope["method"] == "POST"
        and scope["path"] == "/v1/jobs"
        and not scope.get("query_string")
    )


def _headers(scope: Scope) -> dict[str, str] | None:
    """The headers the fast path reads, or None when they are not the plain case."""
    content_type, authorization, keys = None, "", []
    for name, value in scope["headers"]:
        if name == b"content-type":
            content_type = value
        elif name == b"authorization" and not authorization:  # the first, as Starlette reads
            authorization = value.decode("latin-1")
        elif name == b"idempotency-key":
            keys.append(value.decode("latin-1"))
    if content_type != b"application/json" or len(keys) > 1:
        return None
    found = {"authorization": authorization}
    if keys:
        if not 0 < len(keys[0]) <= MAX_KEY:
            return None
        found["key"] = keys[0]
    return found


async def _read(scope: Scope, receive: Receive, limit: int) -> tuple[list[Message], bool]:
    """The messages of the request body, and whether they are all of it within ``limit``
    bytes. Reading stops at the first sign of a larger body (its ``Content-Length``, or
    what came in so far): the app's ``RequestLimits`` then reads the rest and answers 413."""
    for name, value in scope["headers"]:
        if name == b"content-length" and value.isdigit() and int(value) > limit:
            return [], False
    messages = []
    seen = 0
    while True:
        message = await receive()
        messages.append(message)
        if message["type"] != "http.request":
            return messages, False  # a disconnect: the app sees it as it would have
        seen += len(message.get("body", b""))
        if seen > limit:
            return messages, False
        if not message.get("more_body", False):
            return messages, True


def _replay(messages: list[Message], receive: Receive) -> Any:
    pending = list(messages)

    async def replay() -> Message:
        return pending.pop(0) if pending else await receive()

    return replay
