"""``Lifecycle.amend`` (a user's hold, release, update or note) on every store: one write with
one event and a version bump, through the lifecycle's table, all or nothing."""

from __future__ import annotations

import pytest

from starburst.core.lifecycle import IllegalTransition, JobState
from starburst.core.records import Amendment, JobSpec, StaleVersion


def _queued(store, clock):  # type: ignore[no-untyped-def]
    job = store.submissions.submit(JobSpec(gpus=2, user="ann", name="a", extra={"k": "v"})).job
    clock.advance(10)
    return store.lifecycle.transition(
        job.id, JobState.QUEUED, reason="admitted", actor="controller", wait_budget=60.0
    )


def test_hold_moves_a_queued_job_out_of_the_line_with_one_event(store, clock):  # type: ignore[no-untyped-def]
    job = _queued(store, clock)
    clock.advance(5)
    held = store.lifecycle.amend(
        job.id,
        Amendment(to_state=JobState.SUBMITTED, hold="by ann until released"),
        reason="held by ann",
        actor="ann",
        expected_version=job.version,
    )
    assert (held.state, held.held, held.version) == (JobState.SUBMITTED, "by ann until released", 3)
    assert store.jobs.get(job.id) == held
    assert [j.id for j in store.jobs.queue(states=(JobState.SUBMITTED,), held=True).jobs] == [
        job.id
    ]
    assert store.jobs.queue().jobs == []  # out of the line
    last = store.jobs.events(job.id)[-1]
    assert (last.from_state, last.to_state, last.reason, last.actor) == (
        JobState.QUEUED,
        JobState.SUBMITTED,
        "held by ann",
        "ann",
    )
    # release: no state change, the hold cleared, the queue time restarted now
    clock.advance(100)
    released = store.lifecycle.amend(
        job.id, Amendment(release=True), reason="released", actor="ann"
    )
    assert (released.state, released.held, released.version) == (JobState.SUBMITTED, None, 4)
    assert released.queued_at == clock.now() == store.jobs.get(job.id).queued_at
    last = store.jobs.events(job.id)[-1]
    assert (last.from_state, last.to_state) == (JobState.SUBMITTED, JobState.SUBMITTED)


def test_update_changes_fields_forgets_the_budget_and_keeps_the_queue_time(store, clock):  # type: ignore[no-untyped-def]
    job = _queued(store, clock)
    change = Amendment(
        to_state=JobState.SUBMITTED, gpus=1, name="b", extra={"k": "w"}, rebudget=True
    )
    updated = store.lifecycle.amend(job.id, change, reason="gpus 2 → 1", actor="ann")
    got = store.jobs.get(job.id)
    assert got == updated
    assert (got.job.gpus, got.job.name, dict(got.job.extra), got.wait_budget) == (
        1,
        "b",
        {"k": "w"},
        None,
    )
    assert got.queued_at == job.queued_at and got.held is None


def test_amend_checks_version_and_lifecycle_and_then_changes_nothing(store, clock):  # type: ignore[no-untyped-def]
    job = _queued(store, clock)
    with pytest.raises(StaleVersion):
        store.lifecycle.amend(
            job.id, Amendment(gpus=4), reason="x", actor="ann", expected_version=1
        )
    done = store.lifecycle.transition(job.id, JobState.CANCELLED, reason="cancelled", actor="ann")
    with pytest.raises(IllegalTransition):
        store.lifecycle.amend(
            job.id, Amendment(to_state=JobState.SUBMITTED, gpus=4), reason="x", actor="ann"
        )
    assert store.jobs.get(job.id) == done
    # a note on an ended job: same state, one event, the version bumped
    noted = store.lifecycle.amend(job.id, Amendment(), reason="requeued as j2", actor="ann")
    assert (noted.state, noted.version, noted.job.gpus) == (JobState.CANCELLED, done.version + 1, 2)
    last = store.jobs.events(job.id)[-1]
    assert (last.from_state, last.to_state, last.reason) == (
        JobState.CANCELLED,
        JobState.CANCELLED,
        "requeued as j2",
    )
