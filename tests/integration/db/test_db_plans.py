"""The statements that find jobs by arrays of ids or keys stay lookups as the table grows.

psycopg prepares a statement a connection has run five times, and PostgreSQL then keeps one
generic plan for it. The group commit's backlog read (``read_backlog``) and
``unnest_update`` (a pass's moves, the predictions) run on the connections the store keeps;
planned while a new install's jobs table was empty, their generic plans read the whole table
by a sequential scan (the backlog: 10 ms a batch at ten thousand jobs, most of PostgreSQL's
time under a submission burst), and the connections kept them as the table grew. They are
now never prepared (``base.unprepared``). Each statement that finds jobs by arrays of ids,
the admission (``_admit_at_once``, still prepared) too, must read only its own rows,
whatever the table held when the connection first ran it.

Every pass reads the held jobs, oldest first (``controller.loop.gating``): under a burst of
submissions not yet admitted, that read must not go through every submitted job (the index
of held jobs, migration 0017). The index of arrays holds the jobs of arrays only (migration
0016): SQLite must still find an array's jobs through it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
import sqlalchemy as sa

from starburst.adapters.db import migrate
from starburst.adapters.db.base import unnest_update
from starburst.adapters.db.engine import create_engine
from starburst.adapters.db.jobs import _backlog_query, queue_query, read_backlog
from starburst.adapters.db.models import JobRow, table
from starburst.adapters.db.store import SqlStore
from starburst.adapters.db.transitions import _admit_at_once
from starburst.core.lifecycle import JobState
from starburst.core.records import JobSpec, Move
from tests.support.databases import MigratedTemplates

GROWN = 3000
JOBS = table(JobRow)
NOW = datetime(2026, 12, 6, tzinfo=UTC)


# each statement, and how many of the jobs it was given it found


def backlog(conn: sa.Connection, keys: list[str]) -> int:
    found = read_backlog(conn, users=["ann"], teams=["ml"], arrays=["a1"], keys=keys)
    return len(found.known_keys)


def admit(conn: sa.Connection, ids: list[str]) -> int:
    moves = [Move(i, reason="admitted", wait_budget=60.0, predicted_runtime=30.0) for i in ids]
    return len(_admit_at_once(conn, moves, "test", None, NOW).admitted)


def predict(conn: sa.Connection, ids: list[str]) -> int:
    rows = [{"b_id": i, "predicted_runtime": 42.0} for i in ids]
    return unnest_update(conn, JOBS, rows, keys={"b_id": "id"})


def rows_read(conn: sa.Connection) -> int:
    """The rows of ``jobs`` this backend read, by any scan, not yet reported to the
    statistics collector (so counted before and after, in one transaction)."""
    found = conn.exec_driver_sql(
        "SELECT pg_stat_get_xact_tuples_returned('jobs'::regclass) "
        "+ pg_stat_get_xact_tuples_fetched('jobs'::regclass)"
    ).scalar()
    return int(found or 0)


@pytest.fixture
def pg_store(postgres_database: str) -> Iterator[SqlStore]:
    """A store on a database of its own, migrated and never analyzed (the shared one,
    truncated between tests, keeps the statistics of the tests before)."""
    migrate.upgrade(postgres_database)
    opened = SqlStore.open(postgres_database)
    try:
        yield opened
    finally:
        opened.close()


@pytest.mark.postgres
@pytest.mark.parametrize(
    "statement",
    [
        pytest.param(backlog, id="backlog"),
        pytest.param(admit, id="admission"),
        pytest.param(predict, id="unnest_update"),
    ],
)
def test_a_statement_planned_on_an_empty_table_reads_only_its_rows_once_grown(
    postgres_database: str,
    pg_store: SqlStore,
    statement: Callable[[sa.Connection, list[str]], int],
) -> None:
    # one connection, kept: the one the plans would be cached on
    engine = create_engine(postgres_database, pool_size=1, max_overflow=0)
    try:
        for round_ in range(12):  # past psycopg's five runs, and PostgreSQL's five custom plans
            with engine.begin() as conn:
                assert statement(conn, [f"none-{round_}-{i}" for i in range(32)]) == 0
        spec = JobSpec(gpus=1, user="ann", team="ml")
        pg_store.submissions.submit_many([(spec, f"ann/k{i}", None) for i in range(GROWN)])
        with engine.begin() as conn:
            keys = ["ann/k7", "ann/k2999"]
            ids = list(
                conn.execute(sa.select(JOBS.c.id).where(JOBS.c.idempotency_key.in_(keys))).scalars()
            )
            before = rows_read(conn)
            found = statement(conn, [*(keys if statement is backlog else ids), "none"])
            read = rows_read(conn) - before
        assert found == 2
        # its own two rows (and their versions a write leaves), never the table's
        assert read <= 8, f"{read} rows of jobs read to find 2 of {GROWN}"
    finally:
        engine.dispose()


@pytest.mark.postgres
def test_the_held_jobs_are_read_without_the_other_submitted_ones(
    postgres_database: str, pg_store: SqlStore
) -> None:
    engine = create_engine(postgres_database)
    try:
        spec = JobSpec(gpus=1, user="ann", team="ml")
        made = pg_store.submissions.submit_many([spec] * GROWN)
        held = [made[5].job.id, made[2000].job.id]
        pg_store.lifecycle.hold({job_id: "waits for an array slot" for job_id in held})
        with engine.begin() as conn:
            conn.exec_driver_sql("ANALYZE jobs")
        with engine.begin() as conn:
            before = rows_read(conn)
            query = queue_query(
                limit=500,
                cursor=None,
                states=(JobState.SUBMITTED,),
                user=None,
                team=None,
                name=None,
                held=True,
            )
            found = list(conn.execute(query).mappings())
            read = rows_read(conn) - before
        assert sorted(r["id"] for r in found) == sorted(held)
        assert read <= 4, f"{read} rows of jobs read to find the {len(held)} held of {GROWN}"
    finally:
        engine.dispose()


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
