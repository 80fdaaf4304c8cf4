"""Price ceilings checked at submission: a job whose cloud run would cost more per hour than
``max_job_cloud_price``, or that would take its team's cloud spend rate above
``max_team_cloud_price``, is refused with the price (422) before it is stored. The team
ceiling is checked again when a job bursts (``starburst.controller.ceiling``); ``burst_hold``
words that hold for ``explain``.

Terms:
- *job price*: the cheapest cloud quote for the job (the same quote the controller bursts
  with, ``ApiContext.quote``), in $/h.
- *team rate*: what the team runs in the cloud now (``starburst.core.ceilings``, the rule the
  controller checks again when a job bursts), plus the new job's price.

A job no cloud can price (no cloud configured, or no offer for its GPU type) is not refused
here: it cannot burst, so it cannot spend. Unless it made a *cloud choice* (a cloud, region or
spot-ness, ``starburst.core.cloud_choice``) that nothing can price: that is refused with the
reason, since the researcher asked for a cloud that cannot be had.
"""

from __future__ import annotations

from decimal import Decimal

from fastapi import HTTPException

from starburst.api.context import ApiContext
from starburst.core.ceilings import exceeds, held_reason, refused_reason, team_cloud_rate
from starburst.core.cloud_choice import CLOUDS, REGIONS, USE_SPOT
from starburst.core.cycle import NO_TEAM
from starburst.core.errors import StarburstError
from starburst.core.holds import holds
from starburst.core.job import Job
from starburst.core.records import JobSpec, StoredJob

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
        running = team_cloud_rate(ctx.store.jobs, ctx.store.ledger, spec.team)
        if exceeds(running, price, per_team):
            raise HTTPException(422, refused_reason(spec.team, running, price, shape, per_team))


def budget_hold(ctx: ApiContext, team: str | None) -> str | None:
    """Why a job of ``team`` waits past its budget now: its team's budget is spent, or,
    with no team, the no-team budget (``core.holds``), or None."""
    limit = Decimal(str(ctx.settings.no_team_cloud_budget))
    held = holds(ctx.store.accounts, ctx.store.ledger, ctx.clock.now(), limit)
    return held.get(NO_TEAM if team is None else team)


def burst_hold(ctx: ApiContext, stored: StoredJob) -> str | None:
    """Why a queued job past its budget waits instead of bursting because of the team
    ceiling (the controller's check, ``starburst.controller.ceiling``), or None."""
    per_team, team = ctx.settings.max_team_cloud_price, stored.job.team
    if per_team is None or team is None or ctx.quote is None or stored.job.gpus <= 0:
        return None
    quoter = ctx.quote()
    if quoter is None:
        return None
    try:
        quote = quoter(stored.job)
    except StarburstError:
        return None
    rate = team_cloud_rate(ctx.store.jobs, ctx.store.ledger, team)
    if not exceeds(rate, quote.price_per_hour, per_team):
        return None
    shape = f"{quote.accelerators} at {quote.where}"
    return held_reason(team, rate, quote.price_per_hour, shape, per_team)
