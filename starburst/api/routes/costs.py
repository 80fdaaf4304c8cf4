"""``/v1/costs``: who spent what, where and when, and what the policy saved.

Terms: a range ``[since, until)`` selects cost entries by the start of their period (the
store's rule); ``since``/``until`` accept ISO dates or datetimes (UTC when no zone is given)
and default to the current UTC month up to now.

Roles: finance and admins read every report; a user reads only their own spending (the
``user`` filter is forced to them).

Savings: the counterfactual "No-Wait" bill prices every job that ended in the range at the
cheapest on-demand cloud rate for its GPU type and count (the same price table bursts use),
for its measured runtime. Its limits: cloud start-up delays and spot prices are ignored, and
jobs with a GPU type the table does not know are priced as ``default_gpu`` when given, else
left out and counted in ``unpriced_jobs``.
"""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from typing import Annotated

from fastapi import APIRouter, HTTPException, Query

from starburst.adapters.db.records import Principal, Role
from starburst.api.context import ApiContext
from starburst.api.deps import CallerDep, ContextDep
from starburst.api.schemas.costs import CostReport, CostRow, CostTotal, Savings
from starburst.core.errors import ConfigError
from starburst.core.lifecycle import TERMINAL

router = APIRouter(prefix="/v1/costs", tags=["costs"])
CENT = Decimal("0.01")


def parse_when(text: str | None, default: datetime, name: str) -> datetime:
    if not text:
        return default
    try:
        moment = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise ConfigError(f"{name}: {text!r} is not a date or datetime such as 2026-11-01 "
                          "or 2026-11-01T12:00:00Z") from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _window(ctx: ApiContext, since: str | None, until: str | None) -> tuple[datetime, datetime]:
    now = datetime.fromtimestamp(ctx.clock.now(), UTC)
    month = now.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    start, end = parse_when(since, month, "since"), parse_when(until, now, "until")
    if end <= start:
        raise ConfigError(f"until ({end.isoformat()}) must be after since ({start.isoformat()})")
    return start, end


def _scope(caller: Principal, user: str | None) -> str | None:
    if caller.role in (Role.ADMIN, Role.FINANCE):
        return user
    if user not in (None, caller.user):
        raise HTTPException(403, f"{caller.user} can read only their own costs "
                            "(cost reports of others need the finance role)")
    return caller.user


@router.get("", response_model=CostReport)
def report(
    caller: CallerDep, ctx: ContextDep,
    since: str | None = None, until: str | None = None,
    by: Annotated[str, Query(description="Comma-separated: user, team, cloud, day, month.")]
    = "team",
    team: str | None = None, user: str | None = None, cloud: str | None = None,
) -> CostReport:
    """Spending in ``[since, until)`` grouped by ``by``, with totals per currency."""
    keys = [k.strip() for k in by.split(",") if k.strip()]
    start, end = _window(ctx, since, until)
    rows = ctx.store.cost_report(start.timestamp(), end.timestamp(), keys, team=team,
                                 user=_scope(caller, user), cloud=cloud)
    totals: dict[str, tuple[Decimal, float]] = {}
    for row in rows:
        amount, hours = totals.get(row.currency, (Decimal(0), 0.0))
        totals[row.currency] = (amount + row.amount, hours + row.gpu_hours)
    return CostReport(
        since=start, until=end, by=keys,
        rows=[CostRow(key=dict(r.key), amount=str(r.amount.quantize(CENT)), currency=r.currency,
                      gpu_hours=r.gpu_hours, entries=r.entries) for r in rows],
        totals=[CostTotal(amount=str(a.quantize(CENT)), currency=c, gpu_hours=h)
                for c, (a, h) in sorted(totals.items())],
    )


@router.get("/savings", response_model=Savings)
def savings(
    caller: CallerDep, ctx: ContextDep, since: str | None = None, until: str | None = None,
    default_gpu: Annotated[str | None, Query(
        description="Price jobs of unknown GPU type as this GPU (e.g. A100).")] = None,
) -> Savings:
    """Actual spending against bursting every job at once (No-Wait), same range."""
    if caller.role not in (Role.ADMIN, Role.FINANCE):
        raise HTTPException(403, f"{caller.user} has role {caller.role.value}; "
                            "savings need finance or admin")
    from starburst.pricing import load_price_table

    prices = ctx.prices or load_price_table(ctx.settings.price_table)
    start, end = _window(ctx, since, until)
    finished = ctx.store.history(since=start.timestamp(), until=end.timestamp(),
                                 states=sorted(TERMINAL))
    no_wait, hours, unpriced, currency = Decimal(0), 0.0, 0, "USD"
    for done in finished:
        job = done.job
        runtime = job.runtime or 0.0
        try:
            option = prices.price(job.gpu_type or default_gpu or "", max(job.gpus, 1))
        except ConfigError:
            if default_gpu is None:
                unpriced += 1
                continue
            option = prices.price(default_gpu, max(job.gpus, 1))
        hours += job.gpus * runtime / 3600
        no_wait += Decimal(str(option.price_per_hour)) * Decimal(str(runtime)) / Decimal(3600)
    actual = sum((r.amount for r in ctx.store.cost_report(
        start.timestamp(), end.timestamp(), ()) if r.currency == currency), Decimal(0))
    return Savings(
        since=start, until=end, jobs=len(finished) - unpriced, gpu_hours=hours,
        actual=str(actual.quantize(CENT)), no_wait=str(no_wait.quantize(CENT)),
        saved=str((no_wait - actual).quantize(CENT)),
        saved_fraction=float(1 - actual / no_wait) if no_wait > 0 else None,
        currency=currency, unpriced_jobs=unpriced,
        assumptions="No-Wait prices every finished job at the cheapest on-demand cloud rate "
        "for its GPUs and measured runtime; start-up delays and spot prices are ignored.",
    )
