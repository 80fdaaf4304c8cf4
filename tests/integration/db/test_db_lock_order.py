"""The admission and a multi-job move lock the same jobs in one order: neither deadlocks;
a deadlock elsewhere is worded as the conflict it is.

The controller's admission queues the submitted jobs in the queue's order with one
``UPDATE ... FROM unnest(...)`` (``transitions._admit_at_once``), which locked each row as its
join reached it; a user's cancel of several jobs (``transition_many``) locks them first with
``SELECT ... FOR UPDATE``, in the order its scan found them. Racing each other over the same
jobs in opposite orders, each held a job the other wanted, until PostgreSQL's deadlock
detector (``deadlock_timeout``, a second) failed one: a pass that failed (and a leader that
stepped down) or a cancel answered 503. Both now lock the jobs in id order.
"""

from __future__ import annotations

import dataclasses
import threading
import time

import pytest
import sqlalchemy as sa

from starburst.adapters.db import migrate
from starburst.adapters.db.engine import (
    DatabaseUnavailable,
    WriteConflict,
    create_engine,
    translate_errors,
)
from starburst.adapters.db.store import SqlStore
from starburst.core.errors import TransientError
from starburst.core.lifecycle import JobState
from starburst.core.records import JobSpec, Move
from tests.support.racing import race, slow_rows

#: each job row's update first sleeps this long (a trigger), so the two statements interleave
ROW_S = 0.3
#: the plans of a large jobs table, where both statements find the jobs by their index
LARGE_TABLE_PLANS = (
    "enable_seqscan",
    "enable_bitmapscan",
    "enable_hashjoin",
    "enable_mergejoin",
)


@pytest.mark.postgres
def test_admission_and_a_multi_job_cancel_of_the_same_jobs_both_complete(
    postgres_database: str,
) -> None:
    migrate.upgrade(postgres_database)
    url = sa.make_url(postgres_database)
    engine = sa.create_engine(url)
    with engine.begin() as conn:
        for setting in LARGE_TABLE_PLANS:
            conn.exec_driver_sql(f'ALTER DATABASE "{url.database}" SET {setting} = off')
    engine.dispose()
    controller, user = SqlStore.open(postgres_database), SqlStore.open(postgres_database)
    try:
        spec = JobSpec(gpus=1, user="ann", team="ml", image="x:1", command="true")
        # stored b first: the queue's order (and the table's) is the reverse of the ids'
        for job_id in ("job-b", "job-a"):
            controller.submissions.submit(dataclasses.replace(spec, id=job_id))
        with controller.engine.begin() as conn:
            slow_rows(conn, "UPDATE", ROW_S, only="OLD.id IN ('job-a', 'job-b')")
        for store in (controller, user):  # connected already: the race starts at once
            store.jobs.count(JobState.SUBMITTED)

        def admit() -> None:  # the queue's order: b, then a
            controller.lifecycle.admit(
                [Move("job-b", "admitted"), Move("job-a", "admitted")], actor="controller"
            )

        def cancel() -> None:
            time.sleep(ROW_S / 2)  # while the admission holds its first job
            user.lifecycle.transition_many(
                [Move("job-a", "cancelled by ann"), Move("job-b", "cancelled by ann")],
                JobState.CANCELLED,
                actor="ann",
            )

        errors = [exc for exc in race(admit, cancel) if exc is not None]
        assert not errors, f"a statement failed: {errors[0]!r}"
        with controller.engine.connect() as conn:
            states = dict(
                conn.execute(
                    sa.text("SELECT id, state FROM jobs WHERE id IN ('job-a', 'job-b')")
                ).all()
            )
        assert states == {"job-a": "cancelled", "job-b": "cancelled"}
    finally:
        controller.close()
        user.close()


@pytest.mark.postgres
def test_a_deadlock_is_a_write_conflict_not_an_outage(postgres_database: str) -> None:
    """Two transactions that take two rows in opposite orders: PostgreSQL rolls one back,
    which ``translate_errors`` words as the conflict it is, not as the database down."""
    engine = create_engine(postgres_database)
    try:
        with engine.begin() as conn:
            conn.exec_driver_sql("CREATE TABLE pair (id int PRIMARY KEY)")
            conn.exec_driver_sql("INSERT INTO pair VALUES (1), (2)")
        both = threading.Barrier(2)

        def take(first: int, second: int) -> None:
            with translate_errors(engine), engine.begin() as conn:
                conn.exec_driver_sql(f"SELECT 1 FROM pair WHERE id = {first} FOR UPDATE")
                both.wait()  # each holds its first row: the second waits for the other
                conn.exec_driver_sql(f"SELECT 1 FROM pair WHERE id = {second} FOR UPDATE")

        outcomes = race(lambda: take(1, 2), lambda: take(2, 1))
        failed = [exc for exc in outcomes if exc is not None]
        assert len(outcomes) == 2 and len(failed) == 1, outcomes  # one lost, one went on
        assert isinstance(failed[0], WriteConflict) and isinstance(failed[0], TransientError)
        assert not isinstance(failed[0], DatabaseUnavailable)
        assert "deadlock detected" in str(failed[0]) and "may be retried" in str(failed[0])
        assert "unavailable" not in str(failed[0])
    finally:
        engine.dispose()
