"""Team cloud budgets: which teams may not burst right now, and why.

A team whose metered cloud spend this UTC calendar month has reached its monthly limit is
*held*: the scheduling pass keeps its jobs waiting on-prem instead of bursting them (see
``schedule_pass(hold=...)``), with the reason below. Spend comes from the store's cost ledger
(aggregated in SQL); the answer is cached for ``ttl_s`` so a pass does not query it each time.
"""

from __future__ import annotations

from starburst.adapters.db.store import SqlStore
from starburst.metering.budget import month_window


class BudgetGate:
    def __init__(self, store: SqlStore, ttl_s: float = 30.0) -> None:
        self.store = store
        self.ttl_s = ttl_s
        self._cached: tuple[float, dict[str, str]] | None = None

    def __call__(self, now: float) -> dict[str, str]:
        if self._cached is not None and now - self._cached[0] < self.ttl_s:
            return self._cached[1]
        held = self._compute(now)
        self._cached = (now, held)
        return held

    def _compute(self, now: float) -> dict[str, str]:
        start, end, month = month_window(now)
        held: dict[str, str] = {}
        for row in self.store.cost_report(start, end, by=("team",)):
            team = row.key.get("team")
            if team is None:
                continue
            budget = self.store.team_budget(team)
            if budget is None or budget.currency != row.currency:
                continue
            if row.amount >= budget.monthly_limit:
                held[team] = (
                    f"team {team} spent ${row.amount:,.2f} of its ${budget.monthly_limit:,.2f} "
                    f"cloud budget for {month}; its jobs wait on-prem until the budget resets "
                    "or is raised"
                )
        return held
