"""The active jobs' listing reads its page through ``ix_jobs_active_queue`` (migration 0010),
in queue order, instead of fetching every active job and sorting them.

The statement checked is the one ``SqlStore.queue`` really sends (captured from the engine).
PostgreSQL is told not to sort (``enable_sort = off`` makes a sort a last resort), so the plan
shows whether an index hands the active jobs over in order; on a few rows it would otherwise
sort them, which is as cheap. SQLite (the single-machine default) has the index too, but its
planner, without statistics, keeps reading ``ix_jobs_queue``: PostgreSQL only here."""

from __future__ import annotations

from typing import Any

import pytest
import sqlalchemy as sa

from starburst.adapters.db.store import SqlStore
from starburst.core.lifecycle import JobState
from starburst.core.records import JobSpec

ACTIVE = tuple(s for s in JobState if not s.terminal)


def sent_by_queue(store: Any) -> tuple[str, Any]:
    seen: list[tuple[str, Any]] = []

    def capture(conn: Any, cursor: Any, statement: str, params: Any, *_: Any) -> None:
        if statement.lstrip().upper().startswith("SELECT") and "FROM jobs" in statement:
            seen.append((statement, params))

    sa.event.listen(store.engine, "before_cursor_execute", capture)
    try:
        store.jobs.queue(limit=50, states=ACTIVE)
    finally:
        sa.event.remove(store.engine, "before_cursor_execute", capture)
    (sent,) = seen
    return sent


def plan(store: Any, statement: str, params: Any) -> str:
    with store.engine.connect() as conn:
        cursor = conn.connection.dbapi_connection.cursor()
        cursor.execute("SET enable_sort = off")
        cursor.execute("EXPLAIN " + statement, params)
        rows = [" ".join(str(c) for c in row) for row in cursor.fetchall()]
        cursor.close()
        conn.rollback()
    return "\n".join(rows)


@pytest.mark.postgres
def test_the_active_listing_reads_the_partial_index_in_order(pg_db_url: str) -> None:
    store = SqlStore.open(pg_db_url)
    store.jobs.submit_many(
        [JobSpec(user="ann", team="vision", gpus=1, name=f"j{i}") for i in range(30)]
    )
    try:
        text = plan(store, *sent_by_queue(store))
    finally:
        store.close()
    assert "ix_jobs_active_queue" in text, text
    assert "Sort" not in text, text
