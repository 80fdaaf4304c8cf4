"""The controller's queue view follows the store's change feed, and the store stays the truth."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from starburst.adapters.db.store import SqlStore
from starburst.controller.loop.scheduling import SchedulingLoop
from starburst.core.capacity import uniform_nodes
from starburst.core.cycle import SchedulerConfig
from starburst.core.lifecycle import JobState
from starburst.core.policy import PolicyKind, WaitPolicy
from starburst.core.records import JobSpec
from starburst.sim.cluster import SimCluster
from tests.support.clock import ManualClock
from tests.support.databases import upgrade

T0 = 1_780_000_000.0


def setup(tmp: Path, gpus: int) -> tuple[SqlStore, SimCluster, SchedulingLoop, ManualClock]:
    url = f"sqlite:///{tmp / 'view.db'}"
    upgrade(url)
    clock = ManualClock(T0)
    store = SqlStore.open(url, clock=clock)
    cluster = SimCluster(uniform_nodes(1, gpus), clock, {f"j{i}": 3600.0 for i in range(10)})
    config = SchedulerConfig(WaitPolicy(PolicyKind.INFINITE), out_of_order=True)
    return store, cluster, SchedulingLoop(store, cluster, None, clock, config), clock


def test_a_job_cancelled_while_queued_never_starts(tmp_path: Path) -> None:
    store, cluster, loop, clock = setup(tmp_path, gpus=1)
    for i in range(3):
        store.submissions.submit(JobSpec(id=f"j{i}", gpus=1), at=T0 + i)
    clock.set(T0 + 10)
    assert loop.run_pass().started == ["j0"]
    store.lifecycle.transition("j1", JobState.CANCELLED, reason="cancelled by ana", actor="ana")
    cluster.cancel("j0")  # GPUs free again; the view must have dropped j1 from the feed
    store.lifecycle.transition("j0", JobState.FAILED, reason="lost", actor="test")
    clock.advance(1)
    report = loop.run_pass()
    assert report.started == ["j2"]
    assert store.jobs.get("j1").state is JobState.CANCELLED
    store.close()


def test_a_job_cancelled_while_running_on_prem_is_stopped(tmp_path: Path) -> None:
    store, cluster, loop, clock = setup(tmp_path, gpus=2)
    store.submissions.submit(JobSpec(id="j0", gpus=1), at=T0)
    clock.set(T0 + 1)
    assert loop.run_pass().started == ["j0"]
    assert {r.job.id for r in cluster.snapshot().running} == {"j0"}
    store.lifecycle.transition("j0", JobState.CANCELLED, reason="cancelled by ana", actor="ana")
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
    store.submissions.submit(JobSpec(id="j0", gpus=1), at=T0)
    clock.set(T0 + 1)
    assert loop.run_pass().started == ["j0"]
    cluster.start(Job("foreign", T0, 1, runtime=3600.0), (Part(0, "node-0", 1, 0.0, 0.0),))
    store.lifecycle.transition("j0", JobState.CANCELLED, reason="cancelled by ana", actor="ana")
    clock.advance(61)  # past the view's refresh: this pass re-reads everything
    loop.run_pass()
    assert loop.view.reloaded
    assert {r.job.id for r in cluster.snapshot().running} == {"foreign"}  # not Starburst's
    store.close()


def test_submissions_beyond_the_admission_cap_wait_for_the_next_pass(tmp_path: Path) -> None:
    store, _, loop, clock = setup(tmp_path, gpus=1)
    loop.admissions_per_pass = 3
    for i in range(5):
        store.submissions.submit(JobSpec(id=f"j{i}", gpus=1), at=T0 + i)
    clock.set(T0 + 10)
    first = loop.run_pass()
    assert first.admitted == 3 and first.next_wakeup == clock.t  # asks to run again at once
    second = loop.run_pass()
    assert second.admitted == 2
    assert store.jobs.count(JobState.SUBMITTED) == 0
    store.close()


def test_without_a_cloud_jobs_past_the_queue_cap_stay_queued_and_start_when_gpus_free(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """No cloud: a burst (budget spent, or beyond the queue cap) cannot happen, so the job
    keeps waiting in the view. It used to vanish from it until the next full re-read, so
    freed GPUs sat idle for up to a minute, and every pass read it back one query a time."""
    url = f"sqlite:///{tmp_path / 'cap.db'}"
    upgrade(url)
    clock = ManualClock(T0)
    store = SqlStore.open(url, clock=clock)
    runtimes = {f"j{i}": 10.0 for i in range(40)}
    cluster = SimCluster(uniform_nodes(1, 1), clock, runtimes)
    config = SchedulerConfig(WaitPolicy(PolicyKind.CONSTANT, 5.0), out_of_order=True, queue_cap=3)
    loop = SchedulingLoop(store, cluster, None, clock, config)
    for i in range(40):
        store.submissions.submit(JobSpec(id=f"j{i}", gpus=1), at=T0)
    with caplog.at_level(logging.INFO, logger="starburst.controller"):
        report = loop.run_pass()
    assert report.started == ["j0"] and report.burst == []
    assert report.queue_length == 39
    assert report.utilization == 1.0  # the one GPU, counted once
    (held,) = [r for r in caplog.records if r.getMessage().startswith("held on-prem")]
    assert held.jobs == 36 and held.job_ids[-1] == "+31 more"  # beyond the cap of 3: one line
    assert len(loop.view.current(T0, config.policy)) == 39
    reads = 0
    real_get = store.jobs.get

    def counting_get(job_id: str):  # type: ignore[no-untyped-def]
        nonlocal reads
        reads += 1
        return real_get(job_id)

    store.jobs.get = counting_get  # type: ignore[method-assign]
    for n in range(1, 6):  # every 10 s the running job ends: the next starts at once
        clock.advance(10)
        report = loop.run_pass()
        assert len(report.started) == 1, report
        assert report.queue_length == 39 - n
        assert not loop.view.reloaded
    assert reads <= 10  # a start reads its job; nobody is read back from the feed
    states = list(store.jobs.states_of([f"j{i}" for i in range(40)]).values())
    assert states.count(JobState.QUEUED) == 34 and JobState.BURSTING not in states
    assert "no cloud" in report.held[0][1]
    store.close()


def test_a_job_submitted_and_admitted_between_two_looks_is_not_read_back(
    tmp_path: Path,
) -> None:
    # The feed then holds both its events (submitted, queued): only the last one counts, and
    # the entry admission added stays (reading each admitted job back was one query per job
    # in every pass under a stream of submissions).
    from starburst.controller.loop.queue_view import QueueView
    from starburst.core.job import QueuedJob

    store, _, _, _ = setup(tmp_path, gpus=1)
    policy = WaitPolicy(PolicyKind.INFINITE)
    view = QueueView(store.jobs)
    assert view.current(T0, policy) == []
    reads: list[str] = []
    get = store.jobs.get
    store.jobs.get = lambda job_id: reads.append(job_id) or get(job_id)  # type: ignore[method-assign]
    submitted = store.submissions.submit(JobSpec(id="j0", gpus=1), at=T0 + 1)
    store.lifecycle.transition(
        "j0", JobState.QUEUED, reason="admitted", actor="test", wait_budget=60.0
    )
    admitted = QueuedJob(submitted.job, T0 + 1, 60.0)
    view.add(admitted)
    assert view.current(T0 + 2, policy) == [admitted]
    assert reads == []
    # a job queued by another writer is still read, once
    store.submissions.submit(JobSpec(id="j1", gpus=1), at=T0 + 3)
    store.lifecycle.transition(
        "j1", JobState.QUEUED, reason="admitted", actor="test", wait_budget=5.0
    )
    assert [q.id for q in view.current(T0 + 4, policy)] == ["j0", "j1"]
    assert reads == ["j1"]
    store.close()


def test_a_steady_queue_is_kept_in_order_with_its_facts_until_it_changes(tmp_path: Path) -> None:
    store, _, loop, clock = setup(tmp_path, gpus=1)
    for i in range(3):
        store.submissions.submit(JobSpec(id=f"j{i}", gpus=1), at=T0 + i)
    clock.set(T0 + 10)
    assert loop.run_pass().started == ["j0"]
    view, policy, order = loop.view, loop.config.policy, loop.config.order
    first = view.ordered(clock.now(), policy, order)
    assert [q.id for q in first] == ["j1", "j2"]
    facts = view.facts
    assert facts is not None and facts.queue is first
    clock.advance(1)
    assert loop.run_pass().queue_length == 2
    assert view.ordered(clock.now(), policy, order) is first and view.facts is facts
    store.lifecycle.transition("j1", JobState.CANCELLED, reason="cancelled by ana", actor="ana")
    clock.advance(1)
    loop.run_pass()
    now = view.ordered(clock.now(), policy, order)
    assert [q.id for q in now] == ["j2"] and view.facts is not None and view.facts.queue is now
    store.close()


def test_an_admitted_job_keeps_its_estimate_and_its_recorded_prediction(tmp_path: Path) -> None:
    """The admission writes each job's predicted runtime with its move to ``queued`` (one
    write of the job, not two) and records the prediction it came from."""
    from starburst.predictor.estimator import FallbackEstimator

    store, cluster, _, clock = setup(tmp_path, gpus=1)
    config = SchedulerConfig(WaitPolicy(PolicyKind.COMPUTE, 1.0), out_of_order=True)
    loop = SchedulingLoop(store, cluster, None, clock, config, estimator=FallbackEstimator())
    store.submissions.submit(JobSpec(id="j0", gpus=1, declared_runtime=1200.0), at=T0)
    store.submissions.submit(JobSpec(id="j1", gpus=1, declared_runtime=600.0), at=T0 + 1)
    clock.set(T0 + 10)
    loop.run_pass()
    for job_id, declared in (("j0", 1200.0), ("j1", 600.0)):
        stored = store.jobs.get(job_id)
        assert stored.state in (JobState.QUEUED, JobState.RUNNING_ONPREM)
        assert stored.version >= 2 and stored.predicted_runtime == declared
        (prediction,) = store.models.predictions(job_id)
        assert (prediction.value, prediction.source) == (declared, "declared")
        assert stored.wait_budget == pytest.approx(declared)  # compute: c × GPUs × estimate
