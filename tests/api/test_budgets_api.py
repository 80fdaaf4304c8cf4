"""Budgets over REST and from ``starburst admin budgets``: spent, remaining, month-end
forecast, a warning when a new limit is already spent, and who may see which team."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

from starburst.core.records import CostEntry, JobSpec
from tests.support.databases import BOTH

NOV16 = datetime(2026, 11, 16, tzinfo=UTC).timestamp()  # half of November gone


@BOTH
def test_budgets_show_spent_remaining_forecast_and_warn(api):  # type: ignore[no-untyped-def]
    api.clock.set(NOV16)
    job = api.store.submissions.submit(JobSpec(gpus=1, user="alice", team="ml")).job.id
    api.store.ledger.record_costs(
        [CostEntry(job, NOV16 - 86400, NOV16 - 82800, Decimal("40"), "aws")]
    )
    root = api.client("root")
    ok = root.put("/v1/teams/ml/budget", json={"monthly_limit": "100"}).json()
    assert ok["warning"] is None
    assert (ok["spent"], ok["remaining"], ok["forecast"]) == ("40.00", "60.00", "80.00")
    low = root.put("/v1/teams/ml/budget", json={"monthly_limit": "25"}).json()
    assert low["exhausted"] and low["remaining"] == "0.00"
    assert low["warning"] == (
        "team ml already spent 40.00 USD this month, more than the new "
        "limit of 25.00: its jobs stop bursting now"
    )
    root.put("/v1/teams/vision/budget", json={"monthly_limit": "10"})
    every = api.client("fin").get("/v1/costs/budgets").json()
    assert [(b["team"], b["spent"], b["forecast"], b["used_fraction"]) for b in every] == [
        ("ml", "40.00", "80.00", 1.6),
        ("vision", "0.00", "0.00", 0.0),
    ]
    assert [b["team"] for b in api.client("alice").get("/v1/costs/budgets").json()] == ["ml"]


def test_admin_budgets_show_and_set_warn(api):  # type: ignore[no-untyped-def]
    from tests.api.test_cli import run

    job = api.store.submissions.submit(JobSpec(gpus=1, user="alice", team="ml")).job.id
    now = datetime.now(UTC).timestamp()  # the CLI reads the wall clock
    api.store.ledger.record_costs([CostEntry(job, now - 60, now, Decimal("12.5"), "aws")])
    env = {"STARBURST_DATABASE_URL": api.db_url}
    low = run(["admin", "budgets", "set", "ml", "10"], env)
    assert low.exit_code == 0 and low.stdout.startswith("team ml: 10")
    assert "warning: team ml already spent 12.50 USD" in low.stderr
    run(["admin", "budgets", "set", "vision", "500"], env)
    shown = run(["admin", "budgets", "show"], env)
    assert shown.exit_code == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert lines[0].startswith("budgets for ")
    assert lines[1].split() == [
        "TEAM",
        "LIMIT",
        "SPENT",
        "REMAINING",
        "FORECAST",
        "CURRENCY",
        "USED",
        "ALERTS",
    ]
    ml = lines[2].split()
    assert ml[:4] == ["ml", "10.00", "12.50", "0.00"] and ml[5:7] == ["USD", "125%"]
    assert Decimal(ml[4]) >= Decimal("12.50")  # the forecast never falls below spent
    assert lines[3].split()[:4] == ["vision", "500.00", "0.00", "500.00"]
