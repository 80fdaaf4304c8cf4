"""Cost metering of cloud launches and team budget checks (pure: time and entries are inputs).

``CostMeter`` turns launches (``BilledLaunch``) into ``CostEntry`` values — frozen dataclasses
a store persists as they are — and ``check_budget`` says whether a team's monthly cloud budget
is spent, with the reason shown to users.
"""

from starburst.metering.budget import BudgetCheck, check_budget, month_window, spent_in_window
from starburst.metering.meter import BilledLaunch, CostEntry, CostMeter, entry_for, total_cost

__all__ = [
    "BilledLaunch",
    "BudgetCheck",
    "CostEntry",
    "CostMeter",
    "check_budget",
    "entry_for",
    "month_window",
    "spent_in_window",
    "total_cost",
]
