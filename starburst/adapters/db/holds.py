"""Team cloud budgets read from the ledger: which teams may not burst now, and why.

A team is *held* when its metered cloud spend in the current UTC calendar month has reached
its monthly limit; its jobs then wait on-prem. Spend is aggregated in SQL.
"""

from __future__ import annotations

from decimal import Decimal

from starburst.metering.budget import month_window

from .store import SqlStore


def hold_reason(team: str, spent: Decimal, limit: Decimal, month: str) -> str:
    return (f"team {team} spent ${spent:,.2f} of its ${limit:,.2f} cloud budget for {month}; "
            "its jobs wait on-prem until the budget resets or is raised")


def team_holds(store: SqlStore, now: float, team: str | None = None) -> dict[str, str]:
    """Teams over their monthly cloud budget at ``now`` (or just ``team``), with the reason."""
    start, end, month = month_window(now)
    held: dict[str, str] = {}
    for row in store.cost_report(start, end, by=("team",), team=team):
        name = row.key.get("team")
        if name is None:
            continue
        budget = store.team_budget(name)
        if budget is None or budget.currency != row.currency:
            continue
        if row.amount >= budget.monthly_limit:
            held[name] = hold_reason(name, row.amount, budget.monthly_limit, month)
    return held
