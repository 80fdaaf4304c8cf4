"""The controller's view of team cloud budgets: which teams are held on-prem, and alerts
before (and when) a budget is spent.

Terms:
- *hold*: a team whose month's cloud spend reached its limit bursts no more, nor do users
  with no team past theirs (``core.holds``). The gate reads the budgets and the month's spend
  on every pass (two small queries: the budgets, one aggregate by team), so a budget set or
  lowered — by any replica, through the database — is obeyed by the very next pass.
- *alert*: a team's spend crossed a threshold (a share of its limit, e.g. 0.8 and 1.0,
  ``Settings.budget_alerts``). It fires once per team, month and threshold — the store
  claims it (``claim_budget_alert``), so a restart or a second replica never repeats it — as
  a log line, a metric, a Kubernetes Event (when the cluster can carry one: ``BudgetNotes``)
  and, when ``Settings.budget_webhook`` is set, a JSON POST made off the scheduling loop
  (``controller.webhook``: internal targets refused unless allowed, no redirects).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from starburst.controller.webhook import post_json
from starburst.core.holds import BudgetState, budget_states, holds
from starburst.core.ports import Accounts, BudgetNotes, Ledger

log = logging.getLogger("starburst.controller")
CENT = Decimal("0.01")


@dataclass(frozen=True, slots=True)
class BudgetAlert:
    threshold: float
    state: BudgetState

    @property
    def message(self) -> str:
        s = self.state
        return (
            f"team {s.team} spent {s.spent:,.2f} of its {s.limit:,.2f} {s.currency} cloud "
            f"budget for {s.month_name} ({s.used:.0%}, alert at {self.threshold:.0%}); "
            f"month-end forecast {s.forecast:,.2f} {s.currency}"
        )

    def as_json(self) -> dict[str, Any]:
        s = self.state
        return {
            "team": s.team,
            "month": s.month,
            "threshold": self.threshold,
            "spent": str(s.spent.quantize(CENT)),
            "limit": str(s.limit.quantize(CENT)),
            "forecast": str(s.forecast.quantize(CENT)),
            "currency": s.currency,
            "message": self.message,
        }


class BudgetAlerts:
    """Fires each crossed threshold once per team and month (see the module terms)."""

    def __init__(
        self,
        accounts: Accounts,
        ledger: Ledger,
        thresholds: Sequence[float],
        *,
        metrics: Any = None,
        notes: BudgetNotes | None = None,
        webhook: str | None = None,
        webhook_allow: Sequence[str] = (),
        post: Callable[[str, dict[str, Any]], object] | None = None,
    ) -> None:
        self.accounts, self.ledger, self.thresholds = accounts, ledger, sorted(thresholds)
        self.metrics, self.notes, self.webhook = metrics, notes, webhook
        allowed = tuple(webhook_allow)
        self._post = post or (lambda url, body: post_json(url, body, allow=allowed))
        self._fired: set[tuple[str, str, float]] = set()
        self.senders: list[threading.Thread] = []

    def check(self, now: float) -> list[BudgetAlert]:
        fired = []
        for state in budget_states(self.accounts, self.ledger, now):
            if self.metrics is not None:
                self.metrics.budget_used.labels(team=state.team).set(min(state.used, 1e9))
            for threshold in self.thresholds:
                key = (state.team, state.month, threshold)
                if state.used < threshold or key in self._fired:
                    continue
                self._fired.add(key)
                if self.accounts.claim_budget_alert(
                    state.team, state.month, threshold, state.spent, at=now
                ):
                    alert = BudgetAlert(threshold, state)
                    self._fire(alert)
                    fired.append(alert)
        return fired

    def _fire(self, alert: BudgetAlert) -> None:
        log.warning(
            "budget alert: %s",
            alert.message,
            extra={"team": alert.state.team, "threshold": alert.threshold},
        )
        if self.metrics is not None:
            self.metrics.budget_alerts.labels(
                team=alert.state.team, threshold=f"{alert.threshold:g}"
            ).inc()
        if self.notes is not None:
            try:
                self.notes.note_budget(alert.state.team, "BudgetAlert", alert.message)
            except Exception as exc:  # an Event is a courtesy: never fatal to the pass
                log.warning("could not record the budget event of %s: %s", alert.state.team, exc)
        if self.webhook:
            sender = threading.Thread(
                target=self._post,
                args=(self.webhook, alert.as_json()),
                name="budget-webhook",
                daemon=True,
            )
            sender.start()  # never block the scheduling loop on someone else's server
            self.senders = [t for t in self.senders if t.is_alive()] + [sender]


class BudgetGate:
    """``hold(now)`` for the scheduling loop: the teams held on-prem (and ``NO_TEAM``), read
    afresh on every pass; the alerts are checked at most every ``alert_every_s``."""

    def __init__(
        self,
        accounts: Accounts,
        ledger: Ledger,
        *,
        no_team_limit: Decimal,
        alerts: BudgetAlerts | None = None,
        alert_every_s: float = 30.0,
    ) -> None:
        self.accounts, self.ledger = accounts, ledger
        self.no_team_limit = no_team_limit
        self.alerts, self.alert_every_s = alerts, alert_every_s
        self._alerted_at: float | None = None

    def __call__(self, now: float) -> dict[str, str]:
        held = holds(self.accounts, self.ledger, now, self.no_team_limit)
        if self.alerts is not None and (
            self._alerted_at is None or now - self._alerted_at >= self.alert_every_s
        ):
            self._alerted_at = now
            self.alerts.check(now)
        return held
