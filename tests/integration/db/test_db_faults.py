"""Faults: connections dying mid-transaction, unreachable servers, racing writers."""

from __future__ import annotations

import threading

import pytest
import sqlalchemy as sa
from sqlalchemy import event

from starburst.adapters.db.engine import DatabaseUnavailable, create_engine
from starburst.core.errors import StarburstError, TransientError
from starburst.core.lifecycle import IllegalTransition, JobState
from starburst.core.records import JobSpec, StaleVersion


class SimulatedCrash(Exception):
    pass


def _die_on_event_insert(store, engine):  # type: ignore[no-untyped-def]
    """Make the connection die right after the job row was written, before its event."""

    def before(conn, cursor, statement, params, context, executemany):  # type: ignore[no-untyped-def]
        if not statement.lstrip().upper().startswith("INSERT INTO JOB_EVENTS"):
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
        store.submit(JobSpec(gpus=1, id="half"), idempotency_key="k-half")
    with pytest.raises(expected):
        store.submit_many([JobSpec(gpus=1, id=f"batch-{i}") for i in range(5)])
    undo()
    with engine.connect() as conn:
        jobs = conn.execute(sa.text("SELECT count(*) FROM jobs")).scalar_one()
        events = conn.execute(sa.text("SELECT count(*) FROM job_events")).scalar_one()
    assert (jobs, events) == (0, 0)
    again = store.submit(JobSpec(gpus=1, id="half"), idempotency_key="k-half")
    assert again.created and [e.to_state for e in store.events("half")] == [JobState.SUBMITTED]


@pytest.mark.postgres
def test_lost_connection_is_transient_and_names_the_url_without_password(postgres_url: str):  # type: ignore[no-untyped-def]
    url = sa.make_url(postgres_url).set(password="s3cret", port=1)
    with pytest.raises(DatabaseUnavailable) as info:
        create_engine(url.render_as_string(hide_password=False))
    message = str(info.value)
    assert isinstance(info.value, TransientError) and isinstance(info.value, StarburstError)
    assert "s3cret" not in message and "postgres:***@127.0.0.1:1" in message


def test_two_concurrent_writers_cannot_both_move_a_job(store):  # type: ignore[no-untyped-def]
    job_id = store.submit(JobSpec(gpus=1)).job.id
    store.transition(job_id, JobState.QUEUED, reason="admitted", actor="c")
    seen = store.get(job_id).version
    targets = [JobState.RUNNING_ONPREM, JobState.BURSTING, JobState.CANCELLED] * 2
    barrier = threading.Barrier(len(targets))
    won: list[JobState] = []
    lost: list[Exception] = []

    def writer(target: JobState) -> None:
        barrier.wait()
        try:
            store.transition(
                job_id, target, reason="race", actor=f"w-{target}", expected_version=seen
            )
            won.append(target)
        except (StaleVersion, IllegalTransition) as exc:
            lost.append(exc)

    threads = [threading.Thread(target=writer, args=(t,)) for t in targets]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(won) == 1 and len(lost) == len(targets) - 1
    final = store.get(job_id)
    assert final.state is won[0] and final.version == seen + 1
    moves = [e for e in store.events(job_id) if e.from_state is JobState.QUEUED]
    assert len(moves) == 1


def test_racing_writers_without_versions_still_move_a_job_once(store):  # type: ignore[no-untyped-def]
    """Without ``expected_version`` the lifecycle itself refuses the losers."""
    job_id = store.submit(JobSpec(gpus=1)).job.id
    store.transition(job_id, JobState.QUEUED, reason="admitted", actor="c")
    barrier = threading.Barrier(4)
    results: list[object] = []

    def writer() -> None:
        barrier.wait()
        try:
            results.append(store.transition(job_id, JobState.RUNNING_ONPREM, reason="r", actor="w"))
        except (StaleVersion, IllegalTransition) as exc:
            results.append(exc)

    threads = [threading.Thread(target=writer) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sum(not isinstance(r, Exception) for r in results) == 1
    assert len([e for e in store.events(job_id) if e.to_state is JobState.RUNNING_ONPREM]) == 1


@pytest.mark.postgres
def test_claim_skips_rows_another_transaction_holds(pg_db_url, clock):  # type: ignore[no-untyped-def]
    from starburst.adapters.db.store import SqlStore

    store = SqlStore(create_engine(pg_db_url), clock=clock)
    ids = []
    for _ in range(5):
        clock.advance(1)
        job_id = store.submit(JobSpec(gpus=1)).job.id
        store.transition(job_id, JobState.QUEUED, reason="admitted", actor="c")
        ids.append(job_id)
    other = create_engine(pg_db_url)
    with other.connect() as conn, conn.begin():
        conn.execute(
            sa.text("SELECT id FROM jobs WHERE id IN (:a, :b) FOR UPDATE"),
            {"a": ids[0], "b": ids[1]},
        )
        claimed = store.claim(JobState.BURSTING, limit=2, reason="cap", actor="c")
        assert [j.id for j in claimed] == ids[2:4]
    other.dispose()
    rest = store.claim(JobState.BURSTING, limit=5, reason="cap", actor="c")
    assert [j.id for j in rest] == [ids[0], ids[1], ids[4]]
    store.close()
