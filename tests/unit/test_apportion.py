"""Largest-remainder apportionment: rows that sum exactly to their rounded total."""

from __future__ import annotations

import random
from decimal import Decimal

from starburst.core.apportion import CENT, apportion


def test_seven_tenth_cent_rows_sum_to_the_total() -> None:
    rows, total = apportion([Decimal("0.101428")] * 7, CENT)
    assert total == Decimal("0.71") and sum(rows) == total
    assert rows == [Decimal("0.11")] + [Decimal("0.10")] * 6  # ties: the earlier row


def test_any_rows_sum_to_their_total_and_move_less_than_a_cent() -> None:
    rng = random.Random(7)
    for _ in range(500):
        values = [
            Decimal(rng.randint(-(10**6), 10**7)).scaleb(-6) for _ in range(rng.randint(1, 9))
        ]
        rows, total = apportion(values, CENT)
        assert sum(rows) == total == sum(values).quantize(CENT)
        assert all(abs(r - v) < CENT for r, v in zip(rows, values, strict=True))
