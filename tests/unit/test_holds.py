"""Team budget holds read through the store ports (on the in-memory store): where a team
stands this month, and which teams may not burst."""

from __future__ import annotations

from decimal import Decimal

from starburst.adapters.memory.store import MemoryStore
from starburst.core.holds import budget_states, team_holds
from starburst.core.records import CostEntry, JobSpec

NOV_10 = 1_794_268_800.0  # 2026-11-10T00:00Z
DAY = 86_400.0


def test_a_team_is_held_once_this_months_spend_reaches_its_limit() -> None:
    store = MemoryStore()
    ml = store.submissions.submit(JobSpec(gpus=1, user="ann", team="ml")).job.id
    cv = store.submissions.submit(JobSpec(gpus=1, user="bob", team="cv")).job.id
    store.accounts.set_team_budget("ml", Decimal("100"))
    store.accounts.set_team_budget("cv", Decimal("100"))
    store.accounts.set_team_budget("idle", Decimal("0"))  # a zero limit with no spend holds nobody
    store.ledger.record_costs(
        [
            CostEntry(ml, NOV_10 - 12 * DAY, NOV_10 - 12 * DAY + 60, Decimal("500"), "aws"),
            CostEntry(ml, NOV_10 - DAY, NOV_10 - DAY + 60, Decimal("60"), "aws"),
            CostEntry(ml, NOV_10, NOV_10 + 60, Decimal("40"), "aws"),
            CostEntry(cv, NOV_10, NOV_10 + 60, Decimal("99.99"), "aws"),
        ]
    )
    now = NOV_10 + 3600
    states = {s.team: s for s in budget_states(store.accounts, store.ledger, now)}
    assert states["ml"].spent == Decimal("100") and states["ml"].exhausted  # October not counted
    assert states["cv"].remaining == Decimal("0.01") and states["ml"].month == "2026-11"
    assert states["ml"].forecast > states["ml"].spent  # ten days in, at this month's rate
    holds = team_holds(store.accounts, store.ledger, now)
    assert list(holds) == ["ml"] and "spent $100.00 of its $100.00" in holds["ml"]
    assert team_holds(store.accounts, store.ledger, now, team="cv") == {}
    assert budget_states(store.accounts, store.ledger, now, team="nobody") == []
