"""The submission limits' count of waiting jobs (``read_backlog``, before every group-commit
batch) reads ``waiting_counts``, which the triggers of migration 0015 keep with every write
of the jobs: the counts must equal a count of the jobs themselves after any mix of writes,
the store's and anyone's SQL, on SQLite and PostgreSQL, and the migration must backfill
them from the jobs already there and downgrade cleanly.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import UTC, datetime

import pytest
import sqlalchemy as sa

from starburst.adapters.db import migrate
from starburst.adapters.db.store import SqlStore
from starburst.core.lifecycle import JobState
from starburst.core.records import Amendment, JobSpec, Move

OWNERS = [("ann", "ml"), ("ann", "cv"), ("bob", "cv"), ("cid", None), (None, "ml"), (None, None)]
USERS, TEAMS = {"ann", "bob", "cid", "dan"}, {"ml", "cv", "nlp"}


def counted(engine: sa.Engine) -> tuple[dict[str, int], dict[str, int]]:
    """The waiting jobs per user and per team, counted from the jobs."""
    waiting = "state IN ('submitted', 'queued')"
    with engine.connect() as conn:
        users = conn.execute(
            sa.text(f"SELECT user_name, count(*) FROM jobs WHERE {waiting} GROUP BY user_name")
        )
        by_user = {str(u): int(n) for u, n in users if u is not None}
        teams = conn.execute(
            sa.text(f"SELECT team_name, count(*) FROM jobs WHERE {waiting} GROUP BY team_name")
        )
        by_team = {str(t): int(n) for t, n in teams if t is not None}
    return by_user, by_team


def read(store: SqlStore) -> tuple[dict[str, int], dict[str, int]]:
    found = store.jobs.backlog(users=USERS, teams=TEAMS, arrays=(), keys=())
    return dict(found.waiting_by_user), dict(found.waiting_by_team)


def submit_some(store: SqlStore, rounds: int = 3) -> list[str]:
    specs = [JobSpec(gpus=1, user=u, team=t) for _ in range(rounds) for u, t in OWNERS]
    return [s.job.id for s in store.submissions.submit_many(specs)]


def test_the_counts_follow_every_write_of_the_jobs(store: SqlStore, engine: sa.Engine) -> None:
    ids = submit_some(store)
    ids.append(store.submissions.submit(JobSpec(gpus=1, user="ann", team="ml")).job.id)

    def queued() -> str:
        return next(i for i in ids if store.jobs.get(i).state is JobState.QUEUED)

    def bursting() -> str:
        return next(i for i in ids if store.jobs.get(i).state is JobState.BURSTING)

    steps = [
        lambda: store.lifecycle.admit([Move(i, "in") for i in ids[:8]], actor="c"),
        lambda: store.lifecycle.transition_many(
            [Move(i, "go") for i in ids[:5]], JobState.RUNNING_ONPREM, actor="c"
        ),
        lambda: store.lifecycle.claim(JobState.RUNNING_ONPREM, limit=2, reason="r", actor="c"),
        lambda: store.lifecycle.transition(ids[0], JobState.SUCCEEDED, reason="done", actor="c"),
        lambda: store.lifecycle.transition_many(
            [Move(i, "x") for i in ids[8:12]], JobState.CANCELLED, actor="ann"
        ),
        lambda: store.lifecycle.amend(
            ids[13], Amendment(to_state=JobState.CANCELLED), reason="x", actor="ann"
        ),
        lambda: store.lifecycle.hold({ids[14]: "waits"}),
        lambda: store.lifecycle.transition(queued(), JobState.BURSTING, reason="b", actor="c"),
        lambda: store.lifecycle.transition(bursting(), JobState.QUEUED, reason="back", actor="c"),
        lambda: submit_some(store, rounds=1),
    ]
    for step in steps:
        step()
        assert read(store) == counted(engine)
    # anyone's SQL, too: an admin's bulk change, a new owner, a row written and deleted
    store.accounts.save_user("dan", team="nlp")
    raw = (
        "INSERT INTO jobs (id, user_name, team_name, gpus, cpus, memory_mb, extra, state, "
        "version, submitted_at, queued_at) VALUES ('raw', 'ann', 'ml', 1, 1, 1, '{}', 'queued', "
        "1, :at, :at)"
    )
    changes = [
        "UPDATE jobs SET state = 'failed' WHERE user_name = 'bob'",
        "UPDATE jobs SET user_name = 'dan' WHERE user_name = 'cid'",
        "UPDATE jobs SET team_name = 'nlp' WHERE team_name = 'cv'",
        raw,
        "DELETE FROM jobs WHERE id = 'raw'",
    ]
    for change in changes:
        with engine.begin() as conn:
            conn.execute(sa.text(change), {"at": datetime(2026, 1, 1, tzinfo=UTC)})
        assert read(store) == counted(engine), change
    assert read(store)[0]["dan"] > 0 and "bob" not in read(store)[0]  # none left: not named


OWNER_INDEX = "ix_jobs_waiting_owner"  # migration 0014's partial index, for the count


def job_indexes(engine: sa.Engine) -> set[str]:
    return {index["name"] or "" for index in sa.inspect(engine).get_indexes("jobs")}


def test_0015_counts_the_jobs_already_there_and_downgrades_cleanly(empty_url: str) -> None:
    migrate.upgrade(empty_url, "0014")
    store = SqlStore.open(empty_url)
    try:
        ids = submit_some(store)
        store.lifecycle.transition_many(
            [Move(i, "x") for i in ids[:4]], JobState.CANCELLED, actor="ann"
        )
        assert OWNER_INDEX in job_indexes(store.engine)
        migrate.upgrade(store.engine, "0015")
        before = read(store)
        assert before == counted(store.engine) and before[0]["ann"] > 0
        assert OWNER_INDEX not in job_indexes(store.engine)  # nothing reads it any more
        migrate.downgrade(store.engine, "0014")
        assert "waiting_counts" not in sa.inspect(store.engine).get_table_names()
        assert OWNER_INDEX in job_indexes(store.engine)
        submit_some(store, rounds=1)  # no trigger left behind writes to a table now gone
        migrate.upgrade(store.engine)
        assert read(store) == counted(store.engine) != before
    finally:
        store.close()


@pytest.mark.postgres
def test_concurrent_writers_of_several_owners_keep_exact_counts(pg_db_url: str) -> None:
    """The group commit's inserts and the controller's batch moves, in two threads at once,
    each touching both users' and both teams' counts (in opposite orders of the owners'
    jobs): no write fails (a deadlock would end one as the database unavailable) and the
    counts equal a count of the jobs at the end. Each trigger locks its counts' rows in key
    order; with that order made random, about one run in four ended in a deadlock here."""
    stores = [SqlStore.open(pg_db_url) for _ in range(2)]
    failures: list[BaseException] = []
    owners = [("ann", "ml"), ("bob", "cv")]

    def submitting(store: SqlStore) -> None:
        for n in range(120):
            order = owners if n % 2 else owners[::-1]
            store.submissions.submit_many([JobSpec(gpus=1, user=u, team=t) for u, t in order * 3])

    def moving(store: SqlStore) -> None:
        for n in range(120):
            waiting = store.jobs.queue(states=[JobState.SUBMITTED], limit=4).jobs
            ids = sorted((s.job.id for s in waiting), reverse=bool(n % 2))
            to = JobState.CANCELLED if n % 3 else JobState.RUNNING_ONPREM
            store.lifecycle.transition_many([Move(i, "go") for i in ids], to, actor="c")

    def run(work: Callable[[SqlStore], None], store: SqlStore) -> None:
        try:
            work(store)
        except BaseException as exc:  # reported below, in the test's thread
            failures.append(exc)

    try:
        threads = [
            threading.Thread(target=run, args=(work, store))
            for work, store in zip((submitting, moving), stores, strict=True)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert failures == []
        assert read(stores[0]) == counted(stores[0].engine)
        assert sum(read(stores[0])[0].values()) > 0  # some jobs still waiting: counts compared
    finally:
        for store in stores:
            store.close()
