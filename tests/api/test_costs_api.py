"""``/v1/costs``: grouped reports (decimal strings, per currency), scopes, and savings."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

import pytest

from starburst.adapters.db.records import CostEntry, JobSpec
from starburst.core.lifecycle import JobState

BOTH = pytest.mark.parametrize(
    "db_url", ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)], indirect=True)


def _epoch(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp()


def _spend(store):  # type: ignore[no-untyped-def]
    a = store.submit(JobSpec(gpus=1, user="alice", team="ml")).job.id
    b = store.submit(JobSpec(gpus=2, user="bob", team="vision")).job.id
    hour = 3600
    store.record_costs([
        CostEntry(a, _epoch("2026-10-03T10:00"), _epoch("2026-10-03T11:00"), Decimal("4.10"),
                  "aws", gpu_hours=1.0),
        CostEntry(a, _epoch("2026-11-02T10:00"), _epoch("2026-11-02T12:00"), Decimal("8.20"),
                  "aws", gpu_hours=2.0),
        CostEntry(b, _epoch("2026-11-05T00:00"), _epoch("2026-11-05T00:00") + hour,
                  Decimal("0.333333"), "gcp", gpu_hours=2.0),
        CostEntry(b, _epoch("2026-11-06T00:00"), _epoch("2026-11-06T00:00") + hour,
                  Decimal("7"), "gcp", gpu_hours=2.0, currency="EUR"),
    ])


@BOTH
def test_finance_reads_costs_grouped_by_team_and_month(api):  # type: ignore[no-untyped-def]
    _spend(api.store)
    fin = api.client("fin")
    report = fin.get("/v1/costs", params={"since": "2026-10-01", "until": "2026-12-01",
                                          "by": "team,month"}).json()
    rows = [(r["key"], r["amount"], r["currency"], r["gpu_hours"], r["entries"])
            for r in report["rows"]]
    assert rows == [
        ({"team": "ml", "month": "2026-10"}, "4.10", "USD", 1.0, 1),
        ({"team": "ml", "month": "2026-11"}, "8.20", "USD", 2.0, 1),
        ({"team": "vision", "month": "2026-11"}, "7.00", "EUR", 2.0, 1),
        ({"team": "vision", "month": "2026-11"}, "0.33", "USD", 2.0, 1),
    ]
    assert [(t["currency"], t["amount"]) for t in report["totals"]] == [("EUR", "7.00"),
                                                                        ("USD", "12.63")]
    by_cloud = fin.get("/v1/costs", params={"since": "2026-11-01", "until": "2026-12-01",
                                            "by": "cloud", "cloud": "aws"}).json()["rows"]
    assert [(r["key"], r["amount"]) for r in by_cloud] == [({"cloud": "aws"}, "8.20")]


def test_users_read_only_their_own_costs(api):  # type: ignore[no-untyped-def]
    _spend(api.store)
    window = {"since": "2026-10-01", "until": "2026-12-01", "by": "user"}
    mine = api.client("alice").get("/v1/costs", params=window).json()["rows"]
    assert [(r["key"], r["amount"]) for r in mine] == [({"user": "alice"}, "12.30")]
    denied = api.client("alice").get("/v1/costs", params={**window, "user": "bob"})
    assert denied.status_code == 403 and "finance" in denied.json()["detail"]
    assert api.client("alice").get("/v1/costs/savings").status_code == 403


def test_bad_report_parameters_are_422_and_say_what_is_wrong(api):  # type: ignore[no-untyped-def]
    fin = api.client("fin")
    cases = {"by": "team,colour"}, {"since": "yesterday"}, {"since": "2026-11-02",
                                                              "until": "2026-11-01"}
    details = []
    for params in cases:
        answer = fin.get("/v1/costs", params=params)
        assert answer.status_code == 422
        details.append(answer.json()["detail"])
    assert "cannot group costs by 'colour'" in details[0]
    assert details[1].startswith("since: 'yesterday' is not a date")
    assert "must be after since" in details[2]


def test_savings_compare_spending_with_bursting_every_finished_job(api):  # type: ignore[no-untyped-def]
    store, clock = api.store, api.clock
    clock.t = _epoch("2026-11-10T00:00")
    local = store.submit(JobSpec(gpus=2, user="alice", gpu_type="A100")).job.id
    cloud = store.submit(JobSpec(gpus=1, user="bob", gpu_type="A100")).job.id
    odd = store.submit(JobSpec(gpus=1, user="bob", gpu_type="TPU-v9")).job.id
    for job_id, where in ((local, JobState.RUNNING_ONPREM), (cloud, JobState.BURSTING),
                          (odd, JobState.RUNNING_ONPREM)):
        store.transition(job_id, JobState.QUEUED, reason="t", actor="c")
        if where is JobState.BURSTING:
            store.transition(job_id, where, reason="t", actor="c")
            where = JobState.RUNNING_CLOUD
        store.transition(job_id, where, reason="t", actor="c")
    clock.advance(3600)
    for job_id in (local, cloud, odd):
        store.transition(job_id, JobState.SUCCEEDED, reason="done", actor="c")
    store.record_costs([CostEntry(cloud, clock.now() - 3600, clock.now(), Decimal("3.00"),
                                  "gcp", gpu_hours=1.0)])
    window = {"since": "2026-11-01", "until": "2026-12-01"}
    saved = api.client("fin").get("/v1/costs/savings", params=window).json()
    # The cheapest A100 in the test price table is $3/GPU-h: No-Wait = 2 × 3 + 1 × 3.
    assert (saved["no_wait"], saved["actual"], saved["saved"]) == ("9.00", "3.00", "6.00")
    assert saved["saved_fraction"] == pytest.approx(2 / 3)
    assert (saved["jobs"], saved["unpriced_jobs"], saved["gpu_hours"]) == (2, 1, 3.0)
    priced = api.client("fin").get("/v1/costs/savings",
                                   params={**window, "default_gpu": "A100"}).json()
    assert (priced["no_wait"], priced["unpriced_jobs"]) == ("12.00", 0)
