"""Price ceilings checked at submission: a job whose cloud run would cost more per hour than
``max_job_cloud_price``, or that would take its team's cloud spend rate above
``max_team_cloud_price``, is refused with the price (422) before it is stored.

Terms:
- *job price*: the cheapest cloud quote for the job (the same quote the controller bursts
  with, ``ApiContext.quote``), in $/h.
- *team rate*: the hourly prices of the team's launches of jobs now bursting or running in
  the cloud, plus the new job's price.

A job no cloud can price (no cloud configured, or no offer for its GPU type) is not refused
here: it cannot burst, so it cannot spend. Unless it made a *cloud choice* (a cloud, region or
spot-ness, ``starburst.core.cloud_choice``) that nothing can price: that is refused with the
reason, since the researcher asked for a cloud that cannot be had.
"""

from __future__ import annotations

from decimal import Decimal

from fastapi import HTTPException

from starburst.api.context import ApiContext
from starburst.core.cloud_choice import CLOUDS, REGIONS, USE_SPOT
from starburst.core.errors import StarburstError
from starburst.core.job import Job
from starburst.core.lifecycle import JobState
from starburst.core.records import JobSpec

_IN_CLOUD = (JobState.BURSTING, JobState.RUNNING_CLOUD)
_CHOICES = (USE_SPOT, CLOUDS, REGIONS)


def configured(ctx: ApiContext) -> bool:
    """Whether any ceiling is set (else ``check`` has nothing to do)."""
    settings = ctx.settings
    return settings.max_job_cloud_price is not None or settings.max_team_cloud_price is not None


def chosen(spec: JobSpec) -> bool:
    """Whether the job chose a cloud, region or spot-ness (``check`` prices the choice)."""
    return any(key in spec.extra for key in _CHOICES)


def check(ctx: ApiContext, spec: JobSpec) -> None:
    """Raise 422 naming the price when a ceiling is exceeded, or the reason when the job's
    cloud choice cannot be priced (see the module docstring)."""
    per_job = ctx.settings.max_job_cloud_price
    per_team = ctx.settings.max_team_cloud_price
    choice = chosen(spec)
    if (per_job is None and per_team is None and not choice) or ctx.quote is None:
        return
    if spec.gpus <= 0:
        return
    quoter = ctx.quote()
    if quoter is None:
        return
    job = Job(
        id="price-check",
        submit_time=0.0,
        gpus=spec.gpus,
        cpus=spec.cpus,
        memory_mb=spec.memory_mb,
        gpu_type=spec.gpu_type,
        team=spec.team,
        extra=dict(spec.extra),
    )
    try:
        quote = quoter(job)
    except StarburstError as exc:
        if choice:
            why = str(exc).removeprefix(f"job {job.id}: ")
            raise HTTPException(422, f"this job cannot burst as asked: {why}") from None
        return  # no offer: it cannot burst
    price = quote.price_per_hour
    shape = f"{quote.accelerators} at {quote.where}"
    if per_job is not None and price > per_job:
        raise HTTPException(
            422,
            f"this job would cost ${price:,.2f}/h in the cloud ({shape}), "
            f"above the per-job ceiling of ${per_job:,.2f}/h",
        )
    if per_team is not None and spec.team is not None:
        running = _team_rate(ctx, spec.team)
        if running + Decimal(str(price)) > Decimal(str(per_team)):
            raise HTTPException(
                422,
                (
                    f"team {spec.team} runs ${running:,.2f}/h in the cloud now; this job "
                    f"(${price:,.2f}/h, {shape}) would take it above its ceiling of "
                    f"${per_team:,.2f}/h"
                ),
            )


def _team_rate(ctx: ApiContext, team: str) -> Decimal:
    total = Decimal(0)
    cursor: str | None = None
    while True:
        page = ctx.store.queue(limit=500, cursor=cursor, states=_IN_CLOUD, team=team)
        for stored in page.jobs:
            launches = ctx.store.launches(stored.id)
            if launches:
                total += Decimal(str(launches[-1].hourly_price))
        cursor = page.next_cursor
        if cursor is None:
            return total
