"""The database every repository of the SQL store shares (``Database``): the engine, the
clock, dialect-aware inserts, and the fencing check.

Terms:
- *fencing token*: the number the leader lock handed to the current leader
  (``leader_terms.token``, monotonic per lock name). A write that carries a token is applied
  only while that token is still the current one; a replica that lost leadership (its token is
  older) gets ``StaleLeader`` and changes nothing. Writes without a token (a user cancelling
  their own job through the API) are not fenced.
- On PostgreSQL the check takes a ``FOR SHARE`` lock on the ``leader_terms`` row, so a new
  leader's token increment waits until every write fenced by the old token has committed.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, TypeVar

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Engine

from starburst.core.ports import Clock
from starburst.core.records import JobNotFound, StaleLeader
from starburst.wallclock import WallClock

from .models import JobRow, LeaderTermRow, table

T = TypeVar("T")

#: Rows per statement in batch writes (keeps SQLite under its bound-parameter limit).
CHUNK = 1000


def chunks(items: Sequence[T], size: int = CHUNK) -> Iterator[Sequence[T]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


class Database:
    """What every repository of the store is constructed with: one engine, one clock (it
    stamps writes made without ``at=``) and ``leader_name``, the lock whose fencing tokens
    guard the store's writes."""

    def __init__(
        self, engine: Engine, *, clock: Clock | None = None, leader_name: str = "controller"
    ) -> None:
        self._engine = engine
        self._clock: Clock = clock or WallClock()
        self.leader_name = leader_name

    @property
    def engine(self) -> Engine:
        return self._engine

    @property
    def clock(self) -> Clock:
        return self._clock

    @property
    def is_postgres(self) -> bool:
        return self._engine.dialect.name == "postgresql"

    def now(self, at: float | None) -> float:
        """``at``, or the clock's now when it is None."""
        return self._clock.now() if at is None else at

    def insert(self, table: sa.Table) -> Any:
        """A dialect ``INSERT`` that supports ``on_conflict_do_nothing``."""
        if self.is_postgres:
            return postgresql.insert(table)
        return sqlite.insert(table)

    def check_fence(self, conn: sa.Connection, token: int | None) -> None:
        """``StaleLeader`` unless ``token`` is None or the current one (see above)."""
        if token is None:
            return
        terms = table(LeaderTermRow)
        query = sa.select(terms.c.token).where(terms.c.name == self.leader_name)
        if self.is_postgres:
            query = query.with_for_update(read=True)
        current = conn.execute(query).scalar()
        if current != token:
            raise StaleLeader(self.leader_name, token, int(current or 0))


def new_id(result: sa.CursorResult[Any]) -> int:
    """The primary key an ``INSERT`` of one row generated."""
    key = result.inserted_primary_key
    if key is None:
        raise RuntimeError("the INSERT generated no primary key")
    return int(key[0])


def in_chunks(column: sa.ColumnElement[Any], values: Iterable[Any]) -> list[sa.ColumnElement[bool]]:
    """``column IN (...)`` clauses, one per chunk of values."""
    items = list(values)
    return [column.in_(part) for part in chunks(items)]


def fk_guard(job_id: str, work: Callable[[sa.Connection], T]) -> Callable[[sa.Connection], T]:
    """``work`` after checking the job exists, so a missing one is ``JobNotFound``, not a
    foreign-key error."""
    jobs = table(JobRow)

    def guarded(conn: sa.Connection) -> T:
        exists = conn.execute(sa.select(jobs.c.id).where(jobs.c.id == job_id)).first()
        if exists is None:
            raise JobNotFound(job_id)
        return work(conn)

    return guarded


def literal_in(column: sa.ColumnElement[Any], values: Iterable[str]) -> sa.ColumnElement[bool]:
    """``column IN ('a', 'b')`` with the values written into the statement, not parameters:
    for a few constants of the code's own (job states), never for users' input.

    A partial index (``ix_jobs_active_queue``: the active states) can serve a query only if
    the planner proves the query's condition implies the index's, which it cannot do for
    parameters in a generic plan, the one PostgreSQL may settle on once psycopg prepares a
    statement it has run five times (the active page went from ~2.5 ms to ~30 ms then)."""
    return column.in_(
        sa.bindparam("literal_in", list(values), expanding=True, literal_execute=True, unique=True)
    )


def unnest_insert(
    conn: sa.Connection,
    target: sa.Table,
    rows: Sequence[dict[str, Any]],
    *,
    conflict: str | None = None,
    returning: str | None = None,
) -> list[Any]:
    """PostgreSQL only: insert ``rows`` (dicts with the same keys) as one short statement,
    ``INSERT ... SELECT ... FROM unnest(<one array per column>)``; skip rows whose ``conflict``
    column clashes (``ON CONFLICT DO NOTHING``); the ``returning`` column of the new rows.

    The multi-row ``VALUES`` SQLAlchemy builds for a batch is a statement of one placeholder
    per value (20,000 for 1,000 jobs), which psycopg splits and converts on every call, too
    long for its query cache: 65% of the client's time in a batched submit. Here the text has
    one placeholder per column and the values travel as arrays, in binary (``%b``): psycopg
    builds a text array value by value, a string's quoting checked by a regular expression,
    5 to 15 times the binary array's cost. JSON columns go as text (``json.dumps``, a Python
    None as JSON ``null`` unless the type says ``none_as_null``)."""
    sql, arrays = unnest_parts(conn.dialect, target, rows, conflict=conflict, returning=returning)
    result = conn.exec_driver_sql(sql, tuple(arrays))
    return [r[0] for r in result] if returning is not None else []


def unprepared(conn: sa.Connection, sql: str, params: Sequence[Any]) -> sa.CursorResult[Any]:
    """``conn.exec_driver_sql(sql, params)`` without psycopg preparing the statement
    (PostgreSQL), so PostgreSQL plans it for these parameters and the table as it is now.

    psycopg prepares a statement a connection has run five times, and PostgreSQL then keeps
    one generic plan for it if that plan looked no dearer than the custom ones. For the
    statements that find jobs by an array of keys or ids (the group commit's backlog,
    ``unnest_update``), the generic plan made while the jobs table of a new install was
    small reads the whole table, and the connections of the pool keep it as the table grows,
    until an ``ANALYZE`` of the table (autovacuum's, a minute or so later) replaces it: the
    backlog's read took 10 ms a batch at 10,000 jobs, and a pass's update of two jobs read
    all 3,000 (``tests/integration/db/test_db_plans.py``). Planned each time, they are index
    lookups of their own rows, for about 0.5 ms of the server's time a statement
    (``docs/benchmarks.md``)."""
    driver: Any = conn.connection.driver_connection
    kept, driver.prepare_threshold = driver.prepare_threshold, None  # None: never prepare
    try:
        return conn.exec_driver_sql(sql, tuple(params))
    finally:
        driver.prepare_threshold = kept


def unnest_update(
    conn: sa.Connection,
    target: sa.Table,
    rows: Sequence[dict[str, Any]],
    *,
    keys: Mapping[str, str],
) -> int:
    """PostgreSQL only: update ``rows`` (dicts with the same keys) as one short statement,
    ``UPDATE ... FROM unnest(<one array per key>)``; the number of rows updated. ``keys``
    maps the keys that find a row to their columns (``{"b_id": "id", "b_version":
    "version"}``: the job, only at the version read); every other key is a column set to
    the row's value. A row that finds nothing is not written (as ``WHERE`` does).

    The ``executemany`` of one ``UPDATE`` per row costs psycopg a conversion and a pipelined
    statement per row and the server an execution per row; here, as in ``unnest_insert``,
    the values travel as one array per column."""
    columns = tuple(rows[0])
    sql, sends = _unnest_update_statement(conn.dialect, target, columns, tuple(keys.items()))
    result = unprepared(conn, sql, _arrays(rows, columns, sends))
    return int(result.rowcount)


def unnest_parts(
    dialect: sa.Dialect,
    target: sa.Table,
    rows: Sequence[dict[str, Any]],
    *,
    conflict: str | None = None,
    returning: str | None = None,
    where: str | None = None,
) -> tuple[str, list[list[Any]]]:
    """``unnest_insert``'s statement (its placeholders are ``%b``, one per column) and its
    parameters, one array per column, for a caller that makes it part of a larger one;
    ``where``: a condition (SQL) without which no row is inserted."""
    columns = tuple(rows[0])
    sql, sends = _unnest_statement(dialect, target, columns, conflict, returning, where)
    return sql, _arrays(rows, columns, sends)


#: how a column's values are sent in an array (None: as they are)
Send = Callable[[list[Any]], list[Any]]


def _arrays(
    rows: Sequence[dict[str, Any]], columns: tuple[str, ...], sends: tuple[Send | None, ...]
) -> list[list[Any]]:
    """One array per column of ``rows``, each value as its column's array takes it
    (``_unnested``)."""
    arrays: list[list[Any]] = []
    for name, send in zip(columns, sends, strict=True):
        values = [row[name] for row in rows]
        arrays.append(values if send is None else send(values))
    return arrays


def _as_json(values: list[Any]) -> list[Any]:
    """A JSON column's values as text, a Python None as JSON ``null``."""
    return [json.dumps(v) for v in values]


def _as_json_or_null(values: list[Any]) -> list[Any]:
    """A JSON column's values as text, a Python None as SQL NULL (``none_as_null``)."""
    return [None if v is None else json.dumps(v) for v in values]


def _as_float(values: list[Any]) -> list[Any]:
    """A float column's values as floats: an array holds one type, and a batch may give
    ``600`` for one row and ``600.5`` for the next."""
    return [None if v is None else float(v) for v in values]


def _unnested(
    dialect: sa.Dialect, columns: Sequence[sa.Column[Any]]
) -> tuple[str, list[str], tuple[Send | None, ...]]:
    """``unnest(%b::<type>[], ...) AS u(c0, ...)`` for values of ``columns``, each value as
    its column takes it (``u.c0``; a JSON one sent as text, then ``u.c0::json``), and how
    each column's values are sent (``Send``)."""
    kinds: list[str] = []
    values: list[str] = []
    sends: list[Send | None] = []
    for i, column in enumerate(columns):
        kind = column.type
        if isinstance(kind, sa.JSON):
            kinds.append("text[]")
            values.append(f"u.c{i}::json")
            sends.append(_as_json_or_null if kind.none_as_null else _as_json)
        else:
            kinds.append(f"{kind.compile(dialect)}[]")
            values.append(f"u.c{i}")
            sends.append(_as_float if isinstance(kind, sa.Float) else None)
    params = ", ".join(f"%b::{kind}" for kind in kinds)
    names = ", ".join(f"c{i}" for i in range(len(columns)))
    return f"unnest({params}) AS u({names})", values, tuple(sends)


@functools.lru_cache(maxsize=32)
def _unnest_statement(
    dialect: sa.Dialect,
    target: sa.Table,
    columns: tuple[str, ...],
    conflict: str | None,
    returning: str | None,
    where: str | None = None,
) -> tuple[str, tuple[Send | None, ...]]:
    """``unnest_insert``'s statement for these columns (built once, then reused), and how
    each column's values are sent."""
    source, values, sends = _unnested(dialect, [target.c[name] for name in columns])
    sql = (
        f"INSERT INTO {target.name} ({', '.join(columns)}) SELECT {', '.join(values)} FROM {source}"
    )
    if where is not None:
        sql += f" WHERE {where}"
    if conflict is not None:
        sql += f" ON CONFLICT ({conflict}) DO NOTHING"
    if returning is not None:
        sql += f" RETURNING {returning}"
    return sql, sends


@functools.lru_cache(maxsize=32)
def _unnest_update_statement(
    dialect: sa.Dialect,
    target: sa.Table,
    columns: tuple[str, ...],
    keys: tuple[tuple[str, str], ...],
) -> tuple[str, tuple[Send | None, ...]]:
    """``unnest_update``'s statement for these keys (built once, then reused), and how each
    column's values are sent."""
    found_by = dict(keys)
    names = [found_by.get(name, name) for name in columns]
    source, values, sends = _unnested(dialect, [target.c[name] for name in names])
    sets = [
        f"{n} = {v}"
        for key, n, v in zip(columns, names, values, strict=True)
        if key not in found_by
    ]
    where = [
        f"{target.name}.{n} = {v}"
        for key, n, v in zip(columns, names, values, strict=True)
        if key in found_by
    ]
    sql = f"UPDATE {target.name} SET {', '.join(sets)} FROM {source} WHERE {' AND '.join(where)}"
    return sql, sends
