"""Round trips of the group commit's writes on PostgreSQL: a batch of submissions is one
statement (owners, jobs and events together, no ``BEGIN``/``COMMIT`` around it), the limits'
check of the waiting jobs included where the store leaves the batch room (else the backlog is
one query more), whatever the batch's size. On a busy machine each round trip
waits for the server to be scheduled, so their count, not the rows, sets a batch's time."""

from __future__ import annotations

from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy import event

from starburst.adapters.db.engine import create_engine
from starburst.adapters.db.store import SqlStore
from starburst.core.lifecycle import JobState
from starburst.core.records import JobSpec
from starburst.core.submit_limits import Room

pytestmark = pytest.mark.postgres


@pytest.fixture
def engine(pg_db_url: str):  # type: ignore[no-untyped-def]
    engine = create_engine(pg_db_url)
    yield engine
    engine.dispose()


def _statements(engine: sa.Engine) -> list[str]:
    seen: list[str] = []

    def before(conn: Any, cursor: Any, statement: str, *_: Any) -> None:
        seen.append(statement.split(None, 2)[0].upper())

    event.listen(engine, "before_cursor_execute", before)
    return seen


def test_a_batch_of_submissions_is_one_statement(engine, clock) -> None:  # type: ignore[no-untyped-def]
    store = SqlStore(engine, clock=clock)
    seen = _statements(engine)
    items = [
        (JobSpec(gpus=1, user=f"u{i % 3}", team=f"t{i % 2}"), f"u{i % 3}/k{i}", f"u{i % 3}")
        for i in range(40)
    ]
    results = store.submissions.submit_many(items)
    assert seen == ["WITH"]  # no BEGIN, no statement per table, no COMMIT
    assert all(r.created for r in results)
    # owners were created, every job has its one event, written in the batch's order
    assert {u.name for u in store.accounts.users()} >= {"u0", "u1", "u2"}
    with engine.connect() as conn:
        order = conn.execute(sa.text("SELECT job_id FROM job_events ORDER BY id")).scalars()
        assert list(order) == [r.job.id for r in results]
    assert [e.to_state for e in store.jobs.events(results[0].job.id)] == [JobState.SUBMITTED]

    seen.clear()
    again = store.submissions.submit_many(items[:5])  # known keys: one read of their jobs
    assert seen == ["WITH", "SELECT"]
    assert [r.job.id for r in again] == [r.job.id for r in results[:5]]
    assert not any(r.created for r in again)


def test_the_backlog_of_a_batch_is_one_query(engine, clock) -> None:  # type: ignore[no-untyped-def]
    store = SqlStore(engine, clock=clock)
    store.submissions.submit_many(
        [(JobSpec(gpus=1, user="ann", team="ml", array="a1"), "ann/k1", "ann")]
    )
    seen = _statements(engine)
    backlog = store.jobs.backlog(users={"ann"}, teams={"ml"}, arrays={"a1"}, keys={"ann/k1"})
    assert seen == ["SELECT"]
    assert backlog.waiting_by_user == {"ann": 1} and backlog.waiting_by_team == {"ml": 1}
    assert backlog.array_sizes == {"a1": 1} and backlog.known_keys == {"ann/k1"}


def _checkouts(engine: sa.Engine) -> list[int]:
    seen: list[int] = []
    event.listen(engine, "checkout", lambda *_: seen.append(1))
    return seen


def test_a_writer_holds_one_connection_for_its_batches(engine, clock) -> None:  # type: ignore[no-untyped-def]
    """The group commit's writer: no pool checkout (and ping) per statement."""
    store = SqlStore(engine, clock=clock)
    checkouts, seen = _checkouts(engine), _statements(engine)
    writer = store.submissions.writer()
    for i in range(3):
        writer.backlog(users={"ann"}, teams={"ml"}, arrays=(), keys={f"ann/k{i}"})
        writer.submit_many([(JobSpec(gpus=1, user="ann", team="ml"), f"ann/k{i}", "ann")])
    writer.close()
    assert len(checkouts) == 1
    assert seen == ["SELECT", "WITH"] * 3


def test_a_writer_replaces_a_connection_the_server_dropped(engine, clock) -> None:  # type: ignore[no-untyped-def]
    """As the pool's ping would: the backlog, first of every batch, finds the held
    connection gone and asks again on a fresh one; the batch goes through."""
    store = SqlStore(engine, clock=clock)
    writer = store.submissions.writer()
    assert writer.backlog(users={"ann"}, teams=(), arrays=(), keys=()).waiting_by_user == {}
    pid = writer._conn.connection.dbapi_connection.info.backend_pid
    with engine.connect() as admin:
        admin.execute(sa.text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})
    assert writer.backlog(users={"ann"}, teams=(), arrays=(), keys=()).waiting_by_user == {}
    (made,) = writer.submit_many([(JobSpec(gpus=1, user="ann"), "ann/k", "ann")])
    writer.close()
    assert made.created and store.jobs.get(made.job.id).job.user == "ann"


def test_a_batch_with_room_is_one_statement_with_its_check(engine, clock) -> None:  # type: ignore[no-untyped-def]
    """``submit_if_room``: the waiting jobs are read in the write's own statement; where a
    user or team has less room than it holds, nothing at all is written, not even the
    owners the batch would have created."""
    store = SqlStore(engine, clock=clock)
    store.submissions.submit_many([(JobSpec(gpus=1, user="ann", team="ml"), "ann/k0", "ann")])
    seen = _statements(engine)
    writer = store.submissions.writer()
    items = [(JobSpec(gpus=1, user="ann", team="ml"), f"ann/k{i}", "ann") for i in range(3)]
    made = writer.submit_if_room(items, Room(users={"ann": 1}, teams={"ml": 1}))
    assert seen == ["WITH", "SELECT"]  # the write and its check, then the known key's job
    assert made is not None and [m.created for m in made] == [False, True, True]
    assert store.jobs.backlog(users={"ann"}, teams=(), arrays=(), keys=()).waiting_by_user == {
        "ann": 3
    }

    seen.clear()
    newcomer = [(JobSpec(gpus=1, user="zed", team="new"), "zed/k", "zed")]
    assert writer.submit_if_room([*newcomer, *items], Room(users={"ann": 2})) is None
    assert writer.submit_if_room(newcomer, Room(teams={"ml": 3, "new": 0})) is not None
    assert writer.submit_if_room(items, Room(teams={"ml": 2})) is None
    writer.close()
    assert seen == ["WITH"] * 3
    assert store.jobs.find_by_key("zed/k").job.user == "zed"
    assert {u.name for u in store.accounts.users()} == {"ann", "zed"}
    waiting = store.jobs.backlog(users={"ann", "zed"}, teams={"ml", "new"}, arrays=(), keys=())
    assert waiting.waiting_by_user == {"ann": 3, "zed": 1}
    assert waiting.waiting_by_team == {"ml": 3, "new": 1}
