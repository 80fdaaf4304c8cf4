"""Price ceilings checked at submission: a job whose cloud run would cost more per hour than
its job ceiling (on by default, ``starburst.core.price_ceilings``), or that would take its team's
cloud spend rate above ``max_team_cloud_price``, is refused with the price, the reason and
the setting that allows it (422) before it is stored. Both are checked again when a job
bursts (``starburst.controller.loop.burst_ceiling``); ``burst_hold`` words the team hold for
``explain``. The same check answers ``POST /v1/jobs/quote`` (``submit --dry-run``).

Terms:
- *job price*: the cheapest cloud quote for the job (the same quote the controller bursts
  with, ``ApiContext.quote``), in $/h.
- *team rate*: what the team runs in the cloud now (``starburst.core.price_ceilings``, the rule the
  controller checks again when a job bursts), plus the new job's price.

A job no cloud can price (no cloud configured, or a GPU type found only on-prem, named in
``onprem_rates``) is not refused here: it cannot burst, so it cannot spend. A GPU type
nothing names is refused with the valid ones, and so is a *cloud choice* (a cloud, region or
spot-ness, ``starburst.core.cloud_choice``) that nothing can price, with the reason (the
clouds that do price it), since the researcher asked for a cloud that cannot be had.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

from fastapi import HTTPException

from starburst.api.context import ApiContext
from starburst.api.finance import BurstQuote
from starburst.core.cloud_choice import CLOUDS, REGIONS, USE_SPOT
from starburst.core.cycle import NO_TEAM
from starburst.core.errors import StarburstError
from starburst.core.holds import holds
from starburst.core.job import Job
from starburst.core.ports import Quote
from starburst.core.price_ceilings import (
    JobCeiling,
    exceeds,
    held_reason,
    over_job_ceiling,
    refused_reason,
    team_cloud_rate,
)
from starburst.core.records import JobSpec, StoredJob
from starburst.pricing import PriceTable, canonical_gpu, default_price_table, load_price_table

_CHOICES = (USE_SPOT, CLOUDS, REGIONS)


@dataclass(frozen=True, slots=True)
class Priced:
    """What a submission would cost if it burst: the quote (None: it cannot burst) and the
    job ceiling it was checked against (None: no cloud, so none applies)."""

    quote: Quote | None
    ceiling: JobCeiling | None


def chosen(spec: JobSpec) -> bool:
    """Whether the job chose a cloud, region or spot-ness (``check`` prices the choice)."""
    return any(key in spec.extra for key in _CHOICES)


def price_table(ctx: ApiContext) -> PriceTable:
    """The table the cloud prices bursts from: the app's, else the settings' (read once)."""
    if ctx.prices is not None:
        return ctx.prices  # type: ignore[no-any-return]
    path = ctx.settings.price_table
    return _load(path) if path is not None else default_price_table()


@functools.lru_cache(maxsize=4)
def _load(path: Path) -> PriceTable:
    return load_price_table(path)


def waits(ctx: ApiContext, spec: JobSpec) -> bool:
    """Whether ``check`` may wait on I/O, so belongs in a worker thread: the team ceiling
    reads the store, and until the cloud is built the first quote imports its adapter and
    reads the price table. Otherwise it only computes, faster than a thread's hand-off."""
    if ctx.settings.max_team_cloud_price is not None and spec.team is not None:
        return True
    return not (isinstance(ctx.quote, BurstQuote) and ctx.quote.built)


def check(ctx: ApiContext, spec: JobSpec) -> Priced:
    """Raise 422 naming the price, the ceiling and the setting that allows it when the job
    ceiling or the team ceiling is exceeded, or the reason when the job's GPU type or cloud
    choice cannot be priced (see the module docstring); else what it would cost."""
    quoter = ctx.quote() if ctx.quote is not None and spec.gpus > 0 else None
    if quoter is None:
        return Priced(None, None)
    table = price_table(ctx)
    _known_gpu(ctx, table, spec.gpu_type)
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
    ceiling = ctx.settings.job_ceilings(table).of(spec.team)
    try:
        quote = quoter(job)
    except StarburstError as exc:
        if chosen(spec):
            why = str(exc).removeprefix(f"job {job.id}: ")
            raise HTTPException(422, f"this job cannot burst as asked: {why}") from None
        return Priced(None, ceiling)  # no offer (a type only on-prem): it cannot burst
    price = quote.price_per_hour
    shape = f"{quote.accelerators} at {quote.where}"
    if ceiling is not None and price > ceiling.price:
        raise HTTPException(422, over_job_ceiling(spec.team, price, shape, ceiling))
    per_team = ctx.settings.max_team_cloud_price
    if per_team is not None and spec.team is not None:
        running = team_cloud_rate(ctx.store.jobs, ctx.store.ledger, spec.team)
        if exceeds(running, price, per_team):
            raise HTTPException(422, refused_reason(spec.team, running, price, shape, per_team))
    return Priced(quote, ceiling)


def _known_gpu(ctx: ApiContext, table: PriceTable, gpu: str | None) -> None:
    """Refuse a GPU type neither the price table nor ``onprem_rates`` names (a typo such
    as H200 would otherwise be stored, then fail when it bursts)."""
    if gpu is None or canonical_gpu(gpu) in table.gpus:
        return
    if canonical_gpu(gpu) in {canonical_gpu(k) for k in ctx.settings.onprem_rates if k != "*"}:
        return
    raise HTTPException(
        422,
        f"unknown GPU type {gpu}: the clouds price {', '.join(table.gpus)} (a type found "
        "only on-prem needs its internal rate in the server's onprem_rates)",
    )


def budget_hold(ctx: ApiContext, team: str | None) -> str | None:
    """Why a job of ``team`` waits past its budget now: its team's budget is spent, or,
    with no team, the no-team budget (``core.holds``), or None."""
    limit = Decimal(str(ctx.settings.no_team_cloud_budget))
    held = holds(ctx.store.accounts, ctx.store.ledger, ctx.clock.now(), limit)
    return held.get(NO_TEAM if team is None else team)


def burst_hold(ctx: ApiContext, stored: StoredJob) -> str | None:
    """Why a queued job past its budget waits instead of bursting because of the team
    ceiling (the controller's check, ``starburst.controller.loop.burst_ceiling``), or None."""
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
