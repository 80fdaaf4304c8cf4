"""``/v1/costs``: who spent what, where and when, what the private cluster was used for, and
what the policy saved. Every figure is read from the ledger (``starburst.api.finance``).

Terms: a range ``[since, until)`` selects ledger entries by the start of their period (the
store's rule); ``since``/``until`` take what every window takes (``core.window``: ``30d``
back from now, ISO dates, datetimes with a zone offset, UTC when none is given) and default
to the current UTC month up to now. Periods (day, week, month) are UTC.

Formats: JSON by default; CSV with ``format=csv`` or ``Accept: text/csv``. Rows add up to
the totals exactly at the printed precision (largest-remainder apportionment,
``core.apportion``), except with ``top``, whose rows are only the highest.

Roles: finance and admins read every report; a user reads only their own spending (the
``user`` filter is forced to them, and the report's ``scope`` says so). Savings need finance
or admin.
"""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from typing import Annotated

from fastapi import APIRouter, HTTPException, Query, Request, Response
from fastapi.responses import StreamingResponse

from starburst.api import finance
from starburst.api.context import ApiContext
from starburst.api.deps import CallerDep, ContextDep
from starburst.api.routes.accounts import budget_out
from starburst.api.schemas.accounts import BudgetOut
from starburst.api.schemas.costs import CostReport, CostTotal, Savings, UnpricedJob
from starburst.core.apportion import HOURS, exact
from starburst.core.billing import month_window
from starburst.core.errors import ConfigError
from starburst.core.holds import budget_states
from starburst.core.records import CostTotal as StoredTotal
from starburst.core.records import Principal, Role
from starburst.core.window import parse_window
from starburst.savings import compare_with_no_wait, fraction_saved

router = APIRouter(prefix="/v1/costs", tags=["costs"])

KEYS_HELP = (
    "Comma-separated, any of: team, user, project (or label), cloud, region, "
    "location, gpu_type, source, job, day, week, month."
)


def window(ctx: ApiContext, since: str | None, until: str | None) -> tuple[datetime, datetime]:
    """``[since, until)`` by the one window parser (``core.window``): durations back from
    now (``30d``), ISO dates or datetimes; by default this UTC month up to now."""
    now = ctx.clock.now()
    month, _, _ = month_window(now)
    start, end = parse_window(since, until, now=now, default_since=month)
    return datetime.fromtimestamp(start, UTC), datetime.fromtimestamp(end, UTC)


def scope_of(caller: Principal, user: str | None) -> str | None:
    if caller.role in (Role.ADMIN, Role.FINANCE):
        return user
    if user not in (None, caller.user):
        raise HTTPException(
            403,
            f"{caller.user} can read only their own costs "
            "(cost reports of others need the finance role)",
        )
    return caller.user


def wants_csv(request: Request, fmt: str | None) -> bool:
    if fmt is not None:
        if fmt not in ("json", "csv"):
            raise ConfigError(f"format: {fmt!r} is not json or csv")
        return fmt == "csv"
    return "text/csv" in request.headers.get("accept", "")


def build_report(
    ctx: ApiContext,
    caller: Principal,
    since: str | None,
    until: str | None,
    by: str,
    *,
    team: str | None = None,
    user: str | None = None,
    cloud: str | None = None,
    project: str | None = None,
    job: str | None = None,
    top: int | None = None,
) -> CostReport:
    """The report as the route and the dashboard serve it."""
    keys = list(dict.fromkeys(k.strip() for k in by.split(",")))  # by=team,team: once
    start, end = window(ctx, since, until)
    user = scope_of(caller, user)
    rates = ctx.settings.onprem_rates

    def read(by: list[str], top: int | None = None) -> list[StoredTotal]:
        return ctx.store.ledger.cost_report(
            start.timestamp(),
            end.timestamp(),
            by,
            team=team,
            user=user,
            cloud=cloud,
            project=project,
            job=job,
            rates=rates,
            top=top,
        )

    selected = read(keys, top)  # top: ranked by the store; the totals then read on their own
    if "gpu_type" in keys:
        selected = finance.one_gpu_type_per_row(selected)
    rows = finance.report_rows(selected)  # apportioned: they add up to the totals below
    totals = selected if top is None else read([])
    money: dict[str, tuple[Decimal, Decimal]] = {}
    used: dict[str, tuple[Decimal, Decimal]] = {}
    for t in totals:
        cloud_money, shown = money.get(t.currency, (Decimal(0), Decimal(0)))
        money[t.currency] = (cloud_money + t.amount, shown + t.onprem_amount)
        cloud_hours, onprem_hours = used.get(t.currency, (Decimal(0), Decimal(0)))
        used[t.currency] = (
            cloud_hours + exact(t.gpu_hours),
            onprem_hours + exact(t.onprem_gpu_hours),
        )
    scope = f"user {user}" if user else f"team {team}" if team else "all"
    return CostReport(
        since=start,
        until=end,
        by=[k for k in keys if k],
        scope=scope,
        rows=rows,
        totals=[
            CostTotal(
                amount=finance.money(a),
                currency=c,
                gpu_hours=float(used[c][0].quantize(HOURS)),
                onprem_gpu_hours=float(used[c][1].quantize(HOURS)),
                onprem_amount=finance.money(shown),
            )
            for c, (a, shown) in sorted(money.items())
        ],
        onprem_rates={k: str(v) for k, v in sorted(rates.items())},
    )


@router.get("", response_model=CostReport, responses={200: {"content": {"text/csv": {}}}})
def report(
    request: Request,
    caller: CallerDep,
    ctx: ContextDep,
    since: str | None = None,
    until: str | None = None,
    by: Annotated[str, Query(description=KEYS_HELP)] = "team",
    team: str | None = None,
    user: str | None = None,
    cloud: str | None = None,
    project: str | None = None,
    job: str | None = None,
    top: Annotated[
        int | None,
        Query(
            ge=1,
            le=10_000,
            description="Only the N rows of highest cloud spend in each currency.",
        ),
    ] = None,
    format: Annotated[str | None, Query(description="json (default) or csv.")] = None,
) -> CostReport | Response:
    """Cloud spend and on-prem use in ``[since, until)`` grouped by ``by``, with totals per
    currency; on-prem GPU-hours are priced at the internal rates (showback)."""
    csv = wants_csv(request, format)
    built = build_report(
        ctx,
        caller,
        since,
        until,
        by,
        team=team,
        user=user,
        cloud=cloud,
        project=project,
        job=job,
        top=top,
    )
    if csv:
        name = f"starburst-costs-{built.since:%Y%m%d}-{built.until:%Y%m%d}.csv"
        return StreamingResponse(
            finance.report_csv(built.by, built.rows),
            media_type="text/csv",
            headers={"Content-Disposition": f'attachment; filename="{name}"'},
        )
    return built


def build_savings(ctx: ApiContext, since: str | None, until: str | None) -> Savings:
    start, end = window(ctx, since, until)
    quote = ctx.quote() if ctx.quote is not None else None
    figures = compare_with_no_wait(ctx.store.ledger, start.timestamp(), end.timestamp(), quote)
    return Savings(
        since=start,
        until=end,
        jobs=figures.jobs,
        burst_jobs=figures.burst_jobs,
        onprem_jobs=figures.onprem_jobs,
        gpu_hours=finance.hours(figures.gpu_hours),
        onprem_gpu_hours=finance.hours(figures.onprem_gpu_hours),
        onprem_cloud_value=finance.money(figures.onprem_cloud_value),
        actual=finance.money(figures.actual),
        no_wait=finance.money(figures.no_wait),
        saved=finance.money(figures.no_wait - figures.actual),
        saved_fraction=fraction_saved(figures),
        currency=figures.currency,
        unpriced_jobs=len(figures.unpriced),
        unpriced=[
            UnpricedJob(job=u.job, reason=u.reason) for u in figures.unpriced[: finance.MAX_LISTED]
        ],
        assumptions="Jobs that ended in the range. Actual: their cloud spend in the ledger. "
        "No-Wait: each burst job at what its launches cost, each on-prem job's runtime at "
        "the price its burst would have had (same GPU type default, cheapest offer, "
        "multi-node shape); cloud start-up delays are not added, so savings are not "
        "overstated.",
    )


@router.get("/savings", response_model=Savings)
def savings(
    caller: CallerDep,
    ctx: ContextDep,
    since: str | None = None,
    until: str | None = None,
) -> Savings:
    """Actual cloud spend of the jobs that ended in the range against bursting every one of
    them at once (No-Wait)."""
    if caller.role not in (Role.ADMIN, Role.FINANCE):
        raise HTTPException(
            403, f"{caller.user} has role {caller.role.value}; savings need finance or admin"
        )
    return build_savings(ctx, since, until)


@router.get("/budgets", response_model=list[BudgetOut])
def budgets(caller: CallerDep, ctx: ContextDep) -> list[BudgetOut]:
    """Every team's budget this month with spent, remaining and forecast (a user: their
    team's only)."""
    team = None if caller.role in (Role.ADMIN, Role.FINANCE) else caller.team
    if team is None and caller.role is Role.USER:
        return []
    states = budget_states(ctx.store.accounts, ctx.store.ledger, ctx.clock.now(), team)
    fired = ctx.store.accounts.budget_alerts(states[0].month) if states else {}
    return [budget_out(s, fired.get(s.team, [])) for s in states]
