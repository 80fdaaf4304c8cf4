"""Budget alerts fire once per team, month and threshold — as a log line, a metric and a
webhook POST (to a real local HTTP server) — and budgets forecast the month's end; on
PostgreSQL and SQLite. The ledger's cost counters agree with the reports."""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest

from starburst.adapters.db.store import SqlStore
from starburst.controller.loop.budgets import BudgetAlerts, BudgetGate
from starburst.controller.metrics import ControllerMetrics
from starburst.core.holds import budget_states
from starburst.core.lifecycle import JobState
from starburst.core.records import CostEntry, JobSpec
from tests.support.clock import ManualClock
from tests.support.databases import upgrade
from tests.support.waiting import wait_for

DAY = 86400.0
NOV10 = datetime(2026, 11, 11, tzinfo=UTC).timestamp()  # 10 of 30 days of November gone


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SqlStore]:
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'budgets.db'}"
    else:
        url = request.getfixturevalue("postgres_database")
    upgrade(url)
    opened = SqlStore.open(url, clock=ManualClock(NOV10))
    yield opened
    opened.close()


class Hook(BaseHTTPRequestHandler):
    received: ClassVar[list[dict[str, Any]]] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        type(self).received.append(json.loads(body))
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def webhook() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    received: ClassVar[list[dict[str, Any]]] = []
    handler = type("H", (Hook,), {"received": received})
    server = HTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/alerts", received
    server.shutdown()
    server.server_close()
    thread.join()


def spend(store: SqlStore, job: str, amount: str, at: float) -> None:
    store.ledger.record_costs(
        [CostEntry(job, at, at + 60, Decimal(amount), "aws", region="us-east-1", gpu_hours=1.0)]
    )


def test_alerts_fire_once_per_month_everywhere(
    store: SqlStore,
    webhook: tuple[str, list[dict[str, Any]]],
    caplog: pytest.LogCaptureFixture,
) -> None:
    url, received = webhook
    store.submissions.submit(JobSpec(id="j", gpus=1, team="ml"), at=NOV10 - DAY)
    store.accounts.set_team_budget("ml", Decimal("300"))
    metrics = ControllerMetrics.create()
    alerts = BudgetAlerts(
        store.accounts,
        store.ledger,
        [0.8, 1.0],
        metrics=metrics,
        webhook=url,
        webhook_allow=["127.0.0.1"],  # the test's server is on loopback
    )
    spend(store, "j", "100", NOV10 - 2 * DAY)
    assert alerts.check(NOV10) == []  # 33%
    spend(store, "j", "150", NOV10 - DAY)  # 250 of 300: 83%
    with caplog.at_level(logging.WARNING, "starburst.controller"):
        (first,) = alerts.check(NOV10)
        assert alerts.check(NOV10 + 60) == []  # once
    assert first.threshold == 0.8
    # 250 in 10 of 30 days: 750 by the end of November at this rate
    assert first.state.forecast == Decimal(750)
    assert (
        "team ml spent 250.00 of its 300.00 USD cloud budget for November 2026 (83%" in caplog.text
        and "forecast 750.00" in caplog.text
    )
    assert wait_for(lambda: len(received) == 1)
    assert received[0] == {
        "team": "ml",
        "month": "2026-11",
        "threshold": 0.8,
        "spent": "250.00",
        "limit": "300.00",
        "forecast": "750.00",
        "currency": "USD",
        "message": first.message,
    }
    value = metrics.registry.get_sample_value
    assert value("starburst_budget_alerts_total", {"team": "ml", "threshold": "0.8"}) == 1
    assert value("starburst_budget_used_ratio", {"team": "ml"}) == pytest.approx(250 / 300)
    restarted = BudgetAlerts(
        store.accounts, store.ledger, [0.8, 1.0], webhook=url, webhook_allow=["127.0.0.1"]
    )  # a new leader: no repeat
    assert restarted.check(NOV10 + 120) == []
    spend(store, "j", "60", NOV10)  # 310 of 300
    (full,) = restarted.check(NOV10 + 180)
    assert full.threshold == 1.0 and full.state.exhausted
    assert wait_for(lambda: len(received) == 2) and received[1]["threshold"] == 1.0
    # December: a new period, the alerts may fire again
    dec = datetime(2026, 12, 2, tzinfo=UTC).timestamp()
    spend(store, "j", "280", dec - 3600)
    assert [a.threshold for a in restarted.check(dec)] == [0.8]
    assert store.accounts.budget_alerts("2026-11") == {"ml": [0.8, 1.0]}


def test_gate_holds_an_exhausted_team_and_checks_alerts(store: SqlStore) -> None:
    store.submissions.submit(JobSpec(id="j", gpus=1, team="ml"), at=NOV10 - DAY)
    store.accounts.set_team_budget("ml", Decimal("10"))
    spend(store, "j", "12", NOV10 - DAY)
    gate = BudgetGate(
        store.accounts,
        store.ledger,
        no_team_limit=Decimal(100),
        alerts=BudgetAlerts(store.accounts, store.ledger, [1.0]),
    )
    assert "team ml spent $12.00 of its $10.00 cloud budget for November 2026" in gate(NOV10)["ml"]
    assert store.accounts.budget_alerts("2026-11") == {"ml": [1.0]}
    (state,) = budget_states(store.accounts, store.ledger, NOV10)
    assert (state.remaining, state.used) == (Decimal(0), pytest.approx(1.2))


def test_cost_counters_follow_the_ledger(store: SqlStore) -> None:
    store.submissions.submit(JobSpec(id="c", gpus=2, team="ml"), at=NOV10 - DAY)
    store.submissions.submit(JobSpec(id="o", gpus=4, team="cv"), at=NOV10 - DAY)
    metrics = ControllerMetrics.create()
    metrics.follow_ledger(store.ledger)
    value = metrics.registry.get_sample_value
    spend(store, "c", "2.50", NOV10 - DAY)
    assert (
        value(
            "starburst_cloud_cost_total",
            {"team": "ml", "location": "aws:us-east-1", "currency": "USD"},
        )
        == 2.5
    )
    spend(store, "c", "1.25", NOV10 - DAY + 60)
    store.lifecycle.transition("o", JobState.QUEUED, reason="t", actor="c", at=NOV10 - 7200)
    store.lifecycle.transition("o", JobState.RUNNING_ONPREM, reason="t", actor="c", at=NOV10 - 7200)
    store.lifecycle.transition("o", JobState.SUCCEEDED, reason="t", actor="c", at=NOV10 - 3600)
    assert (
        value(
            "starburst_cloud_cost_total",
            {"team": "ml", "location": "aws:us-east-1", "currency": "USD"},
        )
        == 3.75
    )
    assert value(
        "starburst_gpu_seconds_total", {"team": "ml", "location": "aws:us-east-1"}
    ) == pytest.approx(7200)
    assert value(
        "starburst_gpu_seconds_total", {"team": "cv", "location": "onprem"}
    ) == pytest.approx(4 * 3600)
    report = store.ledger.cost_report(NOV10 - 2 * DAY, NOV10, by=("team",))
    assert [(r.key["team"], r.amount, r.onprem_gpu_hours) for r in report] == [
        ("cv", Decimal(0), 4.0),
        ("ml", Decimal("3.75"), 0.0),
    ]
