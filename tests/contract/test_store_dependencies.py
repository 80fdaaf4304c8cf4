"""The store contract for dependencies and array throttles (``core.dependencies``), on every
store implementation (see ``conftest.py``)."""

from __future__ import annotations

from starburst.core.dependencies import AfterKind, Dependency
from starburst.core.lifecycle import JobState
from starburst.core.records import JobSpec


def test_dependencies_and_the_array_round_trip(store) -> None:  # type: ignore[no-untyped-def]
    a = store.submissions.submit(JobSpec(gpus=1)).job.id
    deps = (Dependency(a, AfterKind.OK), Dependency("other"))
    job = store.submissions.submit(JobSpec(gpus=1, after=deps, array="ann/s1", array_limit=4)).job
    again = store.jobs.get(job.id).job
    assert (again.after, again.array, again.array_limit) == (deps, "ann/s1", 4)
    assert store.jobs.get(a).job.after == () and store.jobs.get(a).held is None


def test_a_hold_is_a_reason_not_a_state_and_filters_the_queue(store, clock) -> None:  # type: ignore[no-untyped-def]
    plain = store.submissions.submit(JobSpec(gpus=1)).job.id
    held = store.submissions.submit(JobSpec(gpus=1, after=(Dependency(plain),))).job
    store.lifecycle.hold({held.id: "waiting for job x to end"})
    got = store.jobs.get(held.id)
    assert (got.state, got.version, got.held) == (JobState.SUBMITTED, 1, "waiting for job x to end")
    assert [e.reason for e in store.jobs.events(held.id)] == ["submitted"]
    states = (JobState.SUBMITTED,)
    assert [s.id for s in store.jobs.queue(states=states, held=True).jobs] == [held.id]
    assert [s.id for s in store.jobs.queue(states=states, held=False).jobs] == [plain]
    assert len(store.jobs.queue(states=states).jobs) == 2


def test_leaving_a_hold_restamps_the_queue_time_and_clears_the_reason(store, clock) -> None:  # type: ignore[no-untyped-def]
    held = store.submissions.submit(JobSpec(gpus=1)).job
    fresh = store.submissions.submit(JobSpec(gpus=1)).job
    store.lifecycle.hold({held.id: "waiting for a slot"})
    later = clock.advance(600)
    moved = store.lifecycle.transition(
        held.id, JobState.QUEUED, reason="let in", actor="controller"
    )
    assert (moved.queued_at, moved.held) == (later, None)  # its budget starts now
    never_held = store.lifecycle.transition(fresh.id, JobState.QUEUED, reason="queued", actor="c")
    assert never_held.queued_at == fresh.queued_at  # the usual: queued at its submit time


def test_a_hold_leaves_jobs_that_are_no_longer_submitted_alone(store) -> None:  # type: ignore[no-untyped-def]
    job = store.submissions.submit(JobSpec(gpus=1)).job.id
    store.lifecycle.transition(job, JobState.CANCELLED, reason="cancelled by ann", actor="ann")
    store.lifecycle.hold({job: "waiting for job x to end"})
    assert store.jobs.get(job).held is None


def test_array_slots_count_queued_bursting_and_running_elements(store) -> None:  # type: ignore[no-untyped-def]
    ids = [
        store.submissions.submit(JobSpec(gpus=1, array="s", array_limit=2)).job.id for _ in range(5)
    ]
    store.submissions.submit(JobSpec(gpus=1, array="t", array_limit=2))
    for job_id in ids[:4]:
        store.lifecycle.transition(job_id, JobState.QUEUED, reason="q", actor="c")
    store.lifecycle.transition(ids[1], JobState.BURSTING, reason="b", actor="c")
    store.lifecycle.transition(ids[2], JobState.RUNNING_ONPREM, reason="r", actor="c")
    store.lifecycle.transition(ids[3], JobState.RUNNING_ONPREM, reason="r", actor="c")
    store.lifecycle.transition(ids[3], JobState.SUCCEEDED, reason="done", actor="c")
    assert store.jobs.array_in_flight(["s", "t", "none"]) == {"s": 3}
    assert store.jobs.array_in_flight([]) == {}


def test_an_arrays_elements_come_back_in_index_order(store) -> None:  # type: ignore[no-untyped-def]
    """Elements submitted at one instant (a batch) list by index, not by their random ids;
    the index round-trips as ``Job.array_index``."""
    from starburst.core.dependencies import ARRAY_INDEX

    specs = [JobSpec(gpus=1, array="ann/s", extra={ARRAY_INDEX: str(i)}) for i in (3, 10, 0, 2)]
    made = store.submissions.submit_many(specs)
    store.submissions.submit(JobSpec(gpus=1, array="ann/other"))
    elements = store.jobs.array_elements("ann/s")
    assert [s.job.array_index for s in elements] == [0, 2, 3, 10]
    assert {s.id for s in elements} == {m.job.id for m in made}
    assert store.jobs.array_elements("ann/none") == []
    assert store.jobs.get(made[0].job.id).job.array_index == 3
