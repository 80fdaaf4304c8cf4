"""The controller's queue view follows the store's change feed, and the store stays the truth."""

from __future__ import annotations

from pathlib import Path

from starburst.adapters.db import migrate
from starburst.adapters.db.store import SqlStore
from starburst.controller.scheduling import SchedulingLoop
from starburst.core.capacity import uniform_nodes
from starburst.core.cycle import SchedulerConfig
from starburst.core.lifecycle import JobState
from starburst.core.policy import PolicyKind, WaitPolicy
from starburst.core.records import JobSpec
from starburst.sim.cluster import SimCluster
from tests.support.clock import ManualClock

T0 = 1_780_000_000.0


def setup(tmp: Path, gpus: int) -> tuple[SqlStore, SimCluster, SchedulingLoop, ManualClock]:
    url = f"sqlite:///{tmp / 'view.db'}"
    migrate.upgrade(url)
    clock = ManualClock(T0)
    store = SqlStore.open(url, clock=clock)
    cluster = SimCluster(uniform_nodes(1, gpus), clock, {f"j{i}": 3600.0 for i in range(10)})
    config = SchedulerConfig(WaitPolicy(PolicyKind.INFINITE), out_of_order=True)
    return store, cluster, SchedulingLoop(store, cluster, None, clock, config), clock


def test_a_job_cancelled_while_queued_never_starts(tmp_path: Path) -> None:
    store, cluster, loop, clock = setup(tmp_path, gpus=1)
    for i in range(3):
        store.submit(JobSpec(id=f"j{i}", gpus=1), at=T0 + i)
    clock.set(T0 + 10)
    assert loop.run_pass().started == ["j0"]
    store.transition("j1", JobState.CANCELLED, reason="cancelled by ana", actor="ana")
    cluster.cancel("j0")  # GPUs free again; the view must have dropped j1 from the feed
    store.transition("j0", JobState.FAILED, reason="lost", actor="test")
    clock.advance(1)
    report = loop.run_pass()
    assert report.started == ["j2"]
    assert store.get("j1").state is JobState.CANCELLED
    store.close()


def test_a_job_cancelled_while_running_on_prem_is_stopped(tmp_path: Path) -> None:
    store, cluster, loop, clock = setup(tmp_path, gpus=2)
    store.submit(JobSpec(id="j0", gpus=1), at=T0)
    clock.set(T0 + 1)
    assert loop.run_pass().started == ["j0"]
    assert {r.job.id for r in cluster.snapshot().running} == {"j0"}
    store.transition("j0", JobState.CANCELLED, reason="cancelled by ana", actor="ana")
    clock.advance(1)
    loop.run_pass()
    assert not list(cluster.snapshot().running)
    store.close()


def test_the_full_re_read_stops_what_the_store_no_longer_runs_and_nothing_foreign(
    tmp_path: Path,
) -> None:
    from starburst.core.capacity import Part
    from starburst.core.job import Job

    store, cluster, loop, clock = setup(tmp_path, gpus=4)
    store.submit(JobSpec(id="j0", gpus=1), at=T0)
    clock.set(T0 + 1)
    assert loop.run_pass().started == ["j0"]
    cluster.start(Job("foreign", T0, 1, runtime=3600.0), (Part(0, "node-0", 1, 0.0, 0.0),))
    store.transition("j0", JobState.CANCELLED, reason="cancelled by ana", actor="ana")
    clock.advance(61)  # past the view's refresh: this pass re-reads everything
    loop.run_pass()
    assert loop.view.reloaded
    assert {r.job.id for r in cluster.snapshot().running} == {"foreign"}  # not Starburst's
    store.close()


def test_submissions_beyond_the_admission_cap_wait_for_the_next_pass(tmp_path: Path) -> None:
    store, _, loop, clock = setup(tmp_path, gpus=1)
    loop.admissions_per_pass = 3
    for i in range(5):
        store.submit(JobSpec(id=f"j{i}", gpus=1), at=T0 + i)
    clock.set(T0 + 10)
    first = loop.run_pass()
    assert first.admitted == 3 and first.next_wakeup == clock.t  # asks to run again at once
    second = loop.run_pass()
    assert second.admitted == 2
    assert store.count(JobState.SUBMITTED) == 0
    store.close()
