"""Cost metering and team budgets: entries add up to price × billed time."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from starburst.metering import BilledLaunch, CostMeter, check_budget, total_cost

T0 = datetime(2026, 11, 20, tzinfo=UTC).timestamp()


def launch(
    name: str = "starburst-j1", price: float = 36.0, team: str | None = "ml"
) -> BilledLaunch:
    return BilledLaunch(name, "j1", team, "aws:us-east-1", "A100:8", price, T0)


def test_entries_tile_billed_time_from_launch_to_end() -> None:
    meter = CostMeter()
    meter.open(launch())
    entries = meter.accrue(T0 + 600)  # provisioning is billed too
    entries += meter.accrue(T0 + 600)  # nothing is billed twice
    entries += meter.accrue(T0 + 1800)
    entries += meter.finish("starburst-j1", T0 + 3600)
    assert [e.start - T0 for e in entries] == [0, 600, 1800]
    assert [e.end - T0 for e in entries] == [600, 1800, 3600]
    assert [e.final for e in entries] == [False, False, True]
    assert total_cost(entries) == pytest.approx(36.0)
    assert meter.accrue(T0 + 7200) == [] and meter.finish("starburst-j1", T0 + 7200) == []


def test_failover_reprices_the_rest_of_the_launch() -> None:
    meter = CostMeter()
    meter.open(launch(price=10.0))
    entries = meter.accrue(T0 + 1800)
    entries += meter.reprice("starburst-j1", T0 + 3600, 20.0, "gcp:us-central1")
    entries += meter.finish("starburst-j1", T0 + 5400)
    assert total_cost(entries) == pytest.approx(10.0 * 1.0 + 20.0 * 0.5)
    assert entries[-1].where == "gcp:us-central1" and entries[-1].final


def test_reopening_is_idempotent_and_resumes_from_store() -> None:
    meter = CostMeter()
    meter.open(launch(), metered_until=T0 + 1200)
    meter.open(launch())
    (entry,) = meter.finish("starburst-j1", T0 + 3600)
    assert entry.start == T0 + 1200 and entry.cost == pytest.approx(24.0)


def test_budget_spent_stops_bursting_with_a_reason() -> None:
    meter = CostMeter()
    meter.open(launch(price=100.0))
    entries = meter.finish("starburst-j1", T0 + 3 * 3600)
    spent = check_budget("ml", {"ml": 250.0}, entries, T0 + 4 * 3600)
    assert spent.exhausted and spent.spent == pytest.approx(300.0)
    assert "team ml spent $300.00 of its $250.00 cloud budget for November 2026" in spent.reason
    assert "wait on-prem" in spent.reason
    room = check_budget("ml", {"ml": 500.0}, entries, T0 + 4 * 3600)
    assert not room.exhausted
    assert not check_budget("vision", {"ml": 1.0}, entries, T0).exhausted
    assert not check_budget(None, {"ml": 1.0}, entries, T0).exhausted


def test_budget_resets_monthly_and_prorates_straddling_entries() -> None:
    dec1 = datetime(2026, 12, 1, tzinfo=UTC).timestamp()
    meter = CostMeter()
    meter.open(BilledLaunch("l", "j", "ml", "aws", "T4:1", 3600.0, dec1 - 1800))
    entries = meter.finish("l", dec1 + 1800)
    december = check_budget("ml", {"ml": 10_000.0}, entries, dec1 + 3600)
    assert december.month == "December 2026" and december.spent == pytest.approx(1800.0)
    assert check_budget("ml", {"ml": 1.0}, entries, dec1 + 40 * 86400).spent == 0.0
