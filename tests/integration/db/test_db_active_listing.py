"""The active jobs' listing reads its page through ``ix_jobs_active_queue`` (migration 0010),
a user's through ``ix_jobs_active_user_queue`` (0011), in queue order, instead of fetching
every active job (or every job of the user) and sorting or filtering them.

The statement checked is the one ``SqlStore.queue`` really sends (captured from the engine).
PostgreSQL is told not to sort (``enable_sort = off`` makes a sort a last resort), so the plan
shows whether an index hands the active jobs over in order; on a few rows it would otherwise
sort them, which is as cheap. SQLite (the single-machine default) has the index too, but its
planner, without statistics, keeps reading ``ix_jobs_queue``: PostgreSQL only here.

The plan is checked twice: as planned for the values given (a custom plan), and as a generic
plan (``plan_cache_mode = force_generic_plan``), what PostgreSQL may switch to once psycopg
prepares a statement it has run five times. A generic plan cannot see parameters' values, so
it could not prove the partial index's predicate if the states were parameters: they are sent
as literals (measured: the active page went from ~2.5 ms to ~30 ms from the sixth request).
"""

from __future__ import annotations

import re
from typing import Any

import psycopg.sql
import pytest
import sqlalchemy as sa

from starburst.adapters.db.store import SqlStore
from starburst.core.lifecycle import JobState
from starburst.core.records import JobSpec, Move
from tests.support.postgres import prepared_plan

ACTIVE = tuple(s for s in JobState if not s.terminal)


def sent_by_queue(store: Any, user: str | None = None) -> tuple[str, Any]:
    seen: list[tuple[str, Any]] = []

    def capture(conn: Any, cursor: Any, statement: str, params: Any, *_: Any) -> None:
        if statement.lstrip().upper().startswith("SELECT") and "FROM jobs" in statement:
            seen.append((statement, params))

    sa.event.listen(store.engine, "before_cursor_execute", capture)
    try:
        store.jobs.queue(limit=50, states=ACTIVE, user=user)
    finally:
        sa.event.remove(store.engine, "before_cursor_execute", capture)
    (sent,) = seen
    return sent


def plan(store: Any, statement: str, params: Any, cache_mode: str) -> str:
    """The plan of ``statement`` prepared (``PREPARE``, its parameters as ``$n``, as psycopg
    prepares a statement it has run five times), then planned as ``cache_mode`` says."""
    names: list[str] = []

    def number(found: re.Match[str]) -> str:
        if found.group(1) not in names:
            names.append(found.group(1))
        return f"${names.index(found.group(1)) + 1}"

    prepared = re.sub(r"%\((\w+)\)s", number, statement)
    values = psycopg.sql.SQL(", ").join(psycopg.sql.Literal(params[n]) for n in names)
    return prepared_plan(store.engine, prepared, values, cache_mode=cache_mode, last_resort="sort")


@pytest.mark.postgres
@pytest.mark.parametrize("cache_mode", ["force_custom_plan", "force_generic_plan"])
@pytest.mark.parametrize(
    ("user", "index"), [(None, "ix_jobs_active_queue"), ("ann", "ix_jobs_active_user_queue")]
)
def test_the_active_listing_reads_the_partial_index_in_order(
    pg_db_url: str, cache_mode: str, user: str | None, index: str
) -> None:
    store = SqlStore.open(pg_db_url)
    specs = [JobSpec(user=u, team="vision", gpus=1, name=f"j{i}") for i in range(30) for u in "ab"]
    submitted = store.submissions.submit_many(specs)
    ended = [Move(s.job.id, "done") for s in submitted[:40]]
    store.lifecycle.transition_many(ended, JobState.CANCELLED, actor="ann")  # ended: not indexed
    try:
        text = plan(store, *sent_by_queue(store, user), cache_mode)
    finally:
        store.close()
    assert index in text, text
    assert "Sort" not in text, text
