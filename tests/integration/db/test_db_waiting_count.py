"""The submission limits' count of waiting jobs (``read_backlog``, before every group-commit
batch) reads ``ix_jobs_waiting_owner`` (migration 0014), the waiting jobs only, instead of
walking every job of the user or team, or the whole table, and reading each row's state.

PostgreSQL is told to scan the table only as a last resort (``enable_seqscan = off``: on a
few rows a scan would otherwise win, which is as cheap there), so the plan shows which index
the count can use. Checked as a custom and as a generic plan: psycopg prepares the statement
(it is the same text for every batch) once it has run five times, and a generic plan must
still prove the partial index's predicate (the states are literals in the statement).
"""

from __future__ import annotations

import psycopg.sql
import pytest

from starburst.adapters.db.jobs import _BACKLOG_SQL
from starburst.adapters.db.store import SqlStore
from starburst.core.lifecycle import JobState
from starburst.core.records import JobSpec, Move
from tests.support.postgres import prepared_plan


def backlog_plan(store: SqlStore, cache_mode: str) -> str:
    """The plan of the backlog query for user ann and team vision, prepared as psycopg
    prepares it (its ``%b`` parameters as ``$n``) and planned as ``cache_mode`` says."""
    prepared = _BACKLOG_SQL
    for n in range(1, 5):
        prepared = prepared.replace("%b", f"${n}", 1)
    args = (["k1"], ["ann"], ["vision"], [])
    values = psycopg.sql.SQL(", ").join(
        psycopg.sql.SQL("{}::varchar[]").format(psycopg.sql.Literal(a)) for a in args
    )
    return prepared_plan(
        store.engine, prepared, values, cache_mode=cache_mode, last_resort="seqscan"
    )


@pytest.mark.postgres
@pytest.mark.parametrize("cache_mode", ["force_custom_plan", "force_generic_plan"])
def test_the_waiting_count_reads_the_partial_index(pg_db_url: str, cache_mode: str) -> None:
    store = SqlStore.open(pg_db_url)
    specs = [JobSpec(user=u, team="vision", gpus=1) for _ in range(30) for u in ("ann", "bob")]
    submitted = store.submissions.submit_many(specs)
    ended = [Move(s.job.id, "done") for s in submitted[:40]]
    store.lifecycle.transition_many(ended, JobState.CANCELLED, actor="ann")  # ended: not indexed
    try:
        text = backlog_plan(store, cache_mode)
        counts = store.jobs.backlog(users={"ann"}, teams={"vision"}, arrays=(), keys=())
    finally:
        store.close()
    assert "ix_jobs_waiting_owner" in text, text
    assert dict(counts.waiting_by_user) == {"ann": 10}
    assert dict(counts.waiting_by_team) == {"vision": 20}
