"""The counts submission limits read (``JobStore.backlog``, ``waits_of``, ``held_count``),
the same on every store (``memory``, ``sqlite``, ``postgresql``; see ``conftest.py``)."""

from __future__ import annotations

from starburst.core.dependencies import AfterKind, Dependency
from starburst.core.lifecycle import JobState
from starburst.core.records import JobSpec


def test_backlog_counts_waiting_jobs_array_elements_and_known_keys(store):  # type: ignore[no-untyped-def]
    a = store.submissions.submit(
        JobSpec(gpus=1, user="ann", team="ml", array="ann/s"), idempotency_key="k1"
    )
    store.submissions.submit(JobSpec(gpus=1, user="ann", team="ml", array="ann/s"))
    store.submissions.submit(JobSpec(gpus=1, user="bob", team="ml"))
    done = store.submissions.submit(JobSpec(gpus=1, user="ann", team="ml", array="ann/s")).job.id
    store.lifecycle.transition(
        a.job.id, JobState.QUEUED, reason="admitted", actor="c"
    )  # still waiting
    for state in (JobState.QUEUED, JobState.RUNNING_ONPREM, JobState.SUCCEEDED):
        store.lifecycle.transition(done, state, reason="-", actor="c")
    found = store.jobs.backlog(
        users={"ann", "bob", "cid"}, teams={"ml", "cv"}, arrays={"ann/s", "x"}, keys={"k1", "k2"}
    )
    assert dict(found.waiting_by_user) == {"ann": 2, "bob": 1}
    assert dict(found.waiting_by_team) == {"ml": 3}
    assert dict(found.array_sizes) == {"ann/s": 3}  # every element, ended ones too
    assert set(found.known_keys) == {"k1"}


def test_backlog_counts_users_and_teams_apart_when_they_cross(store):  # type: ignore[no-untyped-def]
    """A user in two teams, a team with a user nobody asked about, jobs with no team: each
    asked-for user and team counts all of its waiting jobs, and nothing else."""
    for user, team in [("ann", "ml"), ("ann", "ml"), ("ann", "cv"), ("bob", "cv"), ("ann", None)]:
        store.submissions.submit(JobSpec(gpus=1, user=user, team=team))
    store.submissions.submit(JobSpec(gpus=1, user="cid", team="ml"))
    found = store.jobs.backlog(users={"ann"}, teams={"cv"}, arrays=(), keys=())
    assert dict(found.waiting_by_user) == {"ann": 4}
    assert dict(found.waiting_by_team) == {"cv": 2}
    found = store.jobs.backlog(users={"bob", "cid"}, teams={"ml"}, arrays=(), keys=())
    assert dict(found.waiting_by_user) == {"bob": 1, "cid": 1}
    assert dict(found.waiting_by_team) == {"ml": 3}


def test_waits_of_gives_what_unfinished_jobs_wait_for(store):  # type: ignore[no-untyped-def]
    first = store.submissions.submit(JobSpec(gpus=1, user="ann")).job.id
    second = store.submissions.submit(
        JobSpec(gpus=1, user="ann", after=(Dependency(first, AfterKind.OK),))
    ).job.id
    ended = store.submissions.submit(JobSpec(gpus=1, user="ann", after=(Dependency(first),))).job.id
    store.lifecycle.transition(ended, JobState.CANCELLED, reason="-", actor="ann")
    assert store.jobs.waits_of({first, second, ended, "unknown"}) == {first: (), second: (first,)}
    assert store.jobs.waits_of(set()) == {}


def test_held_count_counts_jobs_held_out_of_the_queue(store):  # type: ignore[no-untyped-def]
    ids = [store.submissions.submit(JobSpec(gpus=1, user="ann")).job.id for _ in range(3)]
    store.lifecycle.hold({ids[0]: "waits for x", ids[1]: "array slot"})
    assert store.jobs.held_count() == 2
    store.lifecycle.transition(ids[0], JobState.QUEUED, reason="released", actor="c")
    assert store.jobs.held_count() == 1


def test_a_writer_reads_the_backlog_and_submits_as_the_store_does(store):  # type: ignore[no-untyped-def]
    store.submissions.submit(JobSpec(gpus=1, user="ann", team="ml"), idempotency_key="ann/k1")
    writer = store.submissions.writer()
    try:
        for _ in range(2):  # a run of batches through the same writer
            asked = {"users": {"ann"}, "teams": {"ml"}, "arrays": set(), "keys": {"ann/k1"}}
            assert writer.backlog(**asked) == store.jobs.backlog(**asked)
            spec = JobSpec(gpus=1, user="ann", team="ml")
            made, again = writer.submit_many([(spec, "ann/k2", "ann"), (spec, "ann/k1", "ann")])
            assert made.job.id == store.jobs.find_by_key("ann/k2").id
            assert again.job.id == store.jobs.find_by_key("ann/k1").id and not again.created
            assert store.jobs.events(made.job.id)[0].actor == "ann"
    finally:
        writer.close()
    assert store.jobs.backlog(users={"ann"}, teams=(), arrays=(), keys=()).waiting_by_user == {
        "ann": 2
    }
