"""Team cloud budgets read from the ledger: where each team stands this month, and which
teams may not burst now, and why.

Terms: a team is *held* when its metered cloud spend in the current UTC calendar month has
reached its monthly limit; its jobs then wait on-prem. *Forecast*: the month-end spend at the
rate so far (``core.billing.month_end_forecast``). Spend is read from the ledger's cost
report (aggregated by the store); budgets from its accounts.

*No-team budget*: users with no team share one monthly cloud budget (``Settings
.no_team_cloud_budget``, US dollars), held under the key ``NO_TEAM``; at 0 they may not burst
at all (their jobs wait on-prem), otherwise they are held once their month's spend reaches it.
So no caller spends without a limit an admin set.

Invariant: every read is fresh (no cache): a budget set or lowered is seen by the next call.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal

from starburst.core.billing import month_end_forecast, month_window
from starburst.core.cycle import NO_TEAM
from starburst.core.ports import Accounts, Ledger


@dataclass(frozen=True, slots=True)
class BudgetState:
    """A team's budget this month: limit, spent, what is left and the forecast."""

    team: str
    limit: Decimal
    currency: str
    month: str  # "2026-11"
    month_name: str  # "November 2026"
    spent: Decimal
    forecast: Decimal

    @property
    def remaining(self) -> Decimal:
        return max(Decimal(0), self.limit - self.spent)

    @property
    def used(self) -> float:
        """Spent as a share of the limit (``inf`` for a zero limit with spend)."""
        if self.limit > 0:
            return float(self.spent / self.limit)
        return float("inf") if self.spent > 0 else 0.0

    @property
    def exhausted(self) -> bool:
        return self.spent >= self.limit


def hold_reason(team: str, spent: Decimal, limit: Decimal, month: str) -> str:
    return (
        f"team {team} spent ${spent:,.2f} of its ${limit:,.2f} cloud budget for {month}; "
        "its jobs wait on-prem until the budget resets or is raised"
    )


def budget_states(
    accounts: Accounts, ledger: Ledger, now: float, team: str | None = None
) -> list[BudgetState]:
    """Every team with a budget (``accounts``) or just ``team``, with this month's spend
    (``ledger``)."""
    start, end, name = month_window(now)
    month = datetime.fromtimestamp(start, UTC).strftime("%Y-%m")
    budgets = (
        accounts.team_budgets()
        if team is None
        else [b for b in [accounts.team_budget(team)] if b is not None]
    )
    if not budgets:
        return []
    spent: dict[tuple[str | None, str], Decimal] = {
        (r.key.get("team"), r.currency): r.amount
        for r in ledger.cost_report(start, end, by=("team",), team=team)
    }
    return [
        BudgetState(
            b.team,
            b.monthly_limit,
            b.currency,
            month,
            name,
            spent.get((b.team, b.currency), Decimal(0)),
            month_end_forecast(spent.get((b.team, b.currency), Decimal(0)), now),
        )
        for b in budgets
    ]


def team_holds(
    accounts: Accounts, ledger: Ledger, now: float, team: str | None = None
) -> dict[str, str]:
    """Teams over their monthly cloud budget at ``now`` (or just ``team``), with the reason."""
    return {
        s.team: hold_reason(s.team, s.spent, s.limit, s.month_name)
        for s in budget_states(accounts, ledger, now, team)
        if s.exhausted and s.spent > 0
    }


def no_team_hold(spent: Decimal, limit: Decimal, month: str) -> str | None:
    """Why users with no team may not burst now (see *No-team budget*), or None."""
    if limit <= 0:
        return (
            "you have no team, and users with no team may not burst (no_team_cloud_budget is "
            "0): the job waits on-prem; an admin puts you in a team (starburst admin users add "
            "NAME --team TEAM) or sets no_team_cloud_budget"
        )
    if spent < limit:
        return None
    return (
        f"users with no team spent ${spent:,.2f} of their shared ${limit:,.2f} cloud budget "
        f"for {month} (no_team_cloud_budget); the job waits on-prem until the budget resets "
        "or is raised, or an admin puts you in a team"
    )


def holds(accounts: Accounts, ledger: Ledger, now: float, no_team_limit: Decimal) -> dict[str, str]:
    """Every hold at ``now`` — teams over their budgets, and ``NO_TEAM`` when users with no
    team may not burst — from two reads: the budgets and one aggregate of the month's spend
    (none when nothing needs it)."""
    start, end, month = month_window(now)
    budgets = accounts.team_budgets()
    spent: dict[tuple[str | None, str], Decimal] = {}
    if budgets or no_team_limit > 0:
        spent = {
            (r.key.get("team"), r.currency): r.amount
            for r in ledger.cost_report(start, end, by=("team",))
        }
    held = {}
    for b in budgets:
        used = spent.get((b.team, b.currency), Decimal(0))
        if used >= b.monthly_limit and used > 0:
            held[b.team] = hold_reason(b.team, used, b.monthly_limit, month)
    why = no_team_hold(spent.get((None, "USD"), Decimal(0)), no_team_limit, month)
    if why is not None:
        held[NO_TEAM] = why
    return held
