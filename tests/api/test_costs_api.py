"""``/v1/costs``: reports read from the ledger (every grouping, CSV, on-prem showback),
scopes, and savings, on SQLite and on a real PostgreSQL, against hand-computed figures."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from functools import partial

import pytest

from starburst.controller.loop.scheduling import SchedulingLoop
from starburst.core.billing import REPORT_KEYS, per_currency
from starburst.core.capacity import uniform_nodes
from starburst.core.cycle import SchedulerConfig
from starburst.core.lifecycle import JobState
from starburst.core.policy import PolicyKind, WaitPolicy
from starburst.core.records import CostEntry, JobSpec
from starburst.sim.cloud import SimCloud
from starburst.sim.cluster import SimCluster
from tests.support.cost_reference import report_from_entries
from tests.support.databases import BOTH

WINDOW = {"since": "2026-10-01", "until": "2026-12-01"}
RATES = {"onprem_rates": {"A100": 1.5, "*": 0.5}}


def _epoch(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp()


def _spend(store):  # type: ignore[no-untyped-def]
    """Four cloud entries of two jobs (hand-checked figures in the tests below)."""
    a = store.submissions.submit(
        JobSpec(gpus=1, user="alice", team="ml", gpu_type="A100", extra={"project": "llm"})
    ).job.id
    b = store.submissions.submit(JobSpec(gpus=2, user="bob", team="vision")).job.id
    hour = 3600
    store.ledger.record_costs(
        [
            CostEntry(
                a,
                _epoch("2026-10-03T10:00"),
                _epoch("2026-10-03T11:00"),
                Decimal("4.10"),
                "aws",
                gpu_hours=1.0,
                region="us-east-1",
            ),
            CostEntry(
                a,
                _epoch("2026-11-02T10:00"),
                _epoch("2026-11-02T12:00"),
                Decimal("8.20"),
                "aws",
                gpu_hours=2.0,
                region="us-east-1",
            ),
            CostEntry(
                b,
                _epoch("2026-11-05T00:00"),
                _epoch("2026-11-05T00:00") + hour,
                Decimal("0.333333"),
                "gcp",
                gpu_hours=2.0,
                gpu_type="T4",
            ),
            CostEntry(
                b,
                _epoch("2026-11-06T00:00"),
                _epoch("2026-11-06T00:00") + hour,
                Decimal("7"),
                "gcp",
                gpu_hours=2.0,
                currency="EUR",
                gpu_type="T4",
            ),
        ]
    )
    return a, b


def _rows(report, *fields):  # type: ignore[no-untyped-def]
    return [(r["key"], *(r[f] for f in fields)) for r in report["rows"]]


@BOTH
def test_finance_reads_costs_grouped_by_team_and_month(api):  # type: ignore[no-untyped-def]
    _spend(api.store)
    fin = api.client("fin")
    report = fin.get("/v1/costs", params={**WINDOW, "by": "team,month"}).json()
    assert _rows(report, "amount", "currency", "gpu_hours", "entries") == [
        ({"team": "ml", "month": "2026-10"}, "4.10", "USD", 1.0, 1),
        ({"team": "ml", "month": "2026-11"}, "8.20", "USD", 2.0, 1),
        ({"team": "vision", "month": "2026-11"}, "7.00", "EUR", 2.0, 1),
        ({"team": "vision", "month": "2026-11"}, "0.33", "USD", 2.0, 1),
    ]
    assert [(t["currency"], t["amount"]) for t in report["totals"]] == [
        ("EUR", "7.00"),
        ("USD", "12.63"),
    ]
    assert report["scope"] == "all"
    by_cloud = fin.get("/v1/costs", params={**WINDOW, "by": "cloud", "cloud": "aws"}).json()
    assert _rows(by_cloud, "amount") == [({"cloud": "aws"}, "12.30")]


@BOTH
def test_every_grouping_key_and_a_zoned_window(api):  # type: ignore[no-untyped-def]
    a, b = _spend(api.store)
    fin = api.client("fin")

    def by(keys: str, **more: str) -> list[tuple[object, ...]]:
        answer = fin.get("/v1/costs", params={**WINDOW, "by": keys, **more})
        assert answer.status_code == 200, answer.text
        return _rows(answer.json(), "amount", "currency")

    assert by("project") == [
        ({"project": None}, "7.00", "EUR"),
        ({"project": None}, "0.33", "USD"),
        ({"project": "llm"}, "12.30", "USD"),
    ]
    assert by("label", project="llm") == [({"label": "llm"}, "12.30", "USD")]
    assert by("gpu_type,user") == [
        ({"gpu_type": "A100", "user": "alice"}, "12.30", "USD"),
        ({"gpu_type": "T4", "user": "bob"}, "7.00", "EUR"),
        ({"gpu_type": "T4", "user": "bob"}, "0.33", "USD"),
    ]
    assert [k for k, *_ in by("location")] == [
        {"location": "aws:us-east-1"},
        {"location": "gcp"},
        {"location": "gcp"},
    ]
    assert by("region,cloud")[0] == ({"region": None, "cloud": "gcp"}, "7.00", "EUR")
    assert by("job", team="ml") == [({"job": a}, "12.30", "USD")]
    assert by("job,job,team", team="vision")[1] == (
        {"job": b, "team": "vision"},
        "0.33",
        "USD",
    )  # a key named twice counts once
    # 2026-11-02 is a Monday; 11-05 (Thu) and 11-06 (Fri) are in the same ISO week
    assert by("week", cloud="gcp") == [
        ({"week": "2026-11-02"}, "7.00", "EUR"),
        ({"week": "2026-11-02"}, "0.33", "USD"),
    ]
    assert by("day", user="alice") == [
        ({"day": "2026-10-03"}, "4.10", "USD"),
        ({"day": "2026-11-02"}, "8.20", "USD"),
    ]
    # 2026-11-05T00:00Z is 01:00 at +01:00: a window starting there leaves it out
    zoned = by("team", since="2026-11-05T01:00:01+01:00", until="2026-11-07T00:00:00+01:00")
    assert zoned == [({"team": "vision"}, "7.00", "EUR")]


@BOTH
def test_csv_by_format_or_accept_header(api):  # type: ignore[no-untyped-def]
    _spend(api.store)
    fin = api.client("fin")
    params = {**WINDOW, "by": "team,month"}
    by_param = fin.get("/v1/costs", params={**params, "format": "csv"})
    by_header = fin.get("/v1/costs", params=params, headers={"Accept": "text/csv"})
    for answer in (by_param, by_header):
        assert answer.status_code == 200
        assert answer.headers["content-type"].startswith("text/csv")
        assert "attachment" in answer.headers["content-disposition"]
    assert (
        by_param.text
        == by_header.text
        == (
            "team,month,currency,amount,gpu_hours,onprem_gpu_hours,onprem_amount,entries\n"
            "ml,2026-10,USD,4.10,1.0,0.0,0.00,1\n"
            "ml,2026-11,USD,8.20,2.0,0.0,0.00,1\n"
            "vision,2026-11,EUR,7.00,2.0,0.0,0.00,1\n"
            "vision,2026-11,USD,0.33,2.0,0.0,0.00,1\n"
        )
    )
    bad = fin.get("/v1/costs", params={**params, "format": "xlsx"})
    assert bad.status_code == 422 and "not json or csv" in bad.json()["detail"]


def _run_onprem(store, clock, spec, seconds):  # type: ignore[no-untyped-def]
    job_id = store.submissions.submit(spec).job.id
    store.lifecycle.transition(job_id, JobState.QUEUED, reason="t", actor="c")
    store.lifecycle.transition(job_id, JobState.RUNNING_ONPREM, reason="t", actor="c")
    clock.advance(seconds)
    store.lifecycle.transition(job_id, JobState.SUCCEEDED, reason="done", actor="c")
    return job_id


@BOTH
@pytest.mark.parametrize("api_options", [{"settings": RATES}], indirect=True)
def test_onprem_showback_beside_cloud_spend(api):  # type: ignore[no-untyped-def]
    store, clock = api.store, api.clock
    clock.set(_epoch("2026-11-10T00:00"))
    _run_onprem(
        store,
        clock,
        JobSpec(gpus=4, user="alice", team="ml", gpu_type="A100", extra={"project": "llm"}),
        1800,
    )  # 2 GPU-h at 1.5
    _run_onprem(store, clock, JobSpec(gpus=2, user="bob", team="vision"), 5400)  # 3 at 0.5
    store.ledger.record_costs(
        [
            CostEntry(
                _run_onprem(store, clock, JobSpec(gpus=0, user="bob"), 60),
                clock.now() - 60,
                clock.now(),
                Decimal("0.01"),
                "aws",
            )
        ]
    )
    report = api.client("fin").get("/v1/costs", params={**WINDOW, "by": "team"}).json()
    assert _rows(report, "amount", "gpu_hours", "onprem_gpu_hours", "onprem_amount") == [
        ({"team": None}, "0.01", 0.0, 0.0, "0.00"),
        ({"team": "ml"}, "0.00", 0.0, 2.0, "3.00"),
        ({"team": "vision"}, "0.00", 0.0, 3.0, "1.50"),
    ]
    assert report["totals"] == [
        {
            "amount": "0.01",
            "currency": "USD",
            "gpu_hours": 0.0,
            "onprem_gpu_hours": 5.0,
            "onprem_amount": "4.50",
        }
    ]
    assert report["onprem_rates"] == {"*": "0.5", "A100": "1.5"}
    by_source = (
        api.client("fin").get("/v1/costs", params={**WINDOW, "by": "location,project"}).json()
    )
    assert _rows(by_source, "onprem_gpu_hours")[1:] == [
        ({"location": "onprem", "project": None}, 3.0),
        ({"location": "onprem", "project": "llm"}, 2.0),
    ]


#: Every grouping the API offers, alone, then combinations finance asks for.
GROUPINGS = [*((k,) for k in REPORT_KEYS), (), ("team", "user", "week"), ("job", "day")]
CENT = Decimal("0.01")


def _sums(pairs):  # type: ignore[no-untyped-def]
    """``(currency, amount)`` pairs added up per currency (never across currencies)."""
    out: dict[str, Decimal] = {}
    for currency, amount in pairs:
        out[currency] = out.get(currency, Decimal(0)) + amount
    return out


def _every_view_adds_up(api, jobs, since, until):  # type: ignore[no-untyped-def]
    """Per currency, exactly: each job's metered money summed equals every report's rows
    summed (from the rollups and from the entries) and its totals; each job's own view
    equals its by-job rows. Returns the exact totals per currency."""
    store, fin = api.store, api.client("fin")
    exact = _sums(
        (currency, amount)
        for job_id in jobs
        for currency, amount in per_currency(
            store.ledger.job_costs([job_id]).get(job_id, {})
        ).items()
    )
    window = {"since": _iso(since), "until": _iso(until)}
    for keys in GROUPINGS:
        for read in (store.ledger.cost_report, partial(report_from_entries, store)):
            rows = read(since, until, keys)
            assert _sums((t.currency, t.amount) for t in rows) == exact, (read, keys)
        answer = fin.get("/v1/costs", params={**window, "by": ",".join(keys)})
        assert answer.status_code == 200, answer.text
        totals = {t["currency"]: Decimal(t["amount"]) for t in answer.json()["totals"]}
        assert totals == {c: a.quantize(CENT) for c, a in exact.items()}, keys
    by_job = fin.get("/v1/costs", params={**window, "by": "job"}).json()["rows"]
    views = {}
    for job_id in jobs:
        view = fin.get(f"/v1/jobs/{job_id}").json()
        views.update({(job_id, c["currency"]): c["amount"] for c in view["costs"]})
        mine = [c for c in view["costs"] if c["currency"] == view["currency"]]
        assert view["cost_so_far"] == (mine[0]["amount"] if mine else "0.00")
    # a job's own cost is rounded alone; its row in a report by job is apportioned so the
    # rows add up to the total (``core.apportion``): the two differ by a cent at most
    rows = {(r["key"]["job"], r["currency"]): Decimal(r["amount"]) for r in by_job}
    assert set(views) <= set(rows)
    assert all(abs(Decimal(a) - rows[k]) <= CENT for k, a in views.items()), (views, rows)
    for currency, amount in exact.items():
        mine = [a for (_, c), a in rows.items() if c == currency]
        assert sum(mine, Decimal(0)) == amount.quantize(CENT)
    return exact


def _iso(moment: float) -> str:
    return datetime.fromtimestamp(moment, UTC).isoformat()


@BOTH
def test_per_job_costs_sum_to_every_report_total(api):  # type: ignore[no-untyped-def]
    a, b = _spend(api.store)
    exact = _every_view_adds_up(api, (a, b), _epoch("2026-10-01"), _epoch("2026-12-01"))
    assert exact == {"USD": Decimal("12.633333"), "EUR": Decimal("7")}  # by hand
    view = api.client("fin").get(f"/v1/jobs/{b}").json()  # 0.33 USD and 7 EUR: never "7.33"
    assert view["costs"] == [
        {"amount": "7.00", "currency": "EUR"},
        {"amount": "0.33", "currency": "USD"},
    ]
    assert (view["cost_so_far"], view["currency"]) == ("0.33", "USD")  # no launch: USD
    top = api.client("fin").get("/v1/costs", params={**WINDOW, "by": "job", "top": 1}).json()
    assert _rows(top, "amount", "currency") == [  # the top job in each currency
        ({"job": b}, "7.00", "EUR"),
        ({"job": a}, "12.30", "USD"),
    ]


MONTH_END = _epoch("2026-11-30T22:00")
PRICE = 2.5  # $ per GPU-hour in the simulated cloud


@BOTH
@pytest.mark.parametrize(
    "api_options", [{"settings": {"onprem_rates": {"A100": 1.5}}}], indirect=True
)
def test_costs_metered_by_the_controller_add_up_in_every_view(api):  # type: ignore[no-untyped-def]
    """A controller on virtual time runs jobs on-prem and bursts the rest to the simulated
    cloud across a month end; every report and every job view then agree to the micro-unit
    with the ledger, and the ledger with price × billed time of each launch."""
    store, clock = api.store, api.clock
    clock.set(MONTH_END)
    runtimes = {f"j{i}": 1800.0 + 900 * i for i in range(8)}
    cluster = SimCluster(uniform_nodes(1, 4, gpu_type="A100"), clock, runtimes)
    cloud = SimCloud(clock, PRICE, startup_delay=120.0, runtimes=runtimes)
    config = SchedulerConfig(WaitPolicy(PolicyKind.CONSTANT, coefficient=600.0), out_of_order=True)
    loop = SchedulingLoop(store, cluster, cloud, clock, config, metering_chunk_s=900.0)
    for i, job_id in enumerate(runtimes):
        team, user = ("ml", "alice") if i % 2 else ("vision", "bob")
        store.submissions.submit(
            JobSpec(id=job_id, gpus=1 + i % 3, user=user, team=team, command="true")
        )
    for _ in range(2000):  # a pass a minute of virtual time, until every job ended
        loop.run_pass()
        if all(state.terminal for state in store.jobs.states_of(runtimes).values()):
            break
        clock.advance(60.0)
    assert all(store.jobs.get(j).state is JobState.SUCCEEDED for j in runtimes)
    launches = store.ledger.launches()
    assert launches and any(store.jobs.get(j).ran_on == "onprem" for j in runtimes)
    exact = _every_view_adds_up(api, list(runtimes), MONTH_END - 3600, clock.now() + 3600)
    billed = sum(  # by hand: each launch's hourly price × its billed time
        x.hourly_price * Decimal(str(x.ended_at - x.launched_at)) / 3600 for x in launches
    )
    chunks = sum(len(store.ledger.cost_report(0, 2e9, ("day",), job=x.job_id)) for x in launches)
    assert exact.keys() == {"USD"}
    assert abs(exact["USD"] - billed) <= Decimal("0.000001") * 4 * chunks  # rounding per chunk
    # on-prem: every GPU-hour of the runs that ran there, at the A100 nodes' rate
    onprem = sum(
        store.jobs.get(j).job.gpus * runtimes[j] / 3600
        for j in runtimes
        if store.jobs.get(j).ran_on == "onprem"
    )
    report = (
        api.client("fin")
        .get(
            "/v1/costs",
            params={"since": _iso(MONTH_END - 3600), "until": _iso(clock.now() + 1), "by": "month"},
        )
        .json()
    )
    months = {r["key"]["month"]: r for r in report["rows"]}
    assert set(months) == {"2026-11", "2026-12"}  # the month end splits runs and launches
    assert sum(r["onprem_gpu_hours"] for r in months.values()) == pytest.approx(onprem, abs=2e-3)
    (total,) = report["totals"]
    assert Decimal(total["onprem_amount"]) == (Decimal(str(onprem)) * Decimal("1.5")).quantize(CENT)


def test_users_read_only_their_own_costs_labelled_as_theirs(api):  # type: ignore[no-untyped-def]
    _spend(api.store)
    window = {**WINDOW, "by": "user"}
    report = api.client("alice").get("/v1/costs", params=window).json()
    assert _rows(report, "amount") == [({"user": "alice"}, "12.30")]
    assert report["scope"] == "user alice"
    denied = api.client("alice").get("/v1/costs", params={**window, "user": "bob"})
    assert denied.status_code == 403 and "finance" in denied.json()["detail"]
    assert api.client("alice").get("/v1/costs/savings").status_code == 403


def test_bad_report_parameters_are_422_and_say_what_is_wrong(api):  # type: ignore[no-untyped-def]
    fin = api.client("fin")
    cases = (
        {"by": "team,colour"},
        {"since": "yesterday"},
        {"since": "2026-11-02", "until": "2026-11-01"},
        {"since": "0001-01-01T00:00:00+01:00"},
        {"top": "0"},
    )
    details = []
    for params in cases:
        answer = fin.get("/v1/costs", params=params)
        assert answer.status_code == 422
        details.append(answer.json()["detail"])
    assert "cannot group costs by 'colour'" in details[0]
    assert details[1].startswith("since: 'yesterday' is not a duration back from now (30d")
    assert "must be after since" in details[2]
    assert details[3] == "since: '0001-01-01T00:00:00+01:00' is out of range"
    assert "top" in details[4]


@BOTH
def test_savings_price_onprem_runs_as_their_burst_would_be(api):  # type: ignore[no-untyped-def]
    store, clock = api.store, api.clock
    clock.set(_epoch("2026-11-10T00:00"))
    local = store.submissions.submit(JobSpec(gpus=2, user="alice", gpu_type="A100")).job.id
    cloud = store.submissions.submit(JobSpec(gpus=1, user="bob", gpu_type="A100")).job.id
    odd = store.submissions.submit(JobSpec(gpus=1, user="bob", gpu_type="TPU-v9")).job.id
    untyped = store.submissions.submit(
        JobSpec(gpus=1, user="bob")
    ).job.id  # bursts as the default, A100
    never = store.submissions.submit(JobSpec(gpus=1, user="bob")).job.id
    euro = store.submissions.submit(JobSpec(gpus=1, user="bob", gpu_type="A100")).job.id
    for job_id, where in (
        (local, JobState.RUNNING_ONPREM),
        (cloud, JobState.BURSTING),
        (euro, JobState.BURSTING),
        (odd, JobState.RUNNING_ONPREM),
        (untyped, JobState.RUNNING_ONPREM),
    ):
        store.lifecycle.transition(job_id, JobState.QUEUED, reason="t", actor="c")
        if where is JobState.BURSTING:
            store.lifecycle.transition(job_id, where, reason="t", actor="c")
            where = JobState.RUNNING_CLOUD
        store.lifecycle.transition(job_id, where, reason="t", actor="c")
    clock.advance(3600)
    for job_id in (local, cloud, odd, untyped, never, euro):
        store.lifecycle.transition(
            job_id,
            JobState.CANCELLED if job_id == never else JobState.SUCCEEDED,
            reason="done",
            actor="c",
        )
    store.ledger.record_costs(
        [
            CostEntry(
                cloud, clock.now() - 3700, clock.now(), Decimal("3.10"), "gcp", gpu_hours=1.0
            ),
            CostEntry(euro, clock.now() - 3600, clock.now(), Decimal("2.9"), "gcp", currency="EUR"),
        ]
    )  # provisioning billed too; euros are not added to the dollars
    saved = api.client("fin").get("/v1/costs/savings", params=WINDOW).json()
    # The cheapest A100 in the test price table is $3/GPU-h. No-Wait: the burst job as it
    # was billed (3.10), 2 + 1 on-prem A100 GPU-hours at 3 (9.00).
    assert (saved["no_wait"], saved["actual"], saved["saved"]) == ("12.10", "3.10", "9.00")
    assert saved["onprem_cloud_value"] == "9.00" and saved["onprem_gpu_hours"] == 3.0
    assert saved["saved_fraction"] == pytest.approx(9 / 12.1)
    assert (saved["jobs"], saved["burst_jobs"], saved["onprem_jobs"]) == (3, 1, 2)
    reasons = {u["job"]: u["reason"] for u in saved["unpriced"]}
    assert saved["unpriced_jobs"] == 3 and set(reasons) == {odd, never, euro}
    assert reasons[euro] == "billed in EUR; savings are in USD"
    assert "TPU-v9" in reasons[odd] and reasons[never].startswith("never ran (cancelled")
