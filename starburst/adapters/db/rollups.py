"""Daily rollups of the ledger: what lets a report over whole days skip the entries.

Terms:
- *rollup key*: an entry's UTC day (of ``period_start``) and every column a report groups
  or filters by: job, source, user, team, project, cloud, region, GPU type, currency.
- *rollup*: a ``cost_rollups`` row: the money (micro-units), GPU-hours and number of the
  entries of one key.

Invariants:
- Entries reach the ledger only through ``enter``, which adds each entry it inserted (and
  none it skipped as already entered) to its key's rollup in the same transaction: for
  every key, the sum of its rollup rows equals the sum of its entries, in any snapshot.
- A key may have more than one rollup row (two transactions that both found none and
  both inserted one); only sums are ever read, so that is harmless.
- Money is summed as integers (exact); GPU-hours as floats, in another order than a sum
  over the entries, so they agree to the float's precision (about 1e-15 relative), not
  to the bit.
- ``rebuild`` recomputes every rollup from the entries (after a bulk load that bypassed
  ``enter``); the migration that created the table backfills with the same grouping.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, date, datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import sqlite

from .base import chunks, in_chunks
from .models import CostEntryRow, CostRollupRow, table

COSTS = table(CostEntryRow)
ROLLUPS = table(CostRollupRow)

#: The rollup key after the day, in the order of ``cost_rollups``'s columns.
DIMENSIONS = (
    "job_id",
    "source",
    "user_name",
    "team_name",
    "project",
    "cloud",
    "region",
    "gpu_type",
    "currency",
)
#: What a ledger entry needs to be rolled up (returned by the insert).
_ENTERED = (*DIMENSIONS, "period_start", "amount_micros", "gpu_hours")
#: An interval is entered once (per GPU-type group ``part`` of an on-prem run).
_INTERVAL = ("job_id", "source", "period_start", "part")
#: The columns of an entry and their PostgreSQL types (for arrays of them).
_PG_TYPES = {
    "job_id": "varchar",
    "launch_id": "bigint",
    "source": "varchar",
    "user_name": "varchar",
    "team_name": "varchar",
    "project": "varchar",
    "cloud": "varchar",
    "region": "varchar",
    "gpu_type": "varchar",
    "period_start": "timestamptz",
    "period_end": "timestamptz",
    "gpu_hours": "float8",
    "amount_micros": "bigint",
    "currency": "varchar",
    "part": "int",
}
_PG_INSERT = sa.text(
    f"INSERT INTO cost_entries ({', '.join(_PG_TYPES)}) "
    f"SELECT * FROM unnest({', '.join(f'CAST(:{n} AS {t}[])' for n, t in _PG_TYPES.items())}) "
    f"ON CONFLICT ({', '.join(_INTERVAL)}) DO NOTHING RETURNING {', '.join(_ENTERED)}"
)

Key = tuple[Any, ...]


def utc_day(moment: datetime) -> date:
    """The UTC date of a stored time (naive on SQLite: already UTC)."""
    return moment.astimezone(UTC).date() if moment.tzinfo else moment.date()


def day_of(postgres: bool, column: sa.ColumnElement[Any]) -> sa.ColumnElement[Any]:
    """An entry's UTC day in SQL (as ``utc_day`` computes it in Python)."""
    if postgres:
        return sa.cast(sa.func.timezone("UTC", column), sa.Date)
    return sa.func.date(column)


def enter(conn: sa.Connection, rows: Sequence[dict[str, Any]], postgres: bool) -> int:
    """Insert ledger ``rows``, skipping any interval already entered, and add those
    inserted to their rollups; how many were inserted."""
    entered = _insert_pg(conn, rows) if postgres else _insert_sqlite(conn, rows)
    _add(conn, _sums(entered))
    return len(entered)


def _insert_sqlite(conn: sa.Connection, rows: Sequence[dict[str, Any]]) -> list[Any]:
    rows = [{**row, "part": row.get("part") or 0} for row in rows]
    statement = (
        sqlite.insert(COSTS)
        .on_conflict_do_nothing(index_elements=list(_INTERVAL))
        .returning(*(COSTS.c[name] for name in _ENTERED))
    )
    entered: list[Any] = []
    for part in chunks(rows):
        entered += conn.execute(statement, list(part)).all()
    return entered


def _insert_pg(conn: sa.Connection, rows: Sequence[dict[str, Any]]) -> list[Any]:
    """One ``INSERT ... SELECT FROM unnest(arrays)`` per 5,000 rows: a multi-row
    ``VALUES`` with ``RETURNING`` costs the driver seconds per 10,000 rows."""
    entered: list[Any] = []
    for part in chunks(rows, 5_000):
        params = {name: [row.get(name) for row in part] for name in _PG_TYPES}
        params["gpu_hours"] = [float(row["gpu_hours"]) for row in part]  # one type per array
        params["part"] = [int(row.get("part") or 0) for row in part]
        entered += conn.execute(_PG_INSERT, params).all()
    return entered


def rebuild(conn: sa.Connection, postgres: bool) -> None:
    """Recompute every rollup from the entries (one ``INSERT ... SELECT``)."""
    c = COSTS.c
    day = day_of(postgres, c.period_start)
    dimensions = [c[name] for name in DIMENSIONS]
    totals = sa.select(
        day,
        *dimensions,
        sa.func.sum(c.amount_micros),
        sa.func.sum(c.gpu_hours),
        sa.func.count(),
    ).group_by(day, *dimensions)
    conn.execute(sa.delete(ROLLUPS))
    names = ["day", *DIMENSIONS, "amount_micros", "gpu_hours", "entries"]
    conn.execute(sa.insert(ROLLUPS).from_select(names, totals))


def _sums(entered: Sequence[Any]) -> dict[Key, list[Any]]:
    """Money, GPU-hours and count of the entries of each rollup key."""
    sums: dict[Key, list[Any]] = {}
    for row in entered:
        key = (utc_day(row.period_start), *(getattr(row, name) for name in DIMENSIONS))
        total = sums.setdefault(key, [0, 0.0, 0])
        total[0] += int(row.amount_micros)
        total[1] += float(row.gpu_hours)
        total[2] += 1
    return sums


def _add(conn: sa.Connection, sums: dict[Key, list[Any]]) -> None:
    """Add ``sums`` to the rollups: to an existing row of the key, else a new row. Rows are
    updated in id order, so two writers lock them in the same order."""
    if not sums:
        return
    found = _existing(conn, sums)
    updates = sorted(
        ({"rid": found[k], "m": m, "h": h, "n": n} for k, (m, h, n) in sums.items() if k in found),
        key=lambda u: u["rid"],
    )
    r = ROLLUPS.c
    if updates:
        conn.execute(
            sa.update(ROLLUPS)
            .where(r.id == sa.bindparam("rid"))
            .values(
                amount_micros=r.amount_micros + sa.bindparam("m"),
                gpu_hours=r.gpu_hours + sa.bindparam("h"),
                entries=r.entries + sa.bindparam("n"),
            ),
            updates,
        )
    names = ("day", *DIMENSIONS)
    inserts = [
        {**dict(zip(names, k, strict=True)), "amount_micros": m, "gpu_hours": h, "entries": n}
        for k, (m, h, n) in sums.items()
        if k not in found
    ]
    for part in chunks(inserts):
        conn.execute(sa.insert(ROLLUPS), list(part))


def _existing(conn: sa.Connection, sums: dict[Key, list[Any]]) -> dict[Key, int]:
    """The rollup row (the lowest id) of each key of ``sums`` that has one."""
    r = ROLLUPS.c
    days = sorted({k[0] for k in sums})
    found: dict[Key, int] = {}
    for clause in in_chunks(r.job_id, {k[1] for k in sums}):
        query = (
            sa.select(r.id, r.day, *(r[name] for name in DIMENSIONS))
            .where(clause, r.day.in_(days))
            .order_by(r.id.desc())
        )
        for row in conn.execute(query):
            found[tuple(row[1:])] = row.id
    return {k: v for k, v in found.items() if k in sums}
