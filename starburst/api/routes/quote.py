"""``POST /v1/jobs/quote``: a submission checked exactly as ``POST /v1/jobs`` checks it (the
same refusals, with the same 4xx and words) and nothing stored: where the job would go and
what it would cost per hour in the cloud (``starburst submit --dry-run``).

Invariant: the quote and the submission share ``routes.jobs.checked``, so a quote that
passes is a submission that passes, at the price the controller would burst with.
"""

from __future__ import annotations

from fastapi import APIRouter
from starlette.concurrency import run_in_threadpool

from starburst.api import submit_ceilings
from starburst.api.deps import ContextDep, WriterDep
from starburst.api.routes.jobs import checked
from starburst.api.schemas.jobs import JobSubmit
from starburst.api.schemas.quote import JobQuote

router = APIRouter(prefix="/v1/jobs", tags=["jobs"])


@router.post("/quote", response_model=JobQuote)
async def quote(body: JobSubmit, caller: WriterDep, ctx: ContextDep) -> JobQuote:
    """Where the job would go and its cloud price per hour; the submission's 4xx if it
    would be refused. Nothing is stored."""
    spec, priced = await checked(ctx, body, caller)
    hold = (
        await run_in_threadpool(submit_ceilings.budget_hold, ctx, spec.team)
        if spec.gpus > 0
        else None
    )
    q, ceiling = priced.quote, priced.ceiling
    if q is None:
        why = "no GPUs to rent" if spec.gpus == 0 else "no cloud prices it"
        summary = f"runs on-prem only ({why}), when GPUs free up"
    else:
        burst = f"bursts to {q.where} as {q.accelerators} at ${q.price_per_hour:,.2f}/h"
        under = f" (under the ${ceiling.price:,.2f}/h job ceiling)" if ceiling else ""
        summary = (
            f"waits on-prem, past its wait budget too: {hold}"
            if hold
            else f"starts on-prem when GPUs free up within its wait budget, else {burst}{under}"
        )
    return JobQuote(
        summary=summary,
        team=spec.team,
        price_per_hour=q.price_per_hour if q else None,
        where=q.where if q else None,
        shape=q.accelerators if q else None,
        ceiling_per_hour=ceiling.price if ceiling else None,
        ceiling_source=ceiling.source if ceiling else None,
        hold=hold,
    )
