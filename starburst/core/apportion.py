"""Rows that add up: round a report's rows so they sum exactly to its rounded total.

Each row rounded on its own drifts from the total (three rows of $0.236 print as $0.24
each, $0.72, under a total of $0.71). The rule every report view follows (``GET /v1/costs``
in JSON and CSV, the CLI's table, the dashboard) is *largest-remainder apportionment*: the
total is rounded once (half to even) to the printed precision, each row is cut down to it,
and the units left over (cents, or thousandths of a GPU-hour) go one each to the rows with
the largest remainders, ties to the earlier row. Rows then sum to the printed total exactly,
and no row moves by a whole unit or more from its exact value.

Terms: ``CENT`` is money's precision; ``HOURS`` GPU-hours' (``HOURS_DIGITS`` decimals).
"""

from __future__ import annotations

from collections.abc import Sequence
from decimal import ROUND_FLOOR, ROUND_HALF_EVEN, Decimal

CENT = Decimal("0.01")
HOURS_DIGITS = 3
HOURS = Decimal(1).scaleb(-HOURS_DIGITS)


def apportion(values: Sequence[Decimal], quantum: Decimal) -> tuple[list[Decimal], Decimal]:
    """``values`` rounded to ``quantum`` so that they sum to their rounded total, and that
    total (see the module docstring)."""
    total = sum(values, Decimal(0)).quantize(quantum, rounding=ROUND_HALF_EVEN)
    floors = [v.quantize(quantum, rounding=ROUND_FLOOR) for v in values]
    left = int((total - sum(floors, Decimal(0))) / quantum)
    ranked = sorted(range(len(values)), key=lambda i: (-(values[i] - floors[i]), i))
    for i in ranked[:left]:
        floors[i] += quantum
    return floors, total


def exact(hours: float) -> Decimal:
    """A float of GPU-hours as the decimal it prints as (its shortest repr)."""
    return Decimal(repr(hours))
