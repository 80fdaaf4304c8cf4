"""``starburst costs``: the server's report as a table, CSV or JSON, labelled by whose it is,
and the savings with the jobs left out."""

from __future__ import annotations

import json
from decimal import Decimal

from starburst.core.records import CostEntry, JobSpec
from tests.api.test_cli import run


def _spend(api):  # type: ignore[no-untyped-def]
    now = api.clock.now()
    for user, team, amount in (("alice", "ml", "12.5"), ("bob", "vision", "2.25")):
        job = api.store.submissions.submit(
            JobSpec(gpus=1, user=user, team=team, extra={"project": f"p-{team}"})
        ).job.id
        api.store.ledger.record_costs(
            [CostEntry(job, now - 7200, now - 3600, Decimal(amount), "aws", gpu_hours=1.23456)]
        )


def test_costs_as_csv_json_and_a_users_own_table(api):  # type: ignore[no-untyped-def]
    _spend(api)
    fin = ["--server", api.url, "--token", api.tokens["fin"]]
    as_csv = run(["costs", "--by", "project", "-o", "csv", *fin])
    assert as_csv.exit_code == 0, as_csv.stderr
    assert as_csv.stdout == (
        "project,currency,amount,gpu_hours,onprem_gpu_hours,onprem_amount,entries\n"
        "p-ml,USD,12.50,1.235,0.0,0.00,1\n"  # 2.469 in all: the rows add up to it
        "p-vision,USD,2.25,1.234,0.0,0.00,1\n"
    )
    as_json = json.loads(run(["costs", "--by", "team", "-o", "json", *fin]).stdout)
    assert [(r["key"]["team"], r["amount"]) for r in as_json["rows"]] == [
        ("ml", "12.50"),
        ("vision", "2.25"),
    ]
    top = json.loads(run(["costs", "--by", "user", "--top", "1", "--json", *fin]).stdout)
    assert [r["key"]["user"] for r in top["rows"]] == ["alice"]
    mine = run(["costs", "--server", api.url, "--token", api.tokens["bob"]])
    assert mine.stdout.startswith("costs of user bob from ")
    assert mine.stdout.splitlines()[2].split()[:2] == ["vision", "2.25"]
    bad = run(["costs", "-o", "xml", *fin])
    assert bad.exit_code == 2 and "xml" in bad.stderr


def test_costs_savings_lists_the_jobs_left_out(api):  # type: ignore[no-untyped-def]
    from starburst.core.lifecycle import JobState

    job = api.store.submissions.submit(JobSpec(gpus=1, user="alice", team="ml")).job.id
    api.store.lifecycle.transition(job, JobState.QUEUED, reason="t", actor="c")
    api.store.lifecycle.transition(
        job, JobState.CANCELLED, reason="cancelled by alice", actor="alice"
    )
    api.clock.advance(1)  # the window ends now, exclusive
    out = run(["costs", "--savings", "--server", api.url, "--token", api.tokens["fin"]])
    assert out.exit_code == 0, out.stderr
    assert "1 jobs not counted:" in out.stdout
    assert f"  {job}: never ran (cancelled before starting): no runtime to price" in out.stdout
