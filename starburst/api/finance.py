"""Finance views over the ledger for the API: report rows with on-prem showback, CSV, and
the burst's quote the savings reuse (``starburst.savings``). Every figure is a sum of ledger
entries (``adapters.db.costs``).

Invariant: a report's rows add up to its totals at the printed precision, in JSON, CSV, the
CLI and the dashboard alike: each currency's rows are apportioned to their rounded total
(``core.apportion``: cents for money, thousandths for GPU-hours). Rows by ``gpu_type`` name
the type rented whatever the shape (``2xA100:8`` is ``A100``: ``pricing.gpu_type_in``), so a
type is one row.

Terms:
- *showback*: on-prem GPU-hours priced at the admin's internal rate for their GPU type
  (``Settings.onprem_rates``, $/GPU-hour; ``*`` for any other type), by the store's report.
  Not money paid to anyone.
"""

from __future__ import annotations

import io
from collections.abc import Iterator, Sequence
from decimal import Decimal
from typing import Any

from starburst import spreadsheet
from starburst.api.schemas.costs import GPU_HOURS_DIGITS, CostRow
from starburst.core.apportion import CENT, HOURS, apportion, exact
from starburst.core.records import CostTotal
from starburst.pricing import gpu_type_in
from starburst.savings import Quoter

MAX_LISTED = 100
#: the precision of a row's amount, GPU-hours, on-prem GPU-hours and showback
QUANTA = (CENT, HOURS, HOURS, CENT)


def money(amount: Decimal) -> str:
    return str(amount.quantize(CENT))


def hours(value: float) -> float:
    return round(value, GPU_HOURS_DIGITS)


def report_rows(totals: Sequence[CostTotal]) -> list[CostRow]:
    """The rows of a report, each currency's apportioned to its rounded totals (see the
    module docstring)."""
    columns: dict[str, list[list[Decimal]]] = {}
    for t in totals:
        column = columns.setdefault(t.currency, [[], [], [], []])
        for i, value in enumerate(
            (t.amount, exact(t.gpu_hours), exact(t.onprem_gpu_hours), t.onprem_amount)
        ):
            column[i].append(value)
    rounded = {
        currency: [apportion(values, q)[0] for values, q in zip(column, QUANTA, strict=True)]
        for currency, column in columns.items()
    }
    seen: dict[str, int] = {}
    rows = []
    for t in totals:
        n = seen[t.currency] = seen.get(t.currency, -1) + 1
        amount, gpu_hours, onprem_hours, onprem_amount = (c[n] for c in rounded[t.currency])
        rows.append(
            CostRow(
                key=dict(t.key),
                amount=str(amount),
                currency=t.currency,
                gpu_hours=float(gpu_hours),
                onprem_gpu_hours=float(onprem_hours),
                onprem_amount=str(onprem_amount),
                entries=t.entries,
            )
        )
    return rows


def one_gpu_type_per_row(totals: Sequence[CostTotal]) -> list[CostTotal]:
    """Rows grouped by ``gpu_type`` merged by the type rented (``2xA100`` into ``A100``),
    in the order their first row came."""
    merged: dict[tuple[tuple[tuple[str, str | None], ...], str], CostTotal] = {}
    for t in totals:
        kind = t.key.get("gpu_type")
        key = {**t.key, "gpu_type": gpu_type_in(kind) if kind else kind}
        name = (tuple(key.items()), t.currency)
        seen = merged.get(name)
        merged[name] = (
            t._replace(key=key)
            if seen is None
            else seen._replace(
                amount=seen.amount + t.amount,
                gpu_hours=seen.gpu_hours + t.gpu_hours,
                entries=seen.entries + t.entries,
                onprem_gpu_hours=seen.onprem_gpu_hours + t.onprem_gpu_hours,
                onprem_amount=seen.onprem_amount + t.onprem_amount,
            )
        )
    return list(merged.values())


CSV_FIELDS = ("currency", "amount", "gpu_hours", "onprem_gpu_hours", "onprem_amount", "entries")


def report_csv(keys: Sequence[str], rows: Sequence[CostRow]) -> Iterator[str]:
    """The report as CSV, a chunk of lines at a time (a report by job has a row per job, so
    the response streams instead of building one string): one column per grouping key,
    then the figures (money as decimal strings, GPU-hours rounded)."""
    out = io.StringIO()
    writer = spreadsheet.writer(out, lineterminator="\n")  # no cell runs as a formula
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


class BurstQuote:
    """The cloud port's ``quote`` of the cloud ``settings`` name, built on first use (the
    same adapter and price table the controller bursts with). Calling it returns the quote
    function, or None when no cloud is configured."""

    def __init__(self, settings: Any, clock: Any, prices: Any = None) -> None:
        self._settings, self._clock, self._prices = settings, clock, prices
        self._built: list[Quoter | None] = []

    @property
    def built(self) -> bool:
        """Whether the cloud was built: calling this no longer imports or reads anything."""
        return bool(self._built)

    def __call__(self) -> Quoter | None:
        if not self._built:
            from starburst.controller.wiring import build_cloud

            cloud = build_cloud(self._settings, self._clock, self._prices)
            self._built.append(cloud.quote if cloud is not None else None)
        return self._built[0]
