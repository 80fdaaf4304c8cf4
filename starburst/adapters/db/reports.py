"""Cost report queries: totals of the ledger over a time range, grouped by the keys asked.

Terms:
- *whole days*: the UTC days that lie entirely inside ``[since, until)``; their totals
  come from the daily rollups (``rollups``), a row per job and day rather than per entry.
- *edges*: the parts of the range outside the whole days (a report from 09:00, or up to
  now); their totals come from the entries, found by the ``period_start`` index.

Invariants:
- Each entry is counted once: by its rollup if its day is a whole day of the range,
  else from the entries if its ``period_start`` falls in an edge.
- A report is one SQL statement: each source grouped by the keys and currency, the two
  summed by a final ``GROUP BY`` (one snapshot, never a loop over entries in Python), and
  sorted there too: a report by job may have a row per job, and Python's part is kept to
  turning rows into ``CostTotal``s.
- A period key (day, week, month) is computed from the entry's time or the rollup's day
  with the same function, so both sources name a period alike.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import sqlalchemy as sa

from starburst.core.billing import MICRO
from starburst.core.records import CostTotal

from .models import CostEntryRow, CostRollupRow, table

COSTS = table(CostEntryRow)
ROLLUPS = table(CostRollupRow)
ONPREM = "onprem"
DAY = timedelta(days=1)

PERIODS = ("day", "week", "month")
_FORMATS = {"day": "%Y-%m-%d", "week": "%Y-%m-%d", "month": "%Y-%m"}
_COLUMNS = {
    "team": "team_name",
    "user": "user_name",
    "project": "project",
    "label": "project",
    "cloud": "cloud",
    "region": "region",
    "gpu_type": "gpu_type",
    "source": "source",
    "job": "job_id",
}


def location(source: sa.Table) -> sa.ColumnElement[Any]:
    """``cloud:region`` (or ``cloud`` alone when there is no region)."""
    c = source.c
    return sa.case((c.region.is_(None), c.cloud), else_=c.cloud + ":" + c.region)


def period_text(value: Any, key: str) -> str | None:
    """A group's key value as text (PostgreSQL returns periods as times)."""
    if isinstance(value, datetime):
        return value.strftime(_FORMATS[key])
    return None if value is None else str(value)


def whole_days(since: datetime, until: datetime) -> tuple[datetime, datetime] | None:
    """The first and the end of the whole UTC days inside ``[since, until)``, if any."""
    first = since.astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    end = until.astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    try:
        first = first if first == since else first + DAY
    except OverflowError:  # the last day there is
        return None
    return (first, end) if first < end else None


class Report:
    """The query of one report: ``keys`` to group by, ``rates`` to price on-prem
    GPU-hours, ``filters`` (column name → value; ``None``: no filter)."""

    def __init__(
        self,
        postgres: bool,
        keys: list[str],
        rates: Mapping[str, float],
        filters: Mapping[str, str | None],
    ) -> None:
        self.postgres = postgres
        self.keys = keys
        self.rates = rates
        self.filters = {k: v for k, v in filters.items() if v is not None}

    def query(
        self, since: datetime, until: datetime, *, rollups: bool, top: int | None = None
    ) -> sa.Select[Any] | None:
        """The statement; ``None`` when the range is empty. ``rollups=False``: every
        entry is read (the reference the rollups are checked against); ``top``: only the
        N groups of highest cloud spend in each currency (``core.billing.top_per_currency``'s
        order)."""
        grouped = self._grouped_query(since, until, rollups=rollups)
        if grouped is None or top is None:
            return grouped
        groups = grouped.order_by(None).subquery("groups")
        order = [
            groups.c.micros.desc(),
            groups.c.cloud_hours.desc(),
            *self._order(groups.c)[: len(self.keys)],
        ]
        rank = sa.func.row_number().over(partition_by=groups.c.currency, order_by=order)
        ranked = sa.select(*groups.c, rank.label("rank")).subquery("ranked")
        columns = [ranked.c[c.name] for c in groups.c]
        return (
            sa.select(*columns)
            .where(ranked.c.rank <= top)
            .order_by(ranked.c.currency, ranked.c.rank)
        )

    def _grouped_query(
        self, since: datetime, until: datetime, *, rollups: bool
    ) -> sa.Select[Any] | None:
        days = whole_days(since, until) if rollups else None
        edges = [(since, until)] if days is None else [(since, days[0]), (days[1], until)]
        ranges = [(start, end) for start, end in edges if start < end]
        c = COSTS.c
        parts = []
        if days is not None:
            first, end = days[0].date(), days[1].date()
            parts.append(self._grouped(ROLLUPS, [ROLLUPS.c.day >= first, ROLLUPS.c.day < end]))
        if ranges:
            edge = sa.or_(*(sa.and_(c.period_start >= a, c.period_start < b) for a, b in ranges))
            parts.append(self._grouped(COSTS, [edge]))
        if not parts:
            return None
        if len(parts) == 1:  # already grouped: no second pass over the groups
            return parts[0].order_by(*self._order(parts[0].selected_columns))
        union = sa.union_all(*parts).subquery("parts")
        groups = [union.c[k] for k in self.keys]
        return (
            sa.select(
                *groups,
                union.c.currency,
                *(sa.cast(sa.func.sum(union.c[n]), _TYPES[n]).label(n) for n in _SUMS),
            )
            .group_by(*groups, union.c.currency)
            .order_by(*self._order(union.c))
        )

    def _order(self, columns: Any) -> list[sa.ColumnElement[Any]]:
        """Keys in code-point order, absent (NULL) first, then currency: the order of
        ``(value or "", ...)`` in Python, which reports have always been sorted by."""
        names = [*self.keys, "currency"]
        if not self.postgres:  # SQLite: binary collation, NULLs first already
            return [columns[n] for n in names]
        return [
            sa.nulls_first(columns[n] if n in PERIODS else columns[n].collate("C")) for n in names
        ]

    def _grouped(self, source: sa.Table, where: list[sa.ColumnElement[bool]]) -> sa.Select[Any]:
        """One source's totals per group (``source``: the entries or the rollups)."""
        c = source.c
        onprem = c.source == ONPREM
        entries = sa.func.sum(c.entries) if source is ROLLUPS else sa.func.count()
        groups = [self._group(source, k).label(k) for k in self.keys]
        zero = sa.literal(0.0, sa.Float)
        query = (
            sa.select(
                *groups,
                c.currency,
                sa.cast(sa.func.sum(c.amount_micros), sa.BigInteger()).label("micros"),
                sa.func.sum(sa.case((onprem, zero), else_=c.gpu_hours)).label("cloud_hours"),
                sa.func.sum(sa.case((onprem, c.gpu_hours), else_=zero)).label("onprem_hours"),
                sa.func.sum(sa.case((onprem, c.gpu_hours * self._rate(source)), else_=zero)).label(
                    "onprem_value"
                ),
                sa.cast(entries, sa.BigInteger()).label("entries"),
            )
            .where(*where, *(c[name] == value for name, value in self.filters.items()))
            .group_by(*groups, c.currency)
        )
        return query

    def _group(self, source: sa.Table, key: str) -> sa.ColumnElement[Any]:
        if key in _COLUMNS:
            return source.c[_COLUMNS[key]]
        if key == "location":
            return location(source)
        when = self._time(source)
        if self.postgres:  # formatted in Python: to_char would run on every row
            return sa.func.date_trunc(key, when)
        if key == "week":  # the Monday on or before the day
            return sa.func.date(when, "weekday 0", "-6 days")
        return sa.func.strftime(_FORMATS[key], when)

    def _time(self, source: sa.Table) -> sa.ColumnElement[Any]:
        """The moment a period key is computed from: the entry's start, the rollup's day
        (PostgreSQL: as a UTC time without zone, so both truncate alike)."""
        if source is ROLLUPS:
            day = source.c.day
            return sa.cast(day, sa.DateTime()) if self.postgres else day
        start = source.c.period_start
        return sa.func.timezone("UTC", start) if self.postgres else start

    def _rate(self, source: sa.Table) -> sa.ColumnElement[Any]:
        """The internal rate of a row's GPU type as a SQL expression (bound values)."""
        lowered = {k.lower(): float(v) for k, v in self.rates.items()}
        default = sa.literal(lowered.pop("*", 0.0), sa.Float)
        if not lowered:
            return default
        kind = sa.func.lower(sa.func.coalesce(source.c.gpu_type, ""))
        return sa.case(
            {k: sa.literal(v, sa.Float) for k, v in lowered.items()}, value=kind, else_=default
        )


_SUMS = ("micros", "cloud_hours", "onprem_hours", "onprem_value", "entries")
#: The type of each sum, so PostgreSQL returns integers, not ``numeric``, for the counts.
_TYPES: dict[str, Any] = {
    "micros": sa.BigInteger(),
    "cloud_hours": sa.Float(),
    "onprem_hours": sa.Float(),
    "onprem_value": sa.Float(),
    "entries": sa.BigInteger(),
}


def aggregate(conn: sa.Connection, query: sa.Select[Any], *, postgres: bool) -> list[Any]:
    """Run a report query, its rows read from the driver's cursor (plain tuples, no
    ``Row`` per group). On PostgreSQL, in this transaction only: hash the groups
    (the planner cannot estimate how few groups there are — a project × week has no
    statistics — and would sort a million rows on disk instead), without JIT
    compilation (a quarter of a second for a query that runs once)."""
    if postgres:
        for setting in (
            "SET LOCAL enable_sort = off",
            "SET LOCAL jit = off",
            "SET LOCAL work_mem = '64MB'",
        ):
            conn.execute(sa.text(setting))
    result = conn.execute(query)
    try:  # plain tuples from the driver: no column of a report needs result processing
        return list(result.cursor.fetchall())
    finally:
        result.close()


def totals(keys: Sequence[str], rows: Iterable[Any]) -> list[CostTotal]:
    """Report rows (keys, currency, then the sums, in the query's order) as ``CostTotal``s;
    a tight loop over the rows as the driver returns them, since a report by job can have a
    row per job: a tuple per row (``CostTotal._make``), one ``Decimal`` for the money."""
    width = len(keys)
    periods = [(i, k) for i, k in enumerate(keys) if k in PERIODS]
    make, micro = CostTotal._make, _MICROS
    out = []
    if width == 1 and not periods:  # by one column (by job: one row per job)
        (name,) = keys
        for value, currency, micros, cloud_hours, onprem_hours, shown, entries in rows:
            out.append(
                make(
                    (
                        {name: value},
                        currency,
                        Decimal(micros) / micro,
                        float(cloud_hours),
                        int(entries),
                        float(onprem_hours),
                        _shown(shown),
                    )
                )
            )
        return out
    for row in rows:
        values = list(row[:width])
        for i, key in periods:
            values[i] = period_text(values[i], key)
        currency, micros, cloud_hours, onprem_hours, shown, entries = row[width:]
        out.append(
            make(
                (
                    dict(zip(keys, values, strict=True)),
                    currency,
                    Decimal(micros) / micro,
                    float(cloud_hours),
                    int(entries),
                    float(onprem_hours),
                    _shown(shown),
                )
            )
        )
    return out


def _shown(value: float | None) -> Decimal:
    """Showback money (a float sum of GPU-hours × rate) to the micro-unit."""
    return Decimal(str(value)).quantize(MICRO) if value else _NOTHING


_MICROS = Decimal(1_000_000)
_NOTHING = Decimal(0).quantize(MICRO)
