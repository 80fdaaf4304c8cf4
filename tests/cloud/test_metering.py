"""The one billing rule: a launch's charges add up to price × billed time, the same every
time they are computed, in the month and forecast budgets read."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

import pytest

from starburst.core.billing import charges, month_end_forecast, month_window

T0 = datetime(2026, 11, 20, tzinfo=UTC).timestamp()


def test_charges_tile_billed_time_from_launch_to_end() -> None:
    running = charges(T0, T0 + 1500, Decimal(36), 8, chunk=600, final=False)
    assert [(c.start - T0, c.end - T0) for c in running] == [(0, 600), (600, 1200)]
    done = charges(T0, T0 + 3500, Decimal(36), 8, chunk=600, final=True)
    assert done[:2] == running  # the same intervals every time: the ledger stores them once
    assert done[-1].end == T0 + 3500 and done[-1].start == T0 + 3000
    assert sum(c.amount for c in done) == Decimal("35.000000")
    assert sum(c.gpu_hours for c in done) == pytest.approx(8 * 3500 / 3600)
    assert charges(T0, T0, Decimal(36), 8, chunk=600, final=True) == []


def test_a_short_cancelled_two_node_launch_is_billed_to_the_micro() -> None:
    (only,) = charges(T0, T0 + 14.5, Decimal("54.4"), 16, chunk=60, final=True)
    assert only.amount == Decimal("0.219111")  # 54.4 $/h × 14.5 s, rounded to millionths


def test_month_window_and_forecast() -> None:
    start, end, name = month_window(T0)
    assert name == "November 2026" and end - start == 30 * 86400
    dec = datetime(2026, 12, 31, 23, tzinfo=UTC).timestamp()
    assert month_window(dec)[2] == "December 2026"
    # 10 of 30 days gone, 100 spent: 300 by the end at this rate
    ten_days = start + 10 * 86400
    assert month_end_forecast(Decimal(100), ten_days) == Decimal(300)
    assert month_end_forecast(Decimal(0), ten_days) == Decimal(0)
    assert month_end_forecast(Decimal(5), start) == Decimal(5)
