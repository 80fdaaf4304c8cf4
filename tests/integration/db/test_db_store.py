"""The store's behaviour, the same tests on SQLite and PostgreSQL (``store`` fixture)."""

from __future__ import annotations

from decimal import Decimal

import pytest

from starburst.core.capacity import Part
from starburst.core.errors import ConfigError, PermanentError
from starburst.core.lifecycle import IllegalTransition, JobState
from starburst.core.records import (
    CloudLaunch,
    CostEntry,
    DuplicateJob,
    JobNotFound,
    JobSpec,
    Move,
    Prediction,
    Role,
    StaleLeader,
    StaleVersion,
)

DAY = 86_400.0


def queued(store, n, *, team="ml", user="ann", gap=1.0, clock=None):  # type: ignore[no-untyped-def]
    ids = []
    for i in range(n):
        if clock is not None:
            clock.advance(gap)
        job = store.submit(JobSpec(gpus=1 + i % 4, user=user, team=team, name=f"j{i}")).job
        store.transition(job.id, JobState.QUEUED, reason="admitted", actor="controller")
        ids.append(job.id)
    return ids


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
        extra={"queue": "default"},
    )
    sub = store.submit(spec, idempotency_key="k-1", actor="cli")
    got = store.get(sub.job.id)
    assert sub.created and got == sub.job
    assert (got.state, got.version, got.job.gpus, got.job.gpu_type) == (
        JobState.SUBMITTED,
        1,
        8,
        "A100",
    )
    assert (got.job.user, got.job.team, got.job.estimate, got.image) == (
        "ann",
        "ml",
        3600.0,
        "pytorch:2",
    )
    assert got.job.submit_time == clock.now() and dict(got.job.extra) == {"queue": "default"}
    [event] = store.events(sub.job.id)
    assert (event.from_state, event.to_state, event.actor) == (None, JobState.SUBMITTED, "cli")
    assert store.user("ann").team == "ml"


def test_a_job_of_pods_keeps_its_pod_count(store):  # type: ignore[no-untyped-def]
    pods = store.submit(JobSpec(gpus=12, pods=4, user="ann")).job
    plain = store.submit(JobSpec(gpus=12, user="ann")).job
    assert store.get(pods.id).job.pods == 4 and store.get(pods.id).job.split_unit == 3
    assert store.get(plain.id).job.pods is None  # not made of pods: any split
    with pytest.raises(PermanentError, match="4 pods cannot share 10 GPUs"):
        JobSpec(gpus=10, pods=4)
    with pytest.raises(PermanentError):
        JobSpec(gpus=2, pods=0)


def test_duplicate_idempotency_key_returns_the_existing_job(store, clock):  # type: ignore[no-untyped-def]
    first = store.submit(JobSpec(gpus=2, user="ann"), idempotency_key="same")
    clock.advance(60)
    again = store.submit(JobSpec(gpus=4, user="bob"), idempotency_key="same")
    assert not again.created
    assert again.job.id == first.job.id and again.job.job.gpus == 2
    assert store.count(JobState.SUBMITTED) == 1
    assert len(store.events(first.job.id)) == 1
    assert store.find_by_key("same").id == first.job.id


def test_batch_submission_dedupes_keys_within_and_across_batches(store):  # type: ignore[no-untyped-def]
    old = store.submit(JobSpec(gpus=1), idempotency_key="a").job
    subs = store.submit_many(
        [
            (JobSpec(gpus=2), "a"),
            (JobSpec(gpus=3), "b"),
            (JobSpec(gpus=4), "b"),
            JobSpec(gpus=5),
        ]
    )
    assert [s.created for s in subs] == [False, True, False, True]
    assert subs[0].job.id == old.id and subs[1].job.id == subs[2].job.id
    assert store.count(JobState.SUBMITTED) == 3


def test_a_taken_job_id_is_refused_and_nothing_of_the_batch_is_kept(store):  # type: ignore[no-untyped-def]
    store.submit(JobSpec(gpus=1, id="job-1"))
    with pytest.raises(DuplicateJob, match="job-1"):
        store.submit_many([JobSpec(gpus=1, id="job-2"), JobSpec(gpus=1, id="job-1")])
    with pytest.raises(JobNotFound):
        store.get("job-2")


def test_queue_pages_in_fifo_order_with_ties_broken_by_id(store, clock):  # type: ignore[no-untyped-def]
    ids = queued(store, 7, clock=clock)
    clock.advance(1)
    tied = [store.submit(JobSpec(gpus=1, id=i)).job.id for i in ("z-tie", "a-tie")]
    for job_id in tied:
        store.transition(job_id, JobState.QUEUED, reason="admitted", actor="controller")
    seen, cursor, pages = [], None, 0
    while True:
        page = store.queue(limit=3, cursor=cursor)
        seen += [j.id for j in page.jobs]
        pages += 1
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
    assert seen == [*ids, "a-tie", "z-tie"] and pages == 3
    assert store.queue(limit=100, states=[JobState.SUBMITTED]).jobs == []


def test_bad_cursor_and_limit_are_clear_errors(store):  # type: ignore[no-untyped-def]
    with pytest.raises(ConfigError, match="cursor"):
        store.queue(cursor="not-a-cursor")
    with pytest.raises(ConfigError, match="limit"):
        store.queue(limit=0)


def test_lifecycle_on_prem_sets_times_runtime_and_history(store, clock):  # type: ignore[no-untyped-def]
    [job_id] = queued(store, 1)
    clock.advance(30)
    running = store.transition(job_id, JobState.RUNNING_ONPREM, reason="fits", actor="c")
    clock.advance(100)
    done = store.transition(job_id, JobState.SUCCEEDED, reason="exit 0", actor="c")
    assert running.started_at == clock.now() - 100 and running.ran_on == "onprem"
    assert done.version == 4 and done.job.runtime == 100 and done.ended_at == clock.now()
    [hist] = store.history()
    assert hist.job.id == job_id and hist.job.runtime == 100 and hist.ran_on == "onprem"
    assert [e.to_state for e in store.events(job_id)] == [
        JobState.SUBMITTED,
        JobState.QUEUED,
        JobState.RUNNING_ONPREM,
        JobState.SUCCEEDED,
    ]


def test_star_wait_pull_back_requeues_at_the_back(store, clock):  # type: ignore[no-untyped-def]
    first, second = queued(store, 2, clock=clock)
    store.transition(first, JobState.BURSTING, reason="budget spent", actor="c")
    store.transition(first, JobState.RUNNING_CLOUD, reason="launched", actor="c")
    clock.advance(900)
    back = store.transition(
        first, JobState.QUEUED, reason="pull back", actor="c", wait_budget=120.0
    )
    assert back.queued_at == clock.now() and back.started_at is None
    assert back.wait_budget == 120.0
    assert [j.id for j in store.queue().jobs] == [second, first]


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
    job_id = store.submit(JobSpec(gpus=1)).job.id
    for state in path:
        store.transition(job_id, state, reason="step", actor="c")
    before = store.get(job_id)
    with pytest.raises(IllegalTransition):
        store.transition(job_id, illegal, reason="wrong", actor="c")
    assert store.get(job_id) == before
    assert len(store.events(job_id)) == 1 + len(path)


def test_a_stale_version_cannot_move_the_job(store):  # type: ignore[no-untyped-def]
    [job_id] = queued(store, 1)
    seen = store.get(job_id)
    store.transition(
        job_id, JobState.RUNNING_ONPREM, reason="a", actor="writer-a", expected_version=seen.version
    )
    with pytest.raises(StaleVersion):
        store.transition(
            job_id, JobState.CANCELLED, reason="b", actor="writer-b", expected_version=seen.version
        )
    assert store.get(job_id).state is JobState.RUNNING_ONPREM


def test_unknown_job_is_a_clear_error(store):  # type: ignore[no-untyped-def]
    with pytest.raises(JobNotFound, match="nope"):
        store.transition("nope", JobState.QUEUED, reason="x", actor="c")
    with pytest.raises(JobNotFound):
        store.record_costs([CostEntry("nope", 0, 1, Decimal(1), "aws")])


def test_fencing_token_of_an_old_leader_is_refused(store, engine):  # type: ignore[no-untyped-def]
    from starburst.adapters.db.leader import leader_lock

    [job_id] = queued(store, 1)
    lock = leader_lock(engine, "controller")
    old = lock.acquire(timeout=5)
    lock.release()
    successor = leader_lock(engine, "controller")
    new = successor.acquire(timeout=5)
    successor.release()  # the token stays current until someone else acquires
    assert new > old
    with pytest.raises(StaleLeader):
        store.transition(job_id, JobState.BURSTING, reason="late", actor="old", fencing_token=old)
    moved = store.transition(job_id, JobState.BURSTING, reason="ok", actor="new", fencing_token=new)
    assert moved.state is JobState.BURSTING
    assert store.events(job_id)[-1].fencing_token == new


def test_claim_takes_the_head_of_the_queue_once(store, clock):  # type: ignore[no-untyped-def]
    ids = queued(store, 5, clock=clock)
    first = store.claim(JobState.BURSTING, limit=2, reason="cap", actor="c")
    second = store.claim(JobState.BURSTING, limit=2, reason="cap", actor="c")
    assert [j.id for j in first] == ids[:2] and [j.id for j in second] == ids[2:4]
    assert all(j.state is JobState.BURSTING and j.version == 3 for j in first + second)
    assert [j.id for j in store.queue().jobs] == ids[4:]
    with pytest.raises(IllegalTransition):
        store.claim(
            JobState.SUCCEEDED, limit=1, reason="x", actor="c", from_state=JobState.SUBMITTED
        )


def test_placements_are_kept_per_attempt(store):  # type: ignore[no-untyped-def]
    [job_id] = queued(store, 1)
    assert store.placement(job_id) == ()
    one = (Part(0, "node-0", 8, 0.0, 0.0), Part(3, "node-3", 2, 4.0, 100.0))
    assert store.record_placement(job_id, one) == 1
    two = (Part(1, "node-1", 8, 0.0, 0.0),)
    assert store.record_placement(job_id, two) == 2
    assert store.placement(job_id) == two


def test_cloud_launch_round_trip_and_active_list(store, clock):  # type: ignore[no-untyped-def]
    [job_id] = queued(store, 1)
    launch = store.record_launch(
        CloudLaunch(
            job_id=job_id,
            name=f"sb-{job_id}",
            provider="aws",
            accelerators="A100:8",
            hourly_price=Decimal("32.7726"),
            region="us-east-1",
            launched_at=clock.now(),
        )
    )
    assert launch.id is not None and launch.hourly_price == Decimal("32.7726")
    assert store.launches(active=True) == [launch]
    ended = store.update_launch(
        launch.id, status="succeeded", cloud_job_id="7", ended_at=clock.now() + 60
    )
    assert (ended.status, ended.cloud_job_id, ended.request_id) == ("succeeded", "7", None)
    assert store.launches(active=True) == [] and store.launches(job_id) == [ended]


def test_cost_report_groups_in_sql_and_never_double_counts(store, clock):  # type: ignore[no-untyped-def]
    t0 = 1_767_225_600.0  # 2026-01-01T00:00Z
    a = queued(store, 1, team="ml", user="ann")[0]
    b = queued(store, 1, team="cv", user="bob")[0]
    entries = [
        CostEntry(a, t0, t0 + 3600, Decimal("10.25"), "aws", gpu_hours=8),
        CostEntry(a, t0 + DAY, t0 + DAY + 3600, Decimal("5"), "gcp", gpu_hours=4),
        CostEntry(b, t0 + 31 * DAY, t0 + 31 * DAY + 60, Decimal("0.000001"), "aws"),
        CostEntry(b, t0 - 1, t0 + 10, Decimal("99"), "aws"),  # before the range
    ]
    store.record_costs(entries)
    store.record_costs(entries[:2])  # a retried meter: ignored
    by_team = store.cost_report(t0, t0 + 60 * DAY, by=("team", "month"))
    assert [(t.key["team"], t.key["month"], t.amount, t.entries) for t in by_team] == [
        ("cv", "2026-02", Decimal("0.000001"), 1),
        ("ml", "2026-01", Decimal("15.25"), 2),
    ]
    by_day = store.cost_report(t0, t0 + 60 * DAY, by=("cloud", "day"), team="ml")
    assert [(t.key["cloud"], t.key["day"], t.gpu_hours) for t in by_day] == [
        ("aws", "2026-01-01", 8.0),
        ("gcp", "2026-01-02", 4.0),
    ]
    [by_user] = store.cost_report(t0, t0 + 60 * DAY, by=("user",), user="ann")
    assert by_user.amount == Decimal("15.25") and by_user.currency == "USD"
    with pytest.raises(ConfigError, match="group costs by 'colour'"):
        store.cost_report(t0, t0 + DAY, by=("colour",))


def test_predictions_set_the_estimate_and_models_have_one_active_version(store, clock):  # type: ignore[no-untyped-def]
    [job_id] = queued(store, 1)
    v1 = store.register_model("runtime", "1", trained_on=100, metrics={"mae": 0.4})
    v2 = store.register_model("runtime", "2", trained_on=200)
    store.record_predictions(
        [Prediction(job_id, 1800.0, 900.0, 3600.0, "model", clock.now(), v2.id, {"0.9": 3600.0})]
    )
    assert store.get(job_id).job.estimate == 1800.0
    [pred] = store.predictions(job_id)
    assert pred.model_version_id == v2.id and dict(pred.quantiles) == {"0.9": 3600.0}
    assert store.active_model("runtime").id == v2.id
    assert [m.active for m in store.model_versions("runtime")] == [False, True]
    assert v1.metrics == {"mae": 0.4}


def test_tokens_are_hashed_roles_kept_and_revocation_works(store, engine, clock):  # type: ignore[no-untyped-def]
    import sqlalchemy as sa

    store.save_user("fin", team="finance", email="f@example.org")
    issued = store.issue_token("fin", Role.FINANCE, label="reports", expires_at=clock.now() + 3600)
    with engine.connect() as conn:
        stored = conn.execute(sa.text("SELECT token_hash FROM api_tokens")).scalar_one()
    assert issued.secret not in stored and len(stored) == 64
    who = store.authenticate(issued.secret)
    assert (who.user, who.team, who.role) == ("fin", "finance", Role.FINANCE)
    assert store.authenticate(issued.secret + "x") is None
    assert store.authenticate(issued.secret, at=clock.now() + 3601) is None
    assert store.revoke_token(issued.id) and not store.revoke_token(issued.id)
    assert store.authenticate(issued.secret) is None
    with pytest.raises(ConfigError, match="no user"):
        store.issue_token("ghost", Role.ADMIN)


def test_team_budgets_upsert(store):  # type: ignore[no-untyped-def]
    assert store.team_budget("ml") is None
    store.set_team_budget("ml", Decimal("1000"))
    store.set_team_budget("ml", Decimal("2500.50"), currency="EUR")
    budget = store.team_budget("ml")
    assert (budget.monthly_limit, budget.currency) == (Decimal("2500.50"), "EUR")
    with pytest.raises(ConfigError):
        store.set_team_budget("ml", Decimal("-1"))


def test_history_keeps_the_most_recent_finished_jobs_in_end_order(store, clock):  # type: ignore[no-untyped-def]
    ids = queued(store, 4, clock=clock)
    for job_id, outcome in zip(
        ids,
        [JobState.SUCCEEDED, JobState.FAILED, JobState.SUCCEEDED, JobState.SUCCEEDED],
        strict=True,
    ):
        store.transition(job_id, JobState.RUNNING_ONPREM, reason="fits", actor="c")
        clock.advance(10)
        store.transition(job_id, outcome, reason="ended", actor="c")
    assert [h.job.id for h in store.history()] == [ids[0], ids[2], ids[3]]
    assert [h.job.id for h in store.history(limit=2)] == [ids[2], ids[3]]
    both = store.history(states=[JobState.SUCCEEDED, JobState.FAILED], since=clock.now() - 15)
    assert [h.job.id for h in both] == [ids[2], ids[3]]


def test_estimates_are_stored_without_a_state_change(store):  # type: ignore[no-untyped-def]
    [job_id] = queued(store, 1)
    store.set_estimates(job_id, predicted_runtime=600.0, wait_budget=90.0)
    got = store.get(job_id)
    assert (got.job.estimate, got.wait_budget, got.version) == (600.0, 90.0, 2)
    with pytest.raises(JobNotFound):
        store.set_estimates("ghost", wait_budget=1.0)


def test_a_batch_transition_moves_what_it_may_in_one_go(store, engine, clock):  # type: ignore[no-untyped-def]
    from starburst.adapters.db.leader import leader_lock

    ids = [store.submit(JobSpec(gpus=1, user="ann")).job.id for _ in range(4)]
    store.transition(ids[2], JobState.CANCELLED, reason="user", actor="ann")
    moves = [Move(i, f"queued {n}", wait_budget=60.0 * n) for n, i in enumerate(ids)]
    moves.append(Move("no-such-job", "ghost"))
    clock.advance(5)
    result = store.transition_many(moves, JobState.QUEUED, actor="controller")
    assert [m.job.id for m in result.moved] == [ids[0], ids[1], ids[3]]
    assert result.skipped == [ids[2], "no-such-job"]
    for n in (0, 1, 3):
        got = store.get(ids[n])
        assert (got.state, got.version, got.wait_budget) == (JobState.QUEUED, 2, 60.0 * n)
        assert got == next(m for m in result.moved if m.job.id == ids[n])
        last = store.events(ids[n])[-1]
        assert (last.from_state, last.to_state, last.reason) == (
            JobState.SUBMITTED,
            JobState.QUEUED,
            f"queued {n}",
        )
        assert last.at == clock.now()
    assert store.get(ids[2]).state is JobState.CANCELLED  # skipped, untouched
    again = store.transition_many(moves[:1], JobState.QUEUED, actor="controller")
    assert again.moved == [] and again.skipped == [ids[0]]  # queued -> queued is no move

    # a deposed leader's batch changes nothing at all
    lock = leader_lock(engine, "controller")
    old = lock.acquire(timeout=5)
    lock.release()
    successor = leader_lock(engine, "controller")
    successor.acquire(timeout=5)
    successor.release()
    fresh = store.submit(JobSpec(gpus=1, user="ann")).job.id
    with pytest.raises(StaleLeader):
        store.transition_many(
            [Move(fresh, "late")], JobState.QUEUED, actor="controller", fencing_token=old
        )
    assert store.get(fresh).state is JobState.SUBMITTED and len(store.events(fresh)) == 1


def test_states_of_many_jobs_in_one_read(store):  # type: ignore[no-untyped-def]
    ids = [store.submit(JobSpec(gpus=1, user="ann")).job.id for _ in range(3)]
    store.transition(ids[1], JobState.CANCELLED, reason="user", actor="ann")
    many = [*ids, "not-a-starburst-job"] + [f"other-{i}" for i in range(1500)]  # > one chunk
    assert store.states_of(many) == {
        ids[0]: JobState.SUBMITTED,
        ids[1]: JobState.CANCELLED,
        ids[2]: JobState.SUBMITTED,
    }
    assert store.states_of([]) == {}


def test_a_queue_page_of_one_owner_is_filtered_in_the_database(store, clock):  # type: ignore[no-untyped-def]
    mine = queued(store, 3, user="ann", team="ml", clock=clock)
    queued(store, 120, user="bob", team="nlp", clock=clock)  # many pages of other people's jobs
    mine += queued(store, 2, user="ann", team="ml", clock=clock)
    seen, cursor = [], None
    for _ in range(3):
        page = store.queue(limit=2, cursor=cursor, user="ann")
        seen += [j.id for j in page.jobs]
        cursor = page.next_cursor
        if cursor is None:
            break
    assert seen == mine and cursor is None
    assert [j.job.team for j in store.queue(limit=500, team="ml").jobs] == ["ml"] * 5
    assert store.queue(limit=10, user="ann", team="nlp").jobs == []


def test_a_token_in_steady_use_is_written_at_most_once_a_minute(store, clock, engine):  # type: ignore[no-untyped-def]
    import sqlalchemy as sa

    store.save_user("ann", team="ml")
    issued = store.issue_token("ann", Role.USER)

    def last_used() -> object:
        with engine.connect() as conn:
            return conn.execute(sa.text("SELECT last_used_at FROM api_tokens")).scalar_one()

    store.authenticate(issued.secret)
    first = last_used()
    assert first is not None
    clock.advance(59)
    assert store.authenticate(issued.secret) is not None and last_used() == first
    clock.advance(2)
    assert store.authenticate(issued.secret) is not None and last_used() != first
