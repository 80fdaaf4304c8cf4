"""``POST /v1/jobs``'s answer as bytes, for the fast path (``starburst.api.fastsubmit``).

The route answers with a ``JobDetail``: ``detail`` builds it (pydantic validates its 35
fields) and FastAPI serialises it. For a job that never moved (*fresh*: just made, or a
repeat of its key before admission, ``routes.jobs.answer``), ``fresh_reply`` builds the
same field values directly, each of the type validation would give it (a float field's
``1`` is ``1.0``), in the model's field order, and serialises them with pydantic-core's own
serializer (``to_json``): the bytes FastAPI sends, without the model. ``reply`` sends them
as Starlette's ``Response`` would (``Content-Length``, then ``Content-Type``).

Invariant: the bytes equal ``JobDetail.model_dump_json(by_alias=True)`` of ``detail`` for
every fresh job; ``tests/api/test_fast_submit.py`` compares them with the route's.
"""

from __future__ import annotations

from types import NoneType, UnionType
from typing import Any, get_args

import pydantic_core
from starlette.types import Send

from starburst.api.context import ApiContext
from starburst.api.outlooks import Outlooks
from starburst.api.routes.jobs import answer, elapsed, exit_code
from starburst.api.schemas.jobs import JobDetail, summary_fields
from starburst.core.lifecycle import JobState
from starburst.core.records import FIRST_VERSION, StoredJob, Submission

#: JobDetail's fields in their order, and those validation makes floats of
_FIELDS = tuple(JobDetail.model_fields)
_FLOATS = tuple(
    name
    for name, info in JobDetail.model_fields.items()
    if info.annotation is float
    or (
        isinstance(info.annotation, UnionType)
        and set(get_args(info.annotation)) == {float, NoneType}
    )
)
_JSON = b"application/json"


async def reply(ctx: ApiContext, result: Submission) -> tuple[int, bytes]:
    """``routes.jobs.answer``'s status and its ``JobDetail`` as FastAPI serialises it."""
    stored = result.job
    if (result.created or stored.version == FIRST_VERSION) and stored.state is not JobState.FAILED:
        return 201 if result.created else 200, fresh_reply(ctx, stored)
    status, out = await answer(ctx, result)
    return status, out.model_dump_json(by_alias=True).encode()


def fresh_reply(ctx: ApiContext, stored: StoredJob) -> bytes:
    """``detail(ctx, stored, fresh=True)``, serialised (module docstring)."""
    job = stored.job
    values: dict[str, Any] = summary_fields(stored, Outlooks(ctx).of(stored))
    values.update(
        elapsed_s=elapsed(stored, ctx.clock.now()),
        exit_code=exit_code(stored, None),
        costs=[],
        command=stored.command,
        cpus=job.cpus,
        memory_mb=job.memory_mb,
        estimate_s=job.estimate,
        runtime_s=job.runtime,
        version=stored.version,
        placement=[],
        cloud=[],
        failure=None,
        cost_so_far="0.00",
        currency="USD",
    )
    for name in _FLOATS:
        if values[name] is not None:
            values[name] = float(values[name])
    return pydantic_core.to_json({name: values[name] for name in _FIELDS})


async def send_json(send: Send, status: int, body: bytes) -> None:
    """``body`` as Starlette's ``Response(body, status, media_type="application/json")``
    sends it: the same two messages, the same headers in the same order."""
    headers = [(b"content-length", str(len(body)).encode("latin-1")), (b"content-type", _JSON)]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
