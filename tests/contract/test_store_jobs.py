"""The ``JobStore`` contract: every store implementation (``memory``, ``sqlite``,
``postgresql``; see ``conftest.py``) passes the same tests of submission, the queue, state
changes with versions and fencing tokens, the change feed and placements."""

from __future__ import annotations

import threading
from decimal import Decimal

import pytest

from starburst.core.capacity import Part
from starburst.core.errors import ConfigError, PermanentError
from starburst.core.lifecycle import IllegalTransition, JobState
from starburst.core.records import (
    CostEntry,
    DuplicateJob,
    InvalidPage,
    JobNotFound,
    JobSpec,
    Move,
    StaleLeader,
    StaleVersion,
)


def queued(store, n, *, team="ml", user="ann", gap=1.0, clock=None):  # type: ignore[no-untyped-def]
    ids = []
    for i in range(n):
        if clock is not None:
            clock.advance(gap)
        job = store.submissions.submit(
            JobSpec(gpus=1 + i % 4, user=user, team=team, name=f"j{i}")
        ).job
        store.lifecycle.transition(job.id, JobState.QUEUED, reason="admitted", actor="controller")
        ids.append(job.id)
    return ids


# ---- submission ---------------------------------------------------------------------------
def test_submit_stores_the_spec_and_a_submitted_event(store, clock):  # type: ignore[no-untyped-def]
    spec = JobSpec(
        gpus=8,
        cpus=16,
        memory_mb=64_000,
        gpu_type="A100",
        user="ann",
        team="ml",
        image="pytorch:2",
        command="python train.py",
        declared_runtime=3600.0,
        deadline=clock.now() + 7200,
        extra={"queue": "default"},
    )
    sub = store.submissions.submit(spec, idempotency_key="k-1", actor="cli")
    got = store.jobs.get(sub.job.id)
    assert sub.created and got == sub.job
    assert (got.state, got.version, got.job.gpus, got.job.gpu_type) == (
        JobState.SUBMITTED,
        1,
        8,
        "A100",
    )
    assert (got.job.user, got.job.team, got.job.estimate, got.image, got.command) == (
        "ann",
        "ml",
        3600.0,
        "pytorch:2",
        "python train.py",
    )
    assert (got.job.cpus, got.job.memory_mb, got.job.deadline) == (16, 64_000, clock.now() + 7200)
    assert got.job.submit_time == clock.now() == got.queued_at
    assert dict(got.job.extra) == {"queue": "default"} and got.idempotency_key == "k-1"
    assert (got.started_at, got.ended_at, got.ran_on, got.wait_budget) == (None, None, None, None)
    [event] = store.jobs.events(sub.job.id)
    assert (event.from_state, event.to_state, event.actor, event.at) == (
        None,
        JobState.SUBMITTED,
        "cli",
        clock.now(),
    )
    assert store.accounts.user("ann").team == "ml"


def test_a_job_of_pods_keeps_its_pod_count(store):  # type: ignore[no-untyped-def]
    pods = store.submissions.submit(JobSpec(gpus=12, pods=4, user="ann")).job
    plain = store.submissions.submit(JobSpec(gpus=12, user="ann")).job
    assert store.jobs.get(pods.id).job.pods == 4 and store.jobs.get(pods.id).job.split_unit == 3
    assert store.jobs.get(plain.id).job.pods is None  # not made of pods: any split
    with pytest.raises(PermanentError, match="4 pods cannot share 10 GPUs"):
        JobSpec(gpus=10, pods=4)
    with pytest.raises(PermanentError):
        JobSpec(gpus=2, pods=0)


def test_duplicate_idempotency_key_returns_the_existing_job(store, clock):  # type: ignore[no-untyped-def]
    first = store.submissions.submit(JobSpec(gpus=2, user="ann"), idempotency_key="same")
    clock.advance(60)
    again = store.submissions.submit(JobSpec(gpus=4, user="bob"), idempotency_key="same")
    assert not again.created
    assert again.job.id == first.job.id and again.job.job.gpus == 2
    assert store.jobs.count(JobState.SUBMITTED) == 1
    assert len(store.jobs.events(first.job.id)) == 1
    assert store.jobs.find_by_key("same").id == first.job.id
    assert store.jobs.find_by_key("never-used") is None


def test_batch_submission_dedupes_keys_within_and_across_batches(store):  # type: ignore[no-untyped-def]
    old = store.submissions.submit(JobSpec(gpus=1), idempotency_key="a").job
    subs = store.submissions.submit_many(
        [
            (JobSpec(gpus=2), "a", None),
            (JobSpec(gpus=3), "b", None),
            (JobSpec(gpus=4), "b", None),
            JobSpec(gpus=5),
        ]
    )
    assert [s.created for s in subs] == [False, True, False, True]
    assert subs[0].job.id == old.id and subs[1].job.id == subs[2].job.id
    assert store.jobs.count(JobState.SUBMITTED) == 3


def test_a_batch_may_mix_whole_and_fractional_numbers(store):  # type: ignore[no-untyped-def]
    """A float column given ints and floats in one batch (a script's ``600`` and ``600.5``)
    stores each as given: PostgreSQL's batch writes send one array per column."""
    specs = [JobSpec(gpus=1, declared_runtime=600), JobSpec(gpus=1, declared_runtime=600.5)]
    ids = [s.job.id for s in store.submissions.submit_many(specs)]
    assert [store.jobs.get(i).declared_runtime for i in ids] == [600.0, 600.5]
    moves = [Move(ids[0], "queued", wait_budget=60), Move(ids[1], "queued", wait_budget=0.5)]
    store.lifecycle.transition_many(moves, JobState.QUEUED, actor="controller")
    assert [store.jobs.get(i).wait_budget for i in ids] == [60.0, 0.5]


def test_a_batch_names_each_submitter_and_creates_their_user(store):  # type: ignore[no-untyped-def]
    subs = store.submissions.submit_many(
        [
            (JobSpec(gpus=1, user="ann", team="ml"), "k-ann", "ann@cli"),
            (JobSpec(gpus=1, user="bob"), None, None),
            (JobSpec(gpus=1), None, None),
        ]
    )
    actors = [store.jobs.events(s.job.id)[0].actor for s in subs]
    assert actors == ["ann@cli", "bob", "unknown"]  # else the job's user, else unknown
    # the batch's actor stands for the items that name none
    mixed = store.submissions.submit_many(
        [JobSpec(gpus=1, user="bob"), (JobSpec(gpus=1), None, "eve@cli")], actor="admin"
    )
    assert [store.jobs.events(s.job.id)[0].actor for s in mixed] == ["admin", "eve@cli"]
    assert store.accounts.user("bob").team is None and store.accounts.user("ann").team == "ml"
    assert store.jobs.find_by_key("k-ann").id == subs[0].job.id


def test_a_taken_job_id_is_refused_and_nothing_of_the_batch_is_kept(store):  # type: ignore[no-untyped-def]
    store.submissions.submit(JobSpec(gpus=1, id="job-1"))
    with pytest.raises(DuplicateJob, match="job-1"):
        store.submissions.submit_many([JobSpec(gpus=1, id="job-2"), JobSpec(gpus=1, id="job-1")])
    with pytest.raises(JobNotFound):
        store.jobs.get("job-2")
    assert store.jobs.last_event_id() == 1  # only job-1's submission


# ---- reading --------------------------------------------------------------------------------
def test_queue_pages_in_fifo_order_with_ties_broken_by_id(store, clock):  # type: ignore[no-untyped-def]
    ids = queued(store, 7, clock=clock)
    clock.advance(1)
    tied = [store.submissions.submit(JobSpec(gpus=1, id=i)).job.id for i in ("z-tie", "a-tie")]
    for job_id in tied:
        store.lifecycle.transition(job_id, JobState.QUEUED, reason="admitted", actor="controller")
    seen, cursor, pages = [], None, 0
    while True:
        page = store.jobs.queue(limit=3, cursor=cursor)
        seen += [j.id for j in page.jobs]
        pages += 1
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
    assert seen == [*ids, "a-tie", "z-tie"] and pages == 3
    assert store.jobs.queue(limit=100, states=[JobState.SUBMITTED]).jobs == []


def test_a_cursor_stays_valid_while_jobs_arrive(store, clock):  # type: ignore[no-untyped-def]
    ids = queued(store, 4, clock=clock)
    page = store.jobs.queue(limit=2)
    later = queued(store, 2, clock=clock)  # arrive between the pages, behind the cursor
    rest = store.jobs.queue(limit=10, cursor=page.next_cursor)
    assert [j.id for j in page.jobs + rest.jobs] == ids + later


def test_a_queue_of_several_states_is_one_fifo(store, clock):  # type: ignore[no-untyped-def]
    ids = queued(store, 3, clock=clock)
    store.lifecycle.transition(ids[1], JobState.BURSTING, reason="cloud", actor="c")
    both = store.jobs.queue(states=[JobState.QUEUED, JobState.BURSTING])
    assert [j.id for j in both.jobs] == ids and both.next_cursor is None


def test_bad_cursor_and_limit_are_clear_errors(store):  # type: ignore[no-untyped-def]
    # a cursor the store never handed out is its own error (not a configuration error)
    for cursor in ("not-a-cursor", "!!!", "", "bm90LWEtdGltZXxqb2I"):  # "not-a-time|job"
        with pytest.raises(InvalidPage, match="invalid page cursor") as raised:
            store.jobs.queue(cursor=cursor)
        assert not isinstance(raised.value, ConfigError) and raised.value.cursor == cursor
    with pytest.raises(ConfigError, match="limit"):
        store.jobs.queue(limit=0)


def test_a_queue_page_of_one_owner_is_filtered_in_the_store(store, clock):  # type: ignore[no-untyped-def]
    mine = queued(store, 3, user="ann", team="ml", clock=clock)
    queued(store, 120, user="bob", team="nlp", clock=clock)  # many pages of other people's jobs
    mine += queued(store, 2, user="ann", team="ml", clock=clock)
    seen, cursor = [], None
    for _ in range(3):
        page = store.jobs.queue(limit=2, cursor=cursor, user="ann")
        seen += [j.id for j in page.jobs]
        cursor = page.next_cursor
        if cursor is None:
            break
    assert seen == mine and cursor is None
    assert [j.job.team for j in store.jobs.queue(limit=500, team="ml").jobs] == ["ml"] * 5
    assert store.jobs.queue(limit=10, user="ann", team="nlp").jobs == []


def test_a_queue_narrowed_by_a_name_glob(store, clock):  # type: ignore[no-untyped-def]
    names = ["sweep-1", "Sweep-22", "sweep_x", "sweeps", "train", "50%-off"]
    ids = {}
    for name in names:
        clock.advance(1)
        ids[name] = store.submissions.submit(JobSpec(gpus=1, name=name)).job.id
        store.lifecycle.transition(ids[name], JobState.QUEUED, reason="admitted", actor="c")
    store.submissions.submit(JobSpec(gpus=1))  # no name: never matches

    def named(pattern: str) -> list[str]:
        return [j.job.name for j in store.jobs.queue(name=pattern).jobs]

    assert named("sweep-*") == ["sweep-1", "Sweep-22"]  # case-insensitive
    assert named("sweep?") == ["sweeps"]  # ? is one character; _ is not special
    assert named("sweep_x") == ["sweep_x"]
    assert named("50%*") == ["50%-off"] and named("50") == []  # % is literal; whole name


def test_lookup_resolves_an_id_prefix_or_the_owners_job_name(store, clock):  # type: ignore[no-untyped-def]
    for job_id, user, name in [
        ("abc-1", "ann", "train"),
        ("abc-2", "bob", "train"),
        ("xyz-9", "ann", "abc"),
        ("abd-3", "ann", None),
    ]:
        clock.advance(1)
        store.submissions.submit(JobSpec(gpus=1, id=job_id, user=user, name=name))
    assert [j.id for j in store.jobs.lookup("abc", owner="ann")] == ["abc-1", "xyz-9"]
    assert [j.id for j in store.jobs.lookup("abc", owner="ann", everyone=True)] == [
        "abc-1",
        "abc-2",
        "xyz-9",
    ]
    assert [j.id for j in store.jobs.lookup("train", owner="bob")] == ["abc-2"]
    assert [j.id for j in store.jobs.lookup("ab", owner="ann", limit=1)] == ["abc-1"]
    assert store.jobs.lookup("nothing", owner="ann", everyone=True) == []


def test_states_of_many_jobs_in_one_read(store):  # type: ignore[no-untyped-def]
    ids = [store.submissions.submit(JobSpec(gpus=1, user="ann")).job.id for _ in range(3)]
    store.lifecycle.transition(ids[1], JobState.CANCELLED, reason="user", actor="ann")
    many = [*ids, "not-a-starburst-job"] + [f"other-{i}" for i in range(1500)]  # > one chunk
    assert store.jobs.states_of(many) == {
        ids[0]: JobState.SUBMITTED,
        ids[1]: JobState.CANCELLED,
        ids[2]: JobState.SUBMITTED,
    }
    assert store.jobs.states_of([]) == {}


def test_the_change_feed_names_each_state_change_once_in_order(store):  # type: ignore[no-untyped-def]
    assert store.jobs.last_event_id() == 0 and store.jobs.state_changes(0) == ([], 0)
    a = store.submissions.submit(JobSpec(gpus=1)).job.id
    start = store.jobs.last_event_id()
    b = store.submissions.submit(JobSpec(gpus=1)).job.id
    store.lifecycle.transition(a, JobState.QUEUED, reason="admitted", actor="c")
    store.lifecycle.transition(a, JobState.CANCELLED, reason="user", actor="c")
    changes, position = store.jobs.state_changes(start)
    assert changes == [
        (b, JobState.SUBMITTED),
        (a, JobState.QUEUED),
        (a, JobState.CANCELLED),
    ]
    assert position == store.jobs.last_event_id() == start + 3
    first, mid = store.jobs.state_changes(start, limit=2)
    assert first == changes[:2] and store.jobs.state_changes(mid) == (changes[2:], position)
    assert store.jobs.state_changes(position) == ([], position)
    assert store.jobs.events("ghost") == []


def test_count_follows_the_states(store):  # type: ignore[no-untyped-def]
    ids = queued(store, 3)
    store.lifecycle.transition(ids[0], JobState.RUNNING_ONPREM, reason="fits", actor="c")
    assert [store.jobs.count(s) for s in (JobState.QUEUED, JobState.RUNNING_ONPREM)] == [2, 1]
    assert store.jobs.count(JobState.SUBMITTED) == 0


# ---- state changes ------------------------------------------------------------------------
def test_lifecycle_on_prem_sets_times_runtime_and_history(store, clock):  # type: ignore[no-untyped-def]
    [job_id] = queued(store, 1)
    clock.advance(30)
    running = store.lifecycle.transition(job_id, JobState.RUNNING_ONPREM, reason="fits", actor="c")
    clock.advance(100)
    done = store.lifecycle.transition(job_id, JobState.SUCCEEDED, reason="exit 0", actor="c")
    assert running.started_at == clock.now() - 100 and running.ran_on == "onprem"
    assert done.version == 4 and done.job.runtime == 100 and done.ended_at == clock.now()
    assert store.jobs.get(job_id) == done
    [hist] = store.models.history()
    assert hist.job.id == job_id and hist.job.runtime == 100 and hist.ran_on == "onprem"
    assert [e.to_state for e in store.jobs.events(job_id)] == [
        JobState.SUBMITTED,
        JobState.QUEUED,
        JobState.RUNNING_ONPREM,
        JobState.SUCCEEDED,
    ]


def test_a_cloud_run_and_a_job_cancelled_before_it_started(store, clock):  # type: ignore[no-untyped-def]
    cloud, never = queued(store, 2)
    bursting = store.lifecycle.transition(
        cloud, JobState.BURSTING, reason="budget spent", actor="c"
    )
    assert (bursting.ran_on, bursting.started_at) == ("cloud", None)
    clock.advance(10)
    running = store.lifecycle.transition(
        cloud, JobState.RUNNING_CLOUD, reason="launched", actor="c"
    )
    assert (running.ran_on, running.started_at) == ("cloud", clock.now())
    clock.advance(50)
    failed = store.lifecycle.transition(cloud, JobState.FAILED, reason="exit 1", actor="c")
    assert (failed.job.runtime, failed.ended_at) == (50, clock.now())
    cancelled = store.lifecycle.transition(
        never, JobState.CANCELLED, reason="user", actor="ann", at=5.0
    )
    assert (cancelled.ended_at, cancelled.job.runtime) == (5.0, None)
    assert store.jobs.events(never)[-1].at == 5.0


def test_star_wait_pull_back_requeues_at_the_back(store, clock):  # type: ignore[no-untyped-def]
    first, second = queued(store, 2, clock=clock)
    store.lifecycle.transition(first, JobState.BURSTING, reason="budget spent", actor="c")
    store.lifecycle.transition(first, JobState.RUNNING_CLOUD, reason="launched", actor="c")
    clock.advance(900)
    back = store.lifecycle.transition(
        first, JobState.QUEUED, reason="pull back", actor="c", wait_budget=120.0
    )
    assert back.queued_at == clock.now() and back.started_at is None and back.ran_on is None
    assert back.wait_budget == 120.0
    assert [j.id for j in store.jobs.queue().jobs] == [second, first]


@pytest.mark.parametrize(
    ("path", "illegal"),
    [
        ([], JobState.RUNNING_ONPREM),
        ([JobState.QUEUED, JobState.RUNNING_ONPREM, JobState.SUCCEEDED], JobState.QUEUED),
        ([JobState.CANCELLED], JobState.QUEUED),
        ([JobState.QUEUED, JobState.RUNNING_ONPREM], JobState.BURSTING),
    ],
)
def test_illegal_transitions_raise_and_change_nothing(store, path, illegal):  # type: ignore[no-untyped-def]
    job_id = store.submissions.submit(JobSpec(gpus=1)).job.id
    for state in path:
        store.lifecycle.transition(job_id, state, reason="step", actor="c")
    before = store.jobs.get(job_id)
    with pytest.raises(IllegalTransition):
        store.lifecycle.transition(job_id, illegal, reason="wrong", actor="c")
    assert store.jobs.get(job_id) == before
    assert len(store.jobs.events(job_id)) == 1 + len(path)


def test_a_stale_version_cannot_move_the_job(store):  # type: ignore[no-untyped-def]
    [job_id] = queued(store, 1)
    seen = store.jobs.get(job_id)
    store.lifecycle.transition(
        job_id, JobState.RUNNING_ONPREM, reason="a", actor="writer-a", expected_version=seen.version
    )
    with pytest.raises(StaleVersion):
        store.lifecycle.transition(
            job_id, JobState.CANCELLED, reason="b", actor="writer-b", expected_version=seen.version
        )
    assert store.jobs.get(job_id).state is JobState.RUNNING_ONPREM


def test_unknown_job_is_a_clear_error(store):  # type: ignore[no-untyped-def]
    with pytest.raises(JobNotFound, match="nope"):
        store.lifecycle.transition("nope", JobState.QUEUED, reason="x", actor="c")
    with pytest.raises(JobNotFound):
        store.jobs.get("nope")
    with pytest.raises(JobNotFound):
        store.ledger.record_costs([CostEntry("nope", 0, 1, Decimal(1), "aws")])
    with pytest.raises(JobNotFound):
        store.lifecycle.record_placement("nope", (Part(0, "node-0", 1, 0.0, 0.0),))


def test_fencing_token_of_an_old_leader_is_refused(store, elect):  # type: ignore[no-untyped-def]
    [job_id] = queued(store, 1)
    with pytest.raises(StaleLeader):  # no leader yet: no token is current
        store.lifecycle.transition(
            job_id, JobState.BURSTING, reason="early", actor="x", fencing_token=1
        )
    old = elect()
    new = elect()
    assert new > old
    with pytest.raises(StaleLeader):
        store.lifecycle.transition(
            job_id, JobState.BURSTING, reason="late", actor="old", fencing_token=old
        )
    with pytest.raises(StaleLeader):
        store.lifecycle.record_placement(
            job_id, (Part(0, "node-0", 1, 0.0, 0.0),), fencing_token=old
        )
    with pytest.raises(StaleLeader):
        store.lifecycle.claim(
            JobState.BURSTING, limit=1, reason="late", actor="old", fencing_token=old
        )
    assert store.jobs.get(job_id).state is JobState.QUEUED and store.jobs.placement(job_id) == ()
    moved = store.lifecycle.transition(
        job_id, JobState.BURSTING, reason="ok", actor="new", fencing_token=new
    )
    assert moved.state is JobState.BURSTING
    assert store.jobs.events(job_id)[-1].fencing_token == new
    assert store.jobs.events(job_id)[-2].fencing_token is None  # unfenced writes carry none


def test_claim_takes_the_head_of_the_queue_once(store, clock):  # type: ignore[no-untyped-def]
    ids = queued(store, 5, clock=clock)
    first = store.lifecycle.claim(JobState.BURSTING, limit=2, reason="cap", actor="c")
    second = store.lifecycle.claim(JobState.BURSTING, limit=2, reason="cap", actor="c")
    assert [j.id for j in first] == ids[:2] and [j.id for j in second] == ids[2:4]
    assert all(j.state is JobState.BURSTING and j.version == 3 for j in first + second)
    assert [j.id for j in store.jobs.queue().jobs] == ids[4:]
    assert store.jobs.events(ids[0])[-1].from_state is JobState.QUEUED
    with pytest.raises(IllegalTransition):
        store.lifecycle.claim(
            JobState.SUCCEEDED, limit=1, reason="x", actor="c", from_state=JobState.SUBMITTED
        )


def test_concurrent_claimers_take_disjoint_jobs(store, clock):  # type: ignore[no-untyped-def]
    ids = queued(store, 12, clock=clock)
    barrier = threading.Barrier(4)
    taken: list[list[str]] = []

    def claimer() -> None:
        barrier.wait()
        got = store.lifecycle.claim(JobState.BURSTING, limit=3, reason="cap", actor="c")
        taken.append([j.id for j in got])

    threads = [threading.Thread(target=claimer) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    flat = [job_id for part in taken for job_id in part]
    assert sorted(flat) == sorted(ids) and len(set(flat)) == 12


def test_two_concurrent_writers_cannot_both_move_a_job(store):  # type: ignore[no-untyped-def]
    job_id = store.submissions.submit(JobSpec(gpus=1)).job.id
    store.lifecycle.transition(job_id, JobState.QUEUED, reason="admitted", actor="c")
    seen = store.jobs.get(job_id).version
    targets = [JobState.RUNNING_ONPREM, JobState.BURSTING, JobState.CANCELLED] * 2
    barrier = threading.Barrier(len(targets))
    won: list[JobState] = []
    lost: list[Exception] = []

    def writer(target: JobState) -> None:
        barrier.wait()
        try:
            store.lifecycle.transition(
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
    final = store.jobs.get(job_id)
    assert final.state is won[0] and final.version == seen + 1
    moves = [e for e in store.jobs.events(job_id) if e.from_state is JobState.QUEUED]
    assert len(moves) == 1


def test_racing_writers_without_versions_still_move_a_job_once(store):  # type: ignore[no-untyped-def]
    """Without ``expected_version`` the lifecycle itself refuses the losers."""
    job_id = store.submissions.submit(JobSpec(gpus=1)).job.id
    store.lifecycle.transition(job_id, JobState.QUEUED, reason="admitted", actor="c")
    barrier = threading.Barrier(4)
    results: list[object] = []

    def writer() -> None:
        barrier.wait()
        try:
            results.append(
                store.lifecycle.transition(job_id, JobState.RUNNING_ONPREM, reason="r", actor="w")
            )
        except (StaleVersion, IllegalTransition) as exc:
            results.append(exc)

    threads = [threading.Thread(target=writer) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sum(not isinstance(r, Exception) for r in results) == 1
    assert len([e for e in store.jobs.events(job_id) if e.to_state is JobState.RUNNING_ONPREM]) == 1


def test_a_batch_transition_moves_what_it_may_in_one_go(store, elect, clock):  # type: ignore[no-untyped-def]
    ids = [store.submissions.submit(JobSpec(gpus=1, user="ann")).job.id for _ in range(4)]
    store.lifecycle.transition(ids[2], JobState.CANCELLED, reason="user", actor="ann")
    moves = [Move(i, f"queued {n}", wait_budget=60.0 * n) for n, i in enumerate(ids)]
    moves.append(Move("no-such-job", "ghost"))
    moves.append(Move(ids[0], "named twice"))
    clock.advance(5)
    result = store.lifecycle.transition_many(moves, JobState.QUEUED, actor="controller")
    assert [m.job.id for m in result.moved] == [ids[0], ids[1], ids[3]]
    assert result.skipped == [ids[2], "no-such-job", ids[0]]
    for n in (0, 1, 3):
        got = store.jobs.get(ids[n])
        assert (got.state, got.version, got.wait_budget) == (JobState.QUEUED, 2, 60.0 * n)
        assert got == next(m for m in result.moved if m.job.id == ids[n])
        last = store.jobs.events(ids[n])[-1]
        assert (last.from_state, last.to_state, last.reason) == (
            JobState.SUBMITTED,
            JobState.QUEUED,
            f"queued {n}",
        )
        assert last.at == clock.now()
    assert store.jobs.get(ids[2]).state is JobState.CANCELLED  # skipped, untouched
    again = store.lifecycle.transition_many(moves[:1], JobState.QUEUED, actor="controller")
    assert again.moved == [] and again.skipped == [ids[0]]  # queued -> queued is no move

    # a deposed leader's batch changes nothing at all
    old = elect()
    elect()
    fresh = store.submissions.submit(JobSpec(gpus=1, user="ann")).job.id
    with pytest.raises(StaleLeader):
        store.lifecycle.transition_many(
            [Move(fresh, "late")], JobState.QUEUED, actor="controller", fencing_token=old
        )
    assert store.jobs.get(fresh).state is JobState.SUBMITTED and len(store.jobs.events(fresh)) == 1


def test_an_admission_queues_the_jobs_still_submitted_as_a_batch_transition_does(  # type: ignore[no-untyped-def]
    store, elect, clock
):
    """``admit`` writes what ``transition_many`` to ``queued`` writes (version, budget,
    predicted runtime, a hold's end, one event each, in order), for the jobs still submitted
    only: a job burst
    meanwhile is not re-queued, as ``transition_many`` would re-queue it."""
    submitted_at = clock.now()
    specs = [JobSpec(gpus=1, user="ann", name=f"a{n}") for n in range(10)]
    ids = [s.job.id for s in store.submissions.submit_many(specs)]
    twins = dict(zip(ids[:5], ids[5:], strict=True))  # each moved by transition_many
    store.lifecycle.hold({ids[3]: "waits for another job", twins[ids[3]]: "waits"})
    store.lifecycle.transition(ids[2], JobState.CANCELLED, reason="user", actor="ann")
    store.lifecycle.transition(ids[4], JobState.QUEUED, reason="admitted", actor="controller")
    store.lifecycle.transition(ids[4], JobState.BURSTING, reason="burst", actor="controller")
    feed = store.jobs.last_event_id()
    clock.advance(5)
    token = elect()

    def budget(n: int) -> float | None:
        return None if n == 1 else float("inf") if n == 3 else 60.0 * n

    def runtime(n: int) -> float | None:  # (the admission's estimate, written with the move)
        return None if n == 0 else 100.0 * n

    def move(job_id: str, n: int) -> Move:
        return Move(job_id, f"queued {n}", wait_budget=budget(n), predicted_runtime=runtime(n))

    moves = [move(i, n) for n, i in enumerate(ids[:5])]
    moves += [Move("no-such-job", "ghost"), Move(ids[0], "named twice", predicted_runtime=9.0)]
    result = store.lifecycle.admit(moves, actor="controller", fencing_token=token)
    assert result.admitted == [ids[0], ids[1], ids[3]]
    assert result.skipped == [ids[2], ids[4], "no-such-job", ids[0]]
    store.lifecycle.transition_many(
        [move(twins[i], n) for n, i in enumerate(ids[:2])] + [move(twins[ids[3]], 3)],
        JobState.QUEUED,
        actor="controller",
        fencing_token=token,
    )
    for n in (0, 1, 3):
        got, twin = store.jobs.get(ids[n]), store.jobs.get(twins[ids[n]])
        assert (
            got.state,
            got.version,
            got.held,
            got.wait_budget,
            got.predicted_runtime,
            got.queued_at,
        ) == (
            twin.state,
            twin.version,
            twin.held,
            twin.wait_budget,
            twin.predicted_runtime,
            twin.queued_at,
        )
        assert (got.state, got.version, got.held, got.wait_budget, got.predicted_runtime) == (
            JobState.QUEUED,
            2,
            None,
            budget(n),
            runtime(n),
        )
        assert got.queued_at == (clock.now() if n == 3 else submitted_at)  # a hold's end
        last = store.jobs.events(ids[n])[-1]
        assert (last.from_state, last.to_state, last.reason, last.at, last.actor) == (
            JobState.SUBMITTED,
            JobState.QUEUED,
            f"queued {n}",
            clock.now(),
            "controller",
        )
        assert last.fencing_token == token
    assert store.jobs.get(ids[2]).state is JobState.CANCELLED  # skipped, untouched
    assert store.jobs.get(ids[4]).state is JobState.BURSTING
    changes, _ = store.jobs.state_changes(feed)
    assert changes[:3] == [(ids[n], JobState.QUEUED) for n in (0, 1, 3)]  # in the moves' order

    # a deposed leader's admission changes nothing at all
    elect()
    fresh = store.submissions.submit(JobSpec(gpus=1, user="ann")).job.id
    with pytest.raises(StaleLeader):
        store.lifecycle.admit([Move(fresh, "late")], actor="controller", fencing_token=token)
    assert store.jobs.get(fresh).state is JobState.SUBMITTED and len(store.jobs.events(fresh)) == 1


def test_a_large_mixed_batch_moves_every_job_with_one_event_each(store, clock):  # type: ignore[no-untyped-def]
    """A batch whose jobs change different columns (held or not, a budget or none) is
    written in one statement per kind of change (PostgreSQL: ``UPDATE ... FROM unnest``):
    every job moves once, with its own values, and has exactly one new event, in order."""
    submitted_at = clock.now()
    specs = [JobSpec(gpus=1, user="ann", name=f"b{n}") for n in range(60)]
    ids = [s.job.id for s in store.submissions.submit_many(specs)]
    store.lifecycle.hold({job_id: "waits for another job" for job_id in ids[::3]})
    feed = store.jobs.last_event_id()
    clock.advance(7)

    def budget(n: int) -> float | None:
        return None if n % 4 == 0 else 10.0 * n

    moves = [Move(job_id, f"queued {n}", wait_budget=budget(n)) for n, job_id in enumerate(ids)]
    result = store.lifecycle.transition_many(moves, JobState.QUEUED, actor="controller")
    assert [m.job.id for m in result.moved] == ids and result.skipped == []
    for n, job_id in enumerate(ids):
        got = store.jobs.get(job_id)
        assert got == result.moved[n]
        assert (got.state, got.version, got.held, got.wait_budget) == (
            JobState.QUEUED,
            2,
            None,
            budget(n),
        )
        assert got.queued_at == (clock.now() if n % 3 == 0 else submitted_at)  # a hold's end
        events = [(e.from_state, e.to_state, e.reason, e.at) for e in store.jobs.events(job_id)]
        assert events[1:] == [(JobState.SUBMITTED, JobState.QUEUED, f"queued {n}", clock.now())]
    changes, _ = store.jobs.state_changes(feed)
    assert changes == [(job_id, JobState.QUEUED) for job_id in ids]


def test_estimates_are_stored_without_a_state_change(store):  # type: ignore[no-untyped-def]
    [job_id] = queued(store, 1)
    store.lifecycle.set_estimates(job_id, predicted_runtime=600.0, wait_budget=90.0)
    got = store.jobs.get(job_id)
    assert (got.job.estimate, got.wait_budget, got.version) == (600.0, 90.0, 2)
    store.lifecycle.set_estimates(job_id, wait_budget=30.0)  # None keeps the estimate
    assert (store.jobs.get(job_id).job.estimate, store.jobs.get(job_id).wait_budget) == (
        600.0,
        30.0,
    )
    with pytest.raises(JobNotFound):
        store.lifecycle.set_estimates("ghost", wait_budget=1.0)


def test_placements_are_kept_per_attempt(store, elect):  # type: ignore[no-untyped-def]
    [job_id] = queued(store, 1)
    assert store.jobs.placement(job_id) == ()
    one = (Part(0, "node-0", 8, 0.0, 0.0), Part(3, "node-3", 2, 4.0, 100.0))
    assert store.lifecycle.record_placement(job_id, one) == 1
    two = (Part(1, "node-1", 8, 0.0, 0.0),)
    assert store.lifecycle.record_placement(job_id, two, fencing_token=elect()) == 2
    assert store.jobs.placement(job_id) == two
    assert store.jobs.placement("never-placed") == ()
