"""The ``Ledger`` contract: launches, metered cost entries (idempotent per job, source and
start, money exact to the micro-unit), the reports read from them, and the on-prem run a
state change enters; the same tests for every store implementation."""

from __future__ import annotations

from decimal import Decimal

import pytest

from starburst.core.capacity import Part
from starburst.core.errors import ConfigError
from starburst.core.lifecycle import JobState
from starburst.core.ports import LedgerRead
from starburst.core.records import CloudLaunch, CostEntry, JobNotFound, JobSpec, StaleLeader

DAY = 86_400.0
T0 = 1_767_225_600.0  # 2026-01-01T00:00Z, a Thursday


def job(store, *, team="ml", user="ann", gpus=1, gpu_type=None, project=None):  # type: ignore[no-untyped-def]
    extra = {"project": project} if project else {}
    spec = JobSpec(gpus=gpus, user=user, team=team, gpu_type=gpu_type, extra=extra)
    job_id = store.submissions.submit(spec).job.id
    store.lifecycle.transition(job_id, JobState.QUEUED, reason="admitted", actor="controller")
    return job_id


def launch_of(job_id, at, **changes):  # type: ignore[no-untyped-def]
    values = {
        "job_id": job_id,
        "name": f"sb-{job_id}",
        "provider": "aws",
        "accelerators": "A100:8",
        "hourly_price": Decimal("32.7726"),
        "region": "us-east-1",
        "launched_at": at,
        **changes,
    }
    return CloudLaunch(**values)


def test_cloud_launch_round_trip_and_active_list(store, clock, elect):  # type: ignore[no-untyped-def]
    job_id = job(store)
    launch = store.ledger.record_launch(
        launch_of(job_id, clock.now(), spot=True, instance_type="p4d")
    )
    assert launch.id is not None and launch.hourly_price == Decimal("32.7726")
    assert (launch.spot, launch.instance_type, launch.status) == (True, "p4d", "pending")
    assert store.ledger.launches(active=True) == [launch]
    ended = store.ledger.update_launch(
        launch.id, status="succeeded", cloud_job_id="7", ended_at=clock.now() + 60
    )
    assert (ended.status, ended.cloud_job_id, ended.request_id) == ("succeeded", "7", None)
    assert ended.ended_at == clock.now() + 60 and ended.launched_at == clock.now()
    assert store.ledger.launches(active=True) == [] and store.ledger.launches(job_id) == [ended]
    same = store.ledger.update_launch(launch.id, request_id="r-1")  # None keeps every other field
    assert (same.status, same.cloud_job_id, same.request_id) == ("succeeded", "7", "r-1")
    second = store.ledger.record_launch(launch_of(job_id, clock.now() + 90), fencing_token=elect())
    assert second.id > launch.id and store.ledger.launches(job_id) == [same, second]
    assert store.ledger.launches("other-job") == []


def test_launches_refuse_unknown_jobs_ids_and_stale_leaders(store, clock, elect):  # type: ignore[no-untyped-def]
    with pytest.raises(JobNotFound):
        store.ledger.record_launch(launch_of("ghost", clock.now()))
    with pytest.raises(ConfigError, match="no cloud launch 999"):
        store.ledger.update_launch(999, status="failed")
    old = elect()
    elect()
    with pytest.raises(StaleLeader):
        store.ledger.record_launch(launch_of(job(store), clock.now()), fencing_token=old)
    assert store.ledger.launches() == []


def test_money_is_kept_to_the_micro_unit(store, clock):  # type: ignore[no-untyped-def]
    job_id = job(store)
    launch = store.ledger.record_launch(
        launch_of(job_id, clock.now(), hourly_price=Decimal("1.0000004"))
    )
    assert launch.hourly_price == Decimal("1.000000")
    store.ledger.record_costs(
        [CostEntry(job_id, T0 + i, T0 + i + 1, Decimal("0.1000005"), "aws") for i in range(3)]
    )
    [total] = store.ledger.cost_report(T0, T0 + DAY)
    assert total.amount == Decimal("0.300000")  # each rounded half-even to 0.100000


def test_cost_report_groups_and_never_double_counts(store):  # type: ignore[no-untyped-def]
    a = job(store, team="ml", user="ann")
    b = job(store, team="cv", user="bob")
    entries = [
        CostEntry(a, T0, T0 + 3600, Decimal("10.25"), "aws", gpu_hours=8),
        CostEntry(a, T0 + DAY, T0 + DAY + 3600, Decimal("5"), "gcp", gpu_hours=4),
        CostEntry(b, T0 + 31 * DAY, T0 + 31 * DAY + 60, Decimal("0.000001"), "aws"),
        CostEntry(b, T0 - 1, T0 + 10, Decimal("99"), "aws"),  # before the range
    ]
    store.ledger.record_costs([*entries, entries[0]])  # an interval twice in a batch: once
    store.ledger.record_costs(entries[:2])  # a retried meter: ignored
    by_team = store.ledger.cost_report(T0, T0 + 60 * DAY, by=("team", "month"))
    assert [(t.key["team"], t.key["month"], t.amount, t.entries) for t in by_team] == [
        ("cv", "2026-02", Decimal("0.000001"), 1),
        ("ml", "2026-01", Decimal("15.25"), 2),
    ]
    by_day = store.ledger.cost_report(T0, T0 + 60 * DAY, by=("cloud", "day"), team="ml")
    assert [(t.key["cloud"], t.key["day"], t.gpu_hours) for t in by_day] == [
        ("aws", "2026-01-01", 8.0),
        ("gcp", "2026-01-02", 4.0),
    ]
    [by_user] = store.ledger.cost_report(T0, T0 + 60 * DAY, by=("user",), user="ann")
    assert by_user.amount == Decimal("15.25") and by_user.currency == "USD"
    with pytest.raises(ConfigError, match="group costs by 'colour'"):
        store.ledger.cost_report(T0, T0 + DAY, by=("colour",))


def test_cost_report_keys_filters_and_currencies(store):  # type: ignore[no-untyped-def]
    a = job(store, team="ml", gpu_type="A100", project="llm")
    b = job(store, team=None, user="bob")
    sunday = T0 + 3 * DAY  # 2026-01-04: its week began on Monday 2025-12-29
    store.ledger.record_costs(
        [
            CostEntry(a, T0, T0 + 60, Decimal("1"), "aws", region="us-east-1", gpu_hours=1),
            CostEntry(a, sunday, sunday + 60, Decimal("2"), "aws", region="us-east-1"),
            CostEntry(a, T0 + 7 * DAY, T0 + 7 * DAY + 60, Decimal("4"), "gcp", gpu_type="H100"),
            CostEntry(b, T0, T0 + 60, Decimal("8"), "aws", currency="EUR"),
            CostEntry(b, T0 + 1, T0 + 61, Decimal("16"), "aws"),
        ]
    )
    weeks = store.ledger.cost_report(T0, T0 + 30 * DAY, by=("week", "location"), team="ml")
    assert [(t.key["week"], t.key["location"], t.amount) for t in weeks] == [
        ("2025-12-29", "aws:us-east-1", Decimal("3")),
        ("2026-01-05", "gcp", Decimal("4")),
    ]
    gpus = store.ledger.cost_report(T0, T0 + 30 * DAY, by=("gpu_type", "label"), project="llm")
    assert [(t.key["gpu_type"], t.key["label"], t.amount) for t in gpus] == [
        ("A100", "llm", Decimal("3")),
        ("H100", "llm", Decimal("4")),
    ]
    mixed = store.ledger.cost_report(T0, T0 + 30 * DAY, by=("team", "region"), job=b)
    assert [(t.key["team"], t.key["region"], t.currency, t.amount) for t in mixed] == [
        (None, None, "EUR", Decimal("8")),
        (None, None, "USD", Decimal("16")),
    ]
    assert store.ledger.cost_report(T0, T0 + 30 * DAY, cloud="azure") == []
    sources = store.ledger.cost_report(
        T0, T0 + 30 * DAY, by=("source", "", "SOURCE"), source="cloud"
    )
    assert [(t.key, t.currency, t.entries) for t in sources] == [
        ({"source": "cloud"}, "EUR", 1),
        ({"source": "cloud"}, "USD", 4),
    ]
    overall = store.ledger.cost_report(T0, T0 + 30 * DAY, by=())
    assert [(t.key, t.currency, t.amount) for t in overall] == [
        ({}, "EUR", Decimal("8")),
        ({}, "USD", Decimal("23")),
    ]


def test_top_rows_per_currency_are_ranked_by_the_store(store):  # type: ignore[no-untyped-def]
    jobs = [job(store) for _ in range(4)]
    amounts = [("3", "USD"), ("9", "USD"), ("5", "EUR"), ("1", "USD")]
    store.ledger.record_costs(
        [
            CostEntry(j, T0 + i, T0 + i + 60, Decimal(a), "aws", currency=c)
            for i, (j, (a, c)) in enumerate(zip(jobs, amounts, strict=True))
        ]
        + [CostEntry(jobs[3], T0 + 9, T0 + 99, Decimal("4"), "aws", currency="EUR")]
    )
    top = store.ledger.cost_report(T0, T0 + DAY, by=("job",), top=2)
    assert [(t.key["job"], t.currency, t.amount) for t in top] == [
        (jobs[2], "EUR", Decimal("5")),  # each currency ranked on its own, highest first
        (jobs[3], "EUR", Decimal("4")),
        (jobs[1], "USD", Decimal("9")),
        (jobs[0], "USD", Decimal("3")),
    ]
    assert len(store.ledger.cost_report(T0, T0 + DAY, by=("job",), top=10)) == 5


def test_an_on_prem_run_enters_the_ledger_when_it_ends(store, clock):  # type: ignore[no-untyped-def]
    a = job(store, gpus=4, gpu_type="A100", project="llm")
    b = job(store, gpus=2, gpu_type="t4")
    zero = job(store, gpus=0)
    start = clock.now()
    for job_id in (a, b, zero):
        store.lifecycle.transition(job_id, JobState.RUNNING_ONPREM, reason="fits", actor="c")
    clock.advance(1800)
    store.lifecycle.transition(a, JobState.SUCCEEDED, reason="exit 0", actor="c")
    store.lifecycle.transition(b, JobState.CANCELLED, reason="user", actor="c")
    store.lifecycle.transition(
        zero, JobState.SUCCEEDED, reason="exit 0", actor="c"
    )  # no GPUs: no entry
    rates = {"a100": 2.5, "*": 1.0}
    totals = store.ledger.cost_report(
        start, start + 1, by=("job", "source", "location"), rates=rates
    )
    by_job = {t.key["job"]: t for t in totals}
    assert set(by_job) == {a, b}
    assert (by_job[a].key["source"], by_job[a].key["location"]) == ("onprem", "onprem")
    assert (by_job[a].onprem_gpu_hours, by_job[a].onprem_amount) == (2.0, Decimal("5.000000"))
    assert (by_job[b].onprem_gpu_hours, by_job[b].onprem_amount) == (1.0, Decimal("1.000000"))
    assert by_job[a].amount == 0 and by_job[a].gpu_hours == 0.0  # GPU-hours, not money
    assert store.ledger.job_costs([a, b]) == {}  # on-prem entries carry no money
    [project] = store.ledger.cost_report(start, start + 1, by=("project",), project="llm")
    assert project.onprem_gpu_hours == 2.0


def test_an_end_before_the_recorded_start_is_an_empty_run(store, clock):  # type: ignore[no-untyped-def]
    a = job(store, gpus=8)
    store.lifecycle.transition(a, JobState.RUNNING_ONPREM, reason="fits", actor="c")
    store.lifecycle.transition(a, JobState.FAILED, reason="exit 1", actor="c", at=clock.now() - 30)
    [total] = store.ledger.cost_report(clock.now() - DAY, clock.now() + DAY, by=("source",))
    assert (total.key["source"], total.onprem_gpu_hours, total.entries) == ("onprem", 0.0, 1)


JAN31_23H = T0 + 30 * DAY + 23 * 3600  # 2026-01-31T23:00Z: a month ends an hour later
HALF_HOUR = 1800.0


def _placed(store, job_id, *parts, at):  # type: ignore[no-untyped-def]
    """Start ``job_id`` on-prem at ``at`` on nodes of the given (GPUs, GPU type) parts."""
    placement = tuple(Part(i, f"node-{i}", gpus, 0.0, 0.0) for i, (gpus, _) in enumerate(parts))
    kinds = [kind for _, kind in parts]
    store.lifecycle.record_placement(job_id, placement, at=at, gpu_types=kinds)
    store.lifecycle.transition(job_id, JobState.RUNNING_ONPREM, reason="fits", actor="c", at=at)


def _usage(store, by, **filters):  # type: ignore[no-untyped-def]
    rates = {"A100": 2.0, "V100": 1.0, "*": 0.5}
    totals = store.ledger.cost_report(T0, T0 + 60 * DAY, by=by, rates=rates, **filters)
    return [(*t.key.values(), t.onprem_gpu_hours, t.onprem_amount, t.entries) for t in totals]


def test_a_running_on_prem_job_is_metered_and_split_at_the_month_end(store, clock):  # type: ignore[no-untyped-def]
    a = job(store, gpus=4)  # untyped: priced by the A100 nodes it runs on, not at '*'
    _placed(store, a, (4, "A100"), at=JAN31_23H)
    assert store.ledger.meter_onprem(JAN31_23H + 45 * 60, chunk=HALF_HOUR) == 1  # 23:00-23:30
    assert store.ledger.meter_onprem(JAN31_23H + 45 * 60, chunk=HALF_HOUR) == 0  # nothing new
    assert _usage(store, ("month", "gpu_type")) == [("2026-01", "A100", 2.0, Decimal("4"), 1)]
    # 00:20 on Feb 1: 23:30-00:00 is complete; 00:00-00:30 not yet
    assert store.ledger.meter_onprem(JAN31_23H + 80 * 60, chunk=HALF_HOUR) == 1
    store.lifecycle.transition(
        a, JobState.SUCCEEDED, reason="exit 0", actor="c", at=JAN31_23H + 110 * 60
    )
    # by hand: January 23:00-24:00 = 4 GPU-h at 2 $/GPU-h; February 00:00-00:50 = 4 × 50/60
    assert _usage(store, ("month", "gpu_type")) == [
        ("2026-01", "A100", 4.0, Decimal("8.000000"), 2),
        ("2026-02", "A100", pytest.approx(10 / 3), Decimal("6.666667"), 1),
    ]
    assert store.ledger.meter_onprem(JAN31_23H + DAY, chunk=HALF_HOUR) == 0  # it ended: no more
    [day] = _usage(store, ("day",), job=a)[1:]
    assert day[0] == "2026-02-01" and day[1] == pytest.approx(10 / 3)


def test_on_prem_use_is_priced_by_the_gpu_types_of_its_nodes(store, clock):  # type: ignore[no-untyped-def]
    wide = job(store, gpus=12, gpu_type=None)  # 8 on an A100 node, 4 on a V100 node
    asked = job(store, gpus=2, gpu_type="H100")  # placed before types were recorded
    none = job(store, gpus=1, gpu_type="T4")  # no placement recorded at all
    _placed(store, wide, (8, "A100"), (4, "V100"), at=T0)
    _placed(store, asked, (2, None), at=T0)
    store.lifecycle.transition(none, JobState.RUNNING_ONPREM, reason="fits", actor="c", at=T0)
    assert store.ledger.meter_onprem(T0 + 3600, chunk=3600.0) == 4  # one hour: 2 + 1 + 1 entries
    for job_id in (wide, asked, none):
        store.lifecycle.transition(
            job_id, JobState.SUCCEEDED, reason="exit 0", actor="c", at=T0 + 5400
        )
    assert _usage(store, ("gpu_type",)) == [
        ("A100", 12.0, Decimal("24.000000"), 2),  # 8 GPUs × 1.5 h at 2
        ("H100", 3.0, Decimal("1.500000"), 2),  # the requested type, at '*'
        ("T4", 1.5, Decimal("0.750000"), 2),
        ("V100", 6.0, Decimal("6.000000"), 2),  # 4 GPUs × 1.5 h at 1
    ]


def test_on_prem_metering_carries_on_from_the_last_entry(store, clock):  # type: ignore[no-untyped-def]
    """A controller restarted with another chunk neither overlaps nor leaves a gap."""
    a = job(store, gpus=2)
    _placed(store, a, (2, "V100"), at=T0)
    assert store.ledger.meter_onprem(T0 + 650, chunk=300.0) == 2  # 0-300, 300-600 s
    assert store.ledger.meter_onprem(T0 + 2000, chunk=1000.0) == 1  # 600-1600 s
    store.lifecycle.transition(a, JobState.SUCCEEDED, reason="exit 0", actor="c", at=T0 + 1900)
    assert _usage(store, ("gpu_type",)) == [
        ("V100", pytest.approx(2 * 1900 / 3600), Decimal("1.055556"), 4),  # + 1600-1900 s
    ]


def test_bad_entries_are_refused_whole(store):  # type: ignore[no-untyped-def]
    a = job(store)
    good = CostEntry(a, T0, T0 + 60, Decimal("1"), "aws")
    with pytest.raises(ConfigError, match="ends before it starts"):
        store.ledger.record_costs([good, CostEntry(a, T0 + 60, T0, Decimal("1"), "aws")])
    with pytest.raises(JobNotFound, match="ghost"):
        store.ledger.record_costs([good, CostEntry("ghost", T0, T0 + 60, Decimal("1"), "aws")])
    with pytest.raises(ConfigError, match="no cloud launch 7"):
        store.ledger.record_costs(
            [good, CostEntry(a, T0, T0 + 1, Decimal("1"), "aws", launch_id=7)]
        )
    assert store.ledger.cost_report(T0, T0 + DAY) == []


def test_job_costs_per_launch(store, clock):  # type: ignore[no-untyped-def]
    a, b, idle = job(store), job(store), job(store)
    for job_id in (a, a, b):
        store.ledger.record_launch(launch_of(job_id, clock.now()))  # launches 1, 2 and 3
    store.ledger.record_costs(
        [
            CostEntry(a, T0, T0 + 60, Decimal("1.5"), "aws", launch_id=1),
            CostEntry(a, T0 + 60, T0 + 120, Decimal("2.25"), "aws", launch_id=1),
            CostEntry(a, T0 + 120, T0 + 180, Decimal("4"), "aws", launch_id=2),
            CostEntry(a, T0 + 180, T0 + 240, Decimal("0.5"), "aws"),
            CostEntry(a, T0 + 240, T0 + 300, Decimal("7"), "aws", currency="EUR"),
            CostEntry(b, T0, T0 + 60, Decimal("3"), "gcp", launch_id=3),
        ]
    )
    assert store.ledger.job_costs([a, idle, "ghost"]) == {
        a: {
            (1, "USD"): Decimal("3.75"),
            (2, "USD"): Decimal("4"),
            (None, "USD"): Decimal("0.5"),
            (None, "EUR"): Decimal("7"),  # never added to the dollars
        }
    }
    assert store.ledger.job_costs([b]) == {b: {(3, "USD"): Decimal("3")}}


def test_ledger_totals_follow_the_entries_recorded_since(store):  # type: ignore[no-untyped-def]
    a = job(store, team="ml")
    b = job(store, team=None)
    assert store.ledger.ledger_totals_after(0) == LedgerRead(0, [])
    store.ledger.record_costs(
        [
            CostEntry(a, T0, T0 + 60, Decimal("1.5"), "aws", region="eu", gpu_hours=2),
            CostEntry(a, T0 + 60, T0 + 120, Decimal("2"), "aws", region="eu", gpu_hours=1),
            CostEntry(b, T0, T0 + 60, Decimal("3"), "gcp"),
        ]
    )
    first = store.ledger.ledger_totals_after(0)
    assert sorted(first.rows, key=str) == sorted(
        [
            ("ml", "aws:eu", "cloud", "USD", 3_500_000, 3.0),
            (None, "gcp", "cloud", "USD", 3_000_000, 0.0),
        ],
        key=str,
    )
    assert first.missing == ()  # every id up to the top was there
    assert store.ledger.ledger_totals_after(first.top) == LedgerRead(first.top, [])
    store.ledger.record_costs([CostEntry(a, T0 + 120, T0 + 180, Decimal("1"), "aws", region="eu")])
    second = store.ledger.ledger_totals_after(first.top)
    assert second.top > first.top
    assert second.rows == [("ml", "aws:eu", "cloud", "USD", 1_000_000, 0.0)]


def test_ended_jobs_in_a_window_oldest_end_first(store, clock):  # type: ignore[no-untyped-def]
    ids = [job(store) for _ in range(4)]
    start = clock.now()
    store.lifecycle.transition(ids[0], JobState.RUNNING_ONPREM, reason="fits", actor="c")
    clock.advance(10)
    store.lifecycle.transition(ids[1], JobState.CANCELLED, reason="user", actor="c")
    clock.advance(10)
    store.lifecycle.transition(ids[0], JobState.SUCCEEDED, reason="exit 0", actor="c")
    clock.advance(10)
    store.lifecycle.transition(ids[2], JobState.FAILED, reason="bad", actor="c")
    assert [j.id for j in store.ledger.ended_jobs(start, clock.now() + 1)] == [
        ids[1],
        ids[0],
        ids[2],
    ]
    assert [j.id for j in store.ledger.ended_jobs(start + 10, start + 20)] == [
        ids[1]
    ]  # [since, until)
    assert store.ledger.ended_jobs(start + 31, start + 99) == []
