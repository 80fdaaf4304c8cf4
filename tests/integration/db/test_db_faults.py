"""Faults: connections dying mid-transaction, unreachable servers, locked rows (racing
writers are in the store contract, ``tests/contract/test_store_jobs.py``)."""

from __future__ import annotations

import pytest
import sqlalchemy as sa
from sqlalchemy import event

from starburst.adapters.db.engine import DatabaseUnavailable, create_engine
from starburst.core.errors import StarburstError, TransientError
from starburst.core.lifecycle import JobState
from starburst.core.records import JobSpec


class SimulatedCrash(Exception):
    pass


def _die_on_event_insert(store, engine):  # type: ignore[no-untyped-def]
    """Make the connection die right after the job row was written, before its event (on
    PostgreSQL, job and event are one statement: it dies as that statement is sent)."""

    def before(conn, cursor, statement, params, context, executemany):  # type: ignore[no-untyped-def]
        if not statement.lstrip().upper().startswith(("INSERT INTO JOB_EVENTS", "WITH NEW_TEAMS")):
            return
        if engine.dialect.name != "postgresql":
            raise SimulatedCrash("process died")
        pid = conn.connection.dbapi_connection.info.backend_pid
        killer = create_engine(engine.url.render_as_string(hide_password=False))
        with killer.connect() as admin:
            admin.execute(sa.text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})
        killer.dispose()

    event.listen(engine, "before_cursor_execute", before)
    return lambda: event.remove(engine, "before_cursor_execute", before)


def test_connection_dying_mid_submit_leaves_no_half_written_job(store, engine):  # type: ignore[no-untyped-def]
    undo = _die_on_event_insert(store, engine)
    expected = DatabaseUnavailable if engine.dialect.name == "postgresql" else SimulatedCrash
    with pytest.raises(expected):
        store.submissions.submit(JobSpec(gpus=1, id="half"), idempotency_key="k-half")
    with pytest.raises(expected):
        store.submissions.submit_many([JobSpec(gpus=1, id=f"batch-{i}") for i in range(5)])
    undo()
    with engine.connect() as conn:
        jobs = conn.execute(sa.text("SELECT count(*) FROM jobs")).scalar_one()
        events = conn.execute(sa.text("SELECT count(*) FROM job_events")).scalar_one()
    assert (jobs, events) == (0, 0)
    again = store.submissions.submit(JobSpec(gpus=1, id="half"), idempotency_key="k-half")
    assert again.created and [e.to_state for e in store.jobs.events("half")] == [JobState.SUBMITTED]


@pytest.mark.postgres
def test_lost_connection_is_transient_and_names_the_url_without_password(postgres_url: str):  # type: ignore[no-untyped-def]
    url = sa.make_url(postgres_url).set(password="s3cret", port=1)
    with pytest.raises(DatabaseUnavailable) as info:
        create_engine(url.render_as_string(hide_password=False))
    message = str(info.value)
    assert isinstance(info.value, TransientError) and isinstance(info.value, StarburstError)
    assert "s3cret" not in message and "postgres:***@127.0.0.1:1" in message


@pytest.mark.postgres
def test_claim_skips_rows_another_transaction_holds(pg_db_url, clock):  # type: ignore[no-untyped-def]
    from starburst.adapters.db.store import SqlStore

    store = SqlStore(create_engine(pg_db_url), clock=clock)
    ids = []
    for _ in range(5):
        clock.advance(1)
        job_id = store.submissions.submit(JobSpec(gpus=1)).job.id
        store.lifecycle.transition(job_id, JobState.QUEUED, reason="admitted", actor="c")
        ids.append(job_id)
    other = create_engine(pg_db_url)
    with other.connect() as conn, conn.begin():
        conn.execute(
            sa.text("SELECT id FROM jobs WHERE id IN (:a, :b) FOR UPDATE"),
            {"a": ids[0], "b": ids[1]},
        )
        claimed = store.lifecycle.claim(JobState.BURSTING, limit=2, reason="cap", actor="c")
        assert [j.id for j in claimed] == ids[2:4]
    other.dispose()
    rest = store.lifecycle.claim(JobState.BURSTING, limit=5, reason="cap", actor="c")
    assert [j.id for j in rest] == [ids[0], ids[1], ids[4]]
    store.close()
