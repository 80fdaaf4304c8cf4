"""Finance views over the ledger for the API: report rows with on-prem showback, CSV, and
the burst's quote the savings reuse (``starburst.savings``). Every figure is a sum of ledger
entries (``adapters.db.costs``).

Terms:
- *showback*: on-prem GPU-hours priced at the admin's internal rate for their GPU type
  (``Settings.onprem_rates``, $/GPU-hour; ``*`` for any other type), by the store's report.
  Not money paid to anyone.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable, Iterator, Sequence
from decimal import Decimal
from typing import Any

from starburst.api.schemas.costs import GPU_HOURS_DIGITS, CostRow
from starburst.core.records import CostTotal
from starburst.savings import Quoter

CENT = Decimal("0.01")
MAX_LISTED = 100


def money(amount: Decimal) -> str:
    return str(amount.quantize(CENT))


def hours(value: float) -> float:
    return round(value, GPU_HOURS_DIGITS)


def report_row(total: CostTotal) -> CostRow:
    return CostRow(
        key=dict(total.key),
        amount=money(total.amount),
        currency=total.currency,
        gpu_hours=hours(total.gpu_hours),
        onprem_gpu_hours=hours(total.onprem_gpu_hours),
        onprem_amount=money(total.onprem_amount),
        entries=total.entries,
    )


CSV_FIELDS = ("currency", "amount", "gpu_hours", "onprem_gpu_hours", "onprem_amount", "entries")


def report_csv(keys: Sequence[str], rows: Sequence[CostRow]) -> Iterator[str]:
    """The report as CSV, a chunk of lines at a time (a report by job has a row per job, so
    the response streams instead of building one string): one column per grouping key,
    then the figures (money as decimal strings, GPU-hours rounded)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow([*keys, *CSV_FIELDS])
    for i, r in enumerate(rows, 1):
        writer.writerow(
            [
                *(r.key.get(k) or "" for k in keys),
                r.currency,
                r.amount,
                r.gpu_hours,
                r.onprem_gpu_hours,
                r.onprem_amount,
                r.entries,
            ]
        )
        if i % 5_000 == 0:
            yield out.getvalue()
            out.seek(0)
            out.truncate()
    yield out.getvalue()


def burst_quote(settings: Any, clock: Any, prices: Any = None) -> Callable[[], Quoter | None]:
    """The cloud port's ``quote`` of the cloud ``settings`` name, built on first use (the
    same adapter and price table the controller bursts with)."""
    built: list[Quoter | None] = []

    def get() -> Quoter | None:
        if not built:
            from starburst.controller.wiring import build_cloud

            cloud = build_cloud(settings, clock, prices)
            built.append(cloud.quote if cloud is not None else None)
        return built[0]

    return get
