"""The group commit's backlog read stays an index lookup as the jobs table grows.

A group commit reads the backlog (``read_backlog``: known keys, waiting counts, array sizes)
before every batch, on a connection the store keeps. psycopg prepares a statement run five
times on a connection, and PostgreSQL then keeps one generic plan for it: planned while the
jobs table of a new install was empty, that plan read the whole table by a sequential scan,
and kept doing so at ten thousand jobs (10 ms a batch, most of PostgreSQL's time under a
submission burst). The read must be planned for its keys, whatever the table held when the
connection first ran it. The index of arrays holds the jobs of arrays only (migration 0016):
SQLite must still find an array's jobs through it.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa

from starburst.adapters.db import migrate
from starburst.adapters.db.engine import create_engine
from starburst.adapters.db.jobs import _backlog_query, read_backlog
from starburst.adapters.db.store import SqlStore
from starburst.core.records import JobSpec
from tests.support.databases import MigratedTemplates

GROWN = 3000


def backlog(conn: sa.Connection, keys: list[str]) -> frozenset[str]:
    return read_backlog(conn, users=["ann"], teams=["ml"], arrays=["a1"], keys=keys).known_keys


def sequential_reads(conn: sa.Connection) -> tuple[int, int]:
    """This backend's sequential scans of ``jobs`` and the rows they read, not yet reported
    to the statistics collector (so counted before and after, on one connection)."""
    found = conn.exec_driver_sql(
        "SELECT pg_stat_get_xact_numscans('jobs'::regclass), "
        "pg_stat_get_xact_tuples_returned('jobs'::regclass)"
    ).one()
    return int(found[0]), int(found[1])


@pytest.mark.postgres
def test_a_read_planned_on_an_empty_table_does_not_scan_it_once_grown(
    postgres_database: str,
) -> None:
    migrate.upgrade(postgres_database)
    # one connection, kept: the one the plans would be cached on
    reader = create_engine(postgres_database, pool_size=1, max_overflow=0)
    store = SqlStore.open(postgres_database)
    try:
        for round_ in range(12):  # past psycopg's five runs, and PostgreSQL's five custom plans
            with reader.begin() as conn:
                assert backlog(conn, [f"none-{round_}-{i}" for i in range(32)]) == frozenset()
        spec = JobSpec(gpus=1, user="ann", team="ml")
        store.submissions.submit_many([(spec, f"ann/k{i}", None) for i in range(GROWN)])
        with reader.begin() as conn:
            before = sequential_reads(conn)
            assert backlog(conn, ["ann/k7", "ann/k2999", "ann/none"]) == {"ann/k7", "ann/k2999"}
            scans, rows = (b - a for a, b in zip(before, sequential_reads(conn), strict=True))
        assert (scans, rows) == (0, 0), f"{scans} sequential scans of jobs read {rows} rows"
    finally:
        store.close()
        reader.dispose()


def test_sqlite_counts_an_array_through_its_partial_index(
    migrated_templates: MigratedTemplates, tmp_path: Path
) -> None:
    engine = create_engine(migrated_templates.sqlite_url(tmp_path))
    try:
        query = _backlog_query(users=[], teams=[], arrays=["a1", "a2"], keys=[])
        with engine.connect() as conn:
            compiled = query.compile(conn, compile_kwargs={"literal_binds": True})
            plan = [str(row[-1]) for row in conn.exec_driver_sql(f"EXPLAIN QUERY PLAN {compiled}")]
    finally:
        engine.dispose()
    assert any("ix_jobs_array_id" in step for step in plan), plan
    assert not any(step.startswith("SCAN jobs") for step in plan), plan
