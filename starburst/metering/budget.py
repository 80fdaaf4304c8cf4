"""Team cloud budgets: has a team spent its monthly cloud money?

Terms:
- *month*: the calendar month in UTC that contains ``now``; a budget resets at 00:00 UTC on
  the first day.
- *spent*: the cost of a team's entries inside the month. An entry that straddles the month
  boundary counts pro rata for the part inside.
- *exhausted*: spent ≥ limit. An exhausted team's jobs stop bursting and wait on-prem; the
  ``reason`` is what the user sees (``starburst explain``, the Kubernetes Event).

Invariants: pure (``now`` and the entries are arguments); a team without a budget is never
exhausted; emulated entries count like real ones, so the emulated cloud exercises budgets.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime

from starburst.metering.meter import CostEntry


@dataclass(frozen=True, slots=True)
class BudgetCheck:
    team: str
    spent: float
    limit: float | None
    month: str
    exhausted: bool
    reason: str


def month_window(now: float) -> tuple[float, float, str]:
    """Start and end (epoch seconds) of the UTC calendar month holding ``now``, and its name."""
    moment = datetime.fromtimestamp(now, UTC)
    start = moment.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    if start.month == 12:
        end = start.replace(year=start.year + 1, month=1)
    else:
        end = start.replace(month=start.month + 1)
    return start.timestamp(), end.timestamp(), start.strftime("%B %Y")


def spent_in_window(entries: Iterable[CostEntry], team: str, start: float, end: float) -> float:
    total = 0.0
    for entry in entries:
        if entry.team != team:
            continue
        lo, hi = max(entry.start, start), min(entry.end, end)
        if entry.end <= entry.start:
            continue
        if hi > lo:
            total += entry.cost * (hi - lo) / (entry.end - entry.start)
    return total


def check_budget(
    team: str | None,
    budgets: Mapping[str, float],
    entries: Iterable[CostEntry],
    now: float,
) -> BudgetCheck:
    """Whether ``team`` may still burst this month, with the reason a person reads."""
    start, end, month = month_window(now)
    name = team or "(no team)"
    limit = budgets.get(team) if team is not None else None
    if limit is None:
        return BudgetCheck(name, 0.0, None, month, False, f"team {name} has no cloud budget limit")
    spent = spent_in_window(entries, name, start, end)
    if spent >= limit:
        reason = (
            f"team {name} spent ${spent:.2f} of its ${limit:.2f} cloud budget for {month}; "
            "jobs wait on-prem until the budget resets or is raised"
        )
        return BudgetCheck(name, spent, limit, month, True, reason)
    reason = f"team {name} spent ${spent:.2f} of its ${limit:.2f} cloud budget for {month}"
    return BudgetCheck(name, spent, limit, month, False, reason)
