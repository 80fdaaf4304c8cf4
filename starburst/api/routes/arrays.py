"""``/v1/arrays``: a job array as a whole (``starburst.api.arrays`` resolves the id).

Invariants: what a caller may do to an array is what they may do to each of its elements
(``routes.jobs``): users read and cancel their own arrays, finance reads anyone's, admins do
both. Cancelling an array cancels every element that has not ended (elements that ended are
left as they are), each with the reason ``cancelled by <user>``; the answer is the array
afterwards.
"""

from __future__ import annotations

from collections import Counter

from fastapi import APIRouter, HTTPException

from starburst.api.arrays import array_elements
from starburst.api.context import ApiContext
from starburst.api.deps import CallerDep, ContextDep, WriterDep
from starburst.api.outlooks import Outlooks
from starburst.api.routes.jobs import cancel as cancel_job
from starburst.api.schemas.arrays import ArrayView
from starburst.api.schemas.jobs import JobSummary
from starburst.core.records import StoredJob

router = APIRouter(prefix="/v1/arrays", tags=["jobs"])


def view(ctx: ApiContext, array: str, elements: list[StoredJob]) -> ArrayView:
    seen = Outlooks(ctx)
    user, _, short = array.partition("/")
    return ArrayView(
        id=short or array,
        user=user if short else None,
        limit=next((s.job.array_limit for s in elements if s.job.array_limit), None),
        states=dict(Counter(s.state.value for s in elements)),
        elements=[JobSummary.of(s, seen.of(s)) for s in elements],
    )


@router.post("/{array:path}/cancel", response_model=ArrayView)
def cancel(array: str, caller: WriterDep, ctx: ContextDep) -> ArrayView:
    """Cancel every element of the array that has not ended."""
    found, elements = array_elements(ctx, array, caller)
    for element in elements:
        if element.state.terminal:
            continue
        try:
            cancel_job(element.id, caller, ctx)
        except HTTPException as exc:
            if exc.status_code != 409:  # 409: it ended meanwhile, as cancelling wanted
                raise
    return view(ctx, found, ctx.store.jobs.array_elements(found))


@router.get("/{array:path}", response_model=ArrayView)
def status(array: str, caller: CallerDep, ctx: ContextDep) -> ArrayView:
    """The array's elements in index order, with a count per state."""
    found, elements = array_elements(ctx, array, caller)
    return view(ctx, found, elements)
