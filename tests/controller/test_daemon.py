"""The daemon: one leader at a time, failover with fencing, a database outage survived."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa
from apscheduler.schedulers.background import BackgroundScheduler

from starburst.adapters.db.engine import WriteConflict
from starburst.adapters.db.store import SqlStore
from starburst.controller.daemon import Controller
from starburst.controller.wiring import build_cloud, build_cluster, wire_controller
from starburst.core.lifecycle import JobState
from starburst.core.records import JobSpec, StaleLeader
from starburst.settings import Settings
from tests.support.databases import upgrade
from tests.support.postgres import (
    ThrowawayPostgres,
    drop_database,
    find_bindir,
    fresh_database,
)
from tests.support.waiting import wait_for


def make_controller(url: str, tmp: Path, name: str) -> Controller:
    settings = Settings(
        database_url=url,
        state_dir=tmp / name,
        local_gpus=2,
        cloud="none",
        pass_interval_s=0.1,
        budget=0.25,
    )
    store = SqlStore.open(url)
    return wire_controller(
        settings, store, build_cluster(settings, _clock()), build_cloud(settings, _clock())
    )


def _clock():  # type: ignore[no-untyped-def]
    from starburst.wallclock import WallClock

    return WallClock()


@pytest.fixture
def pg_url(postgres_url: str) -> Iterator[str]:
    url = fresh_database(postgres_url, "daemon")
    upgrade(url)
    yield url
    drop_database(url)  # a server of one's own (STARBURST_TEST_DATABASE_URL) keeps none


def submit(store: SqlStore, name: str, seconds: float = 0.2) -> str:
    spec = JobSpec(gpus=1, name=name, command=f"sleep {seconds}", declared_runtime=seconds)
    return store.submissions.submit(spec).job.id


def test_one_replica_leads_and_a_standby_takes_over_with_a_newer_fencing_token(
    pg_url: str, tmp_path: Path
) -> None:
    a, b = make_controller(pg_url, tmp_path, "a"), make_controller(pg_url, tmp_path, "b")
    a_ticks = BackgroundScheduler(timezone="UTC")
    a.start(a_ticks)
    assert wait_for(lambda: a.health().detail == "leading")
    b.start()
    try:
        assert wait_for(lambda: b.health().detail.startswith("standby"))
        old_token = a._lock.token
        assert old_token is not None
        job = submit(a.store, "first")
        assert wait_for(lambda: a.store.jobs.get(job).state is JobState.SUCCEEDED)
        # the leader's process "dies": its database session is cut, the advisory lock goes
        pid = a._lock.backend_pid  # type: ignore[attr-defined]
        a_ticks.pause()  # no more passes, and the lock is not released
        admin = sa.create_engine(pg_url)
        with admin.connect() as conn:
            conn.execute(sa.text("select pg_terminate_backend(:p)"), {"p": pid})
        admin.dispose()
        assert wait_for(lambda: b.health().detail == "leading")
        assert (b._lock.token or 0) > old_token
        second = submit(b.store, "second")
        assert wait_for(lambda: b.store.jobs.get(second).state is JobState.SUCCEEDED)
        # the deposed leader cannot act: its fencing token is refused
        third = submit(b.store, "third", seconds=5)
        with pytest.raises(StaleLeader):
            a.store.lifecycle.transition(
                third, JobState.QUEUED, reason="zombie", actor="a", fencing_token=old_token
            )
    finally:
        a.stop()
        b.stop()
        a.store.close()
        b.store.close()


#: failed passes the outage must outlast: many reconnect attempts, each refused, none fatal
OUTAGE_PASSES = 10


def _failed_passes(controller: Controller) -> float:
    return controller.metrics.registry.get_sample_value("starburst_pass_errors_total") or 0.0


@pytest.mark.slow
def test_a_database_outage_pauses_the_controller_which_then_resumes(
    tmp_path: Path,
) -> None:
    bindir = find_bindir()
    if bindir is None:
        pytest.skip("no PostgreSQL server binaries on this machine")
    server = ThrowawayPostgres(bindir).start()
    controller = None
    try:
        url = fresh_database(server.url, "outage")
        upgrade(url)
        controller = make_controller(url, tmp_path, "c")
        ticks = BackgroundScheduler(timezone="UTC")
        controller.start(ticks)
        before = submit(controller.store, "before")
        assert wait_for(lambda: controller.store.jobs.get(before).state is JobState.SUCCEEDED)
        server.halt()
        assert wait_for(lambda: not controller.health().ready, timeout=10)
        assert (
            "database" in controller.health().detail or "unavailable" in controller.health().detail
        )
        failed = _failed_passes(controller)

        def outlasted_many_passes() -> bool:  # each a refused reconnect; the scheduler lives on
            assert ticks.running  # the outage fails passes, never the scheduler
            assert not controller.health().ready
            return _failed_passes(controller) >= failed + OUTAGE_PASSES

        assert wait_for(outlasted_many_passes, timeout=30, interval=0.1)
        server.resume()
        assert wait_for(lambda: controller.health().ready, timeout=30)
        after = submit(controller.store, "after")
        assert wait_for(lambda: controller.store.jobs.get(after).state is JobState.SUCCEEDED)
        assert controller.store.jobs.get(before).state is JobState.SUCCEEDED  # nothing lost
    finally:
        if controller is not None:
            controller.stop()
            controller.store.close()
        server.stop()


def test_a_local_job_ending_wakes_the_controller_at_once(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'sb.db'}"
    upgrade(url)
    # passes every 10 minutes: a job seen to end sooner was noticed by the local end watch
    settings = Settings(
        database_url=url,
        state_dir=tmp_path / "state",
        local_gpus=1,
        cloud="none",
        pass_interval_s=600,
        policy="infinite",
    )
    store = SqlStore.open(url)
    controller = wire_controller(settings, store, build_cluster(settings, _clock()), None)
    controller.start()
    try:
        assert wait_for(lambda: controller.health().detail == "leading")
        first, second = submit(store, "first", 0.3), submit(store, "second", 0.3)
        controller.poke()  # as the API does after a submission
        assert wait_for(lambda: store.jobs.get(first).state is JobState.RUNNING_ONPREM, timeout=10)
        # one GPU: the second job can only start once the first one's end has been noticed
        assert wait_for(lambda: store.jobs.get(second).state is JobState.SUCCEEDED, timeout=10)
        assert store.jobs.get(first).state is JobState.SUCCEEDED
    finally:
        controller.stop()
        store.close()


def test_a_pass_that_loses_a_write_conflict_keeps_the_lead_and_passes_again(
    pg_url: str, tmp_path: Path
) -> None:
    """A deadlock with a user's statement undoes one transaction of the pass; the database is
    up and the replica still leads, so it passes again without stepping down (stepping down
    would release the lock, turn the replica unready and take a new fencing token)."""
    controller = make_controller(pg_url, tmp_path, "c")
    conflicts = []
    run_pass = controller.loop.run_pass

    def losing_once():  # type: ignore[no-untyped-def]
        if not conflicts:
            conflicts.append(1)
            raise WriteConflict("the transaction was rolled back (deadlock detected)")
        return run_pass()

    controller.start(BackgroundScheduler(timezone="UTC"))
    try:
        assert wait_for(lambda: controller.health().detail == "leading")
        token = controller._lock.token
        failed = _failed_passes(controller)
        controller.loop.run_pass = losing_once  # type: ignore[method-assign]
        job = submit(controller.store, "after the conflict")
        assert wait_for(lambda: controller.store.jobs.get(job).state is JobState.SUCCEEDED)
        assert conflicts == [1]
        assert _failed_passes(controller) == failed + 1  # counted as a failed pass
        assert controller._lock.token == token  # never stepped down
        assert controller.health().detail == "leading"
    finally:
        controller.stop()
        controller.store.close()
