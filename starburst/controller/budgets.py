"""The controller's view of team cloud budgets: the teams held on-prem, refreshed at most
every ``ttl_s`` so a pass does not aggregate the ledger each time (see ``adapters.db.holds``).
"""

from __future__ import annotations

from starburst.adapters.db.holds import team_holds
from starburst.adapters.db.store import SqlStore


class BudgetGate:
    def __init__(self, store: SqlStore, ttl_s: float = 30.0) -> None:
        self.store = store
        self.ttl_s = ttl_s
        self._cached: tuple[float, dict[str, str]] | None = None

    def __call__(self, now: float) -> dict[str, str]:
        if self._cached is not None and now - self._cached[0] < self.ttl_s:
            return self._cached[1]
        held = team_holds(self.store, now)
        self._cached = (now, held)
        return held
