"""``core.billing.periods``: metering intervals of at most a chunk, cut at UTC midnights, and
the on-prem usage built from them (hand-computed)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from starburst.core.billing import charges, gpu_groups, onprem_usage, periods

MIDNIGHT = datetime(2026, 12, 1, tzinfo=UTC).timestamp()


def test_intervals_never_cross_midnight_and_only_complete_ones_before_the_end() -> None:
    start = MIDNIGHT - 900  # 23:45
    assert periods(start, MIDNIGHT + 1000, 600.0, final=False) == [
        (start, start + 600),  # 23:45-23:55
        (start + 600, MIDNIGHT),  # 23:55-00:00: cut at midnight
        (MIDNIGHT, MIDNIGHT + 600),
    ]
    assert periods(start, MIDNIGHT + 1000, 600.0, final=True)[-1] == (
        MIDNIGHT + 600,
        MIDNIGHT + 1000,
    )
    assert periods(start, MIDNIGHT + 90_000, None, final=True) == [
        (start, MIDNIGHT),
        (MIDNIGHT, MIDNIGHT + 86_400),
        (MIDNIGHT + 86_400, MIDNIGHT + 90_000),
    ]
    assert periods(start, start, 600.0, final=True) == []
    with pytest.raises(ValueError):
        periods(start, MIDNIGHT, 0.0, final=True)


def test_a_launch_across_midnight_is_charged_on_each_day() -> None:
    from decimal import Decimal

    cut = charges(MIDNIGHT - 30, MIDNIGHT + 30, Decimal("3.6"), 2, chunk=60.0, final=True)
    assert [(c.start, c.end, c.amount) for c in cut] == [
        (MIDNIGHT - 30, MIDNIGHT, Decimal("0.030000")),
        (MIDNIGHT, MIDNIGHT + 30, Decimal("0.030000")),
    ]


def test_on_prem_usage_by_the_gpu_types_of_the_nodes() -> None:
    groups = gpu_groups([(8, "V100"), (4, None), (2, "A100")], 14, "A100")
    assert groups == [("A100", 6), ("V100", 8)]  # an untyped part counts as the request
    assert gpu_groups([], 3, None) == [(None, 3)]
    usage = onprem_usage(MIDNIGHT - 1800, None, MIDNIGHT + 1800, groups, chunk=None, final=True)
    assert [(u.start, u.part, u.gpu_type, u.gpu_hours) for u in usage] == [
        (MIDNIGHT - 1800, 0, "A100", 3.0),
        (MIDNIGHT - 1800, 1, "V100", 4.0),
        (MIDNIGHT, 0, "A100", 3.0),
        (MIDNIGHT, 1, "V100", 4.0),
    ]
    resumed = onprem_usage(
        MIDNIGHT - 1800, MIDNIGHT, MIDNIGHT + 1800, groups[:1], chunk=900.0, final=False
    )
    assert [(u.start, u.end) for u in resumed] == [
        (MIDNIGHT, MIDNIGHT + 900),
        (MIDNIGHT + 900, MIDNIGHT + 1800),
    ]
    empty = onprem_usage(MIDNIGHT, None, MIDNIGHT - 30, groups[:1], chunk=None, final=True)
    assert [(u.start, u.end, u.gpu_hours) for u in empty] == [(MIDNIGHT, MIDNIGHT, 0.0)]
