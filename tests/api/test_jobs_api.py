"""``/v1/jobs`` over real HTTP: submit and idempotency, listing pages, status, explain, cancel."""

from __future__ import annotations

import json

from starburst.core.lifecycle import JobState
from tests.support.databases import BOTH

SPEC = {"image": "pytorch:2.4", "command": ["python", "train.py", "--lr", "3e-4"], "gpus": 2}


@BOTH
def test_submit_stores_the_spec_and_a_repeated_idempotency_key_returns_the_same_job(api):  # type: ignore[no-untyped-def]
    alice = api.client("alice")
    body = {
        **SPEC,
        "name": "resnet",
        "env": {"SEED": "7"},
        "declared_runtime_s": 7200,
        "cpus": 8,
        "memory_mb": 32000,
        "gpu_type": "A100",
    }
    first = alice.post("/v1/jobs", json=body, headers={"Idempotency-Key": "run-1"})
    again = alice.post("/v1/jobs", json=body, headers={"Idempotency-Key": "run-1"})
    other = alice.post("/v1/jobs", json=body, headers={"Idempotency-Key": "run-2"})
    assert (first.status_code, again.status_code, other.status_code) == (201, 200, 201)
    job = first.json()
    assert again.json()["id"] == job["id"] != other.json()["id"]
    assert job["state"] == "submitted" and job["user"] == "alice" and job["team"] == "ml"
    assert job["command"] == "python train.py --lr 3e-4" and job["estimate_s"] == 7200
    stored = api.store.jobs.get(job["id"])
    assert stored.job.extra["env"] == json.dumps({"SEED": "7"})
    assert stored.job.extra["command"] == "python train.py --lr 3e-4"
    assert stored.job.extra["image"] == "pytorch:2.4" and stored.job.gpu_type == "A100"


def test_the_same_idempotency_key_from_two_users_makes_two_jobs(api):  # type: ignore[no-untyped-def]
    key = {"Idempotency-Key": "nightly"}
    a = api.client("alice").post("/v1/jobs", json=SPEC, headers=key)
    b = api.client("bob").post("/v1/jobs", json=SPEC, headers=key)
    assert (a.status_code, b.status_code) == (201, 201)
    assert a.json()["id"] != b.json()["id"] and b.json()["user"] == "bob"


def test_malformed_specs_are_422_naming_every_bad_field(api):  # type: ignore[no-untyped-def]
    alice = api.client("alice")
    answer = alice.post("/v1/jobs", json={"image": "", "gpus": -1, "colour": "red"})
    assert answer.status_code == 422
    detail = answer.json()["detail"]
    for name in ("image", "gpus", "command", "colour"):
        assert name in detail
    assert (
        alice.post(
            "/v1/jobs", content=b"{not json", headers={"Content-Type": "application/json"}
        ).status_code
        == 422
    )
    bad_env = alice.post("/v1/jobs", json={**SPEC, "env": {"A B": "1"}})
    assert bad_env.status_code == 422 and "A B" in bad_env.json()["detail"]


@BOTH
def test_listing_pages_through_every_job_once_in_queue_order(api):  # type: ignore[no-untyped-def]
    alice = api.client("alice")
    made = []
    for i in range(7):
        api.clock.advance(1)
        made.append(alice.post("/v1/jobs", json={**SPEC, "name": f"j{i}"}).json()["id"])
    seen, cursor, pages = [], None, 0
    while True:
        params = {"limit": 3, **({"cursor": cursor} if cursor else {})}
        page = alice.get("/v1/jobs", params=params).json()
        seen += [j["id"] for j in page["jobs"]]
        pages += 1
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert seen == made and pages == 3
    api.store.lifecycle.transition(made[0], JobState.QUEUED, reason="admitted", actor="controller")
    queued = alice.get("/v1/jobs", params={"state": "queued"}).json()["jobs"]
    assert [j["id"] for j in queued] == [made[0]]
    assert alice.get("/v1/jobs", params={"state": "nonsense"}).status_code == 422
    bad = alice.get("/v1/jobs", params={"cursor": "!!!"})
    assert bad.status_code == 422 and "cursor" in bad.json()["detail"]


def test_a_cursor_never_handed_out_is_a_422_in_one_clear_line(api):  # type: ignore[no-untyped-def]
    """Its own error (``InvalidPage``), not a configuration error: one line that says what
    to send instead, for a mistyped cursor, a cut-short one, and one that decodes to junk."""
    alice = api.client("alice")
    for _ in range(3):
        assert alice.post("/v1/jobs", json={"gpus": 1, "command": "true"}).status_code == 201
    good = alice.get("/v1/jobs", params={"limit": 1}).json()["next_cursor"]
    for cursor in ("!!!", good[:12], "bm90LWEtdGltZXxqb2I"):  # cut before the job id
        bad = alice.get("/v1/jobs", params={"cursor": cursor, "limit": 1})
        assert bad.status_code == 422, bad.text
        detail = bad.json()["detail"]
        assert detail.startswith("invalid page cursor ") and "\n" not in detail
        assert "next_cursor of the previous page" in detail
    assert alice.get("/v1/jobs", params={"cursor": good, "limit": 1}).status_code == 200


def test_filters_by_user_and_team_and_users_see_only_their_own(api):  # type: ignore[no-untyped-def]
    alice, bob, root = api.client("alice"), api.client("bob"), api.client("root")
    for _ in range(4):
        bob.post("/v1/jobs", json=SPEC)
    mine = alice.post("/v1/jobs", json=SPEC).json()["id"]
    for _ in range(3):
        bob.post("/v1/jobs", json=SPEC)
    listed = alice.get("/v1/jobs", params={"limit": 2}).json()
    assert [j["id"] for j in listed["jobs"]] == [mine]
    assert alice.get("/v1/jobs", params={"user": "bob"}).status_code == 403
    by_team = root.get("/v1/jobs", params={"team": "vision", "limit": 100}).json()["jobs"]
    assert len(by_team) == 7 and {j["user"] for j in by_team} == {"bob"}
    fin = api.client("fin").get("/v1/jobs", params={"user": "alice"}).json()["jobs"]
    assert [j["id"] for j in fin] == [mine]


def test_status_shows_budget_placement_and_cloud_cost_so_far(api):  # type: ignore[no-untyped-def]
    from decimal import Decimal

    from starburst.core.records import CloudLaunch

    alice = api.client("alice")
    job_id = alice.post("/v1/jobs", json=SPEC).json()["id"]
    api.store.lifecycle.set_estimates(job_id, predicted_runtime=3600, wait_budget=2400)
    api.store.lifecycle.transition(job_id, JobState.QUEUED, reason="admitted", actor="controller")
    waiting = alice.get(f"/v1/jobs/{job_id}").json()
    assert waiting["wait_budget_s"] == 2400 and waiting["predicted_runtime_s"] == 3600
    assert waiting["budget_expires_at"] is not None and waiting["cost_so_far"] == "0.00"
    api.store.lifecycle.transition(job_id, JobState.BURSTING, reason="burst", actor="controller")
    launched = api.store.ledger.record_launch(
        CloudLaunch(
            job_id=job_id,
            name="sb-1",
            provider="aws",
            accelerators="A100:2",
            hourly_price=Decimal("8.00"),
            region="us-east-1",
            launched_at=api.clock.now(),
            started_at=api.clock.now(),
        )
    )
    api.clock.advance(1800)

    def meter(final: bool) -> None:  # as the controller does: the one billing rule
        from starburst.core.billing import charges
        from starburst.core.records import CostEntry

        api.store.ledger.record_costs(
            [
                CostEntry(
                    job_id,
                    c.start,
                    c.end,
                    c.amount,
                    "aws",
                    gpu_hours=c.gpu_hours,
                    launch_id=launched.id,
                )
                for c in charges(
                    launched.launched_at,
                    api.clock.now(),
                    Decimal("8.00"),
                    2,
                    chunk=600,
                    final=final,
                )
            ]
        )

    meter(final=False)
    running = alice.get(f"/v1/jobs/{job_id}").json()
    assert running["cost_so_far"] == "4.00" and running["currency"] == "USD"
    assert running["cloud"][0]["provider"] == "aws" and running["ran_on"] == "cloud"
    assert running["cloud"][0]["cost"] == "4.00"
    assert running["budget_expires_at"] is None
    api.clock.advance(300)
    meter(final=True)
    api.store.ledger.update_launch(launched.id, ended_at=api.clock.now())
    assert alice.get(f"/v1/jobs/{job_id}").json()["cost_so_far"] == "4.67"  # 8 $/h × 35 min


def test_status_shows_the_on_prem_placement(api):  # type: ignore[no-untyped-def]
    from starburst.core.capacity import Part

    job_id = api.client("alice").post("/v1/jobs", json=SPEC).json()["id"]
    api.store.lifecycle.transition(job_id, JobState.QUEUED, reason="admitted", actor="controller")
    parts = (Part(0, "node-a", 1, 4.0, 0.0), Part(3, "node-d", 1, 4.0, 0.0))
    api.store.lifecycle.record_placement(job_id, parts)
    api.store.lifecycle.transition(
        job_id, JobState.RUNNING_ONPREM, reason="fits", actor="controller"
    )
    job = api.client("alice").get(f"/v1/jobs/{job_id}").json()
    assert [(p["node_name"], p["gpus"]) for p in job["placement"]] == [("node-a", 1), ("node-d", 1)]


def test_explain_shows_the_reasons_the_store_recorded_and_the_budget_left(api):  # type: ignore[no-untyped-def]
    alice = api.client("alice")
    job_id = alice.post("/v1/jobs", json=SPEC).json()["id"]
    api.store.lifecycle.transition(
        job_id,
        JobState.QUEUED,
        reason="admitted: budget 40m (compute-wait)",
        actor="controller",
        wait_budget=2400,
    )
    api.clock.advance(720)
    waiting = alice.get(f"/v1/jobs/{job_id}/explain").json()
    assert waiting["summary"].startswith(
        "waiting 12m of a 40m budget; on-prem when GPUs free, else the cloud in 28m"
    )
    assert waiting["waited_s"] == 720 and waiting["wait_budget_s"] == 2400
    assert [e["reason"] for e in waiting["events"]] == [
        "submitted",
        "admitted: budget 40m (compute-wait)",
    ]
    api.clock.advance(1700)
    api.store.lifecycle.transition(
        job_id,
        JobState.BURSTING,
        actor="controller",
        reason="burst to aws:us-east-1 (A100:2, $8.00/h)",
    )
    burst = alice.get(f"/v1/jobs/{job_id}/explain").json()
    assert burst["summary"] == "bursting: burst to aws:us-east-1 (A100:2, $8.00/h)"
    assert [(e["from_state"], e["to_state"]) for e in burst["events"]][-1] == ("queued", "bursting")
    assert burst["budget_expires_at"] is None


@BOTH
def test_cancel_records_who_and_a_finished_job_is_409(api):  # type: ignore[no-untyped-def]
    alice = api.client("alice")
    job_id = alice.post("/v1/jobs", json=SPEC).json()["id"]
    api.store.lifecycle.transition(job_id, JobState.QUEUED, reason="admitted", actor="controller")
    done = alice.post(f"/v1/jobs/{job_id}/cancel")
    assert done.status_code == 200 and done.json()["state"] == "cancelled"
    last = api.store.jobs.events(job_id)[-1]
    assert (last.to_state, last.reason, last.actor) == (
        JobState.CANCELLED,
        "cancelled by alice",
        "alice",
    )
    again = alice.post(f"/v1/jobs/{job_id}/cancel")
    assert again.status_code == 409
    assert again.json()["detail"] == (
        f"job {job_id} already cancelled; only waiting or running jobs can be cancelled"
    )
    finished = alice.post("/v1/jobs", json=SPEC).json()["id"]
    for state in (JobState.QUEUED, JobState.RUNNING_ONPREM, JobState.SUCCEEDED):
        api.store.lifecycle.transition(finished, state, reason="test", actor="controller")
    assert alice.post(f"/v1/jobs/{finished}/cancel").status_code == 409
    assert api.store.jobs.get(finished).state is JobState.SUCCEEDED


def test_other_users_jobs_are_invisible_and_uncancellable(api):  # type: ignore[no-untyped-def]
    job_id = api.client("alice").post("/v1/jobs", json=SPEC).json()["id"]
    bob = api.client("bob")
    for answer in (
        bob.get(f"/v1/jobs/{job_id}"),
        bob.get(f"/v1/jobs/{job_id}/explain"),
        bob.post(f"/v1/jobs/{job_id}/cancel"),
    ):
        assert answer.status_code == 404 and answer.json() == {"detail": f"no job {job_id}"}
    fin = api.client("fin")
    assert fin.get(f"/v1/jobs/{job_id}").status_code == 200
    assert fin.post(f"/v1/jobs/{job_id}/cancel").status_code == 403
    by_admin = api.client("root").post(f"/v1/jobs/{job_id}/cancel").json()
    assert by_admin["state"] == "cancelled"
    assert api.store.jobs.events(job_id)[-1].reason == "cancelled by root"


def test_unknown_job_is_404_with_a_readable_body(api):  # type: ignore[no-untyped-def]
    alice = api.client("alice")
    for answer in (
        alice.get("/v1/jobs/nope"),
        alice.get("/v1/jobs/nope/explain"),
        alice.post("/v1/jobs/nope/cancel"),
    ):
        assert answer.status_code == 404 and answer.json() == {"detail": "no job nope"}


def test_only_admins_submit_for_others_or_into_other_teams(api):  # type: ignore[no-untyped-def]
    as_bob = {**SPEC, "user": "bob"}
    denied = api.client("alice").post("/v1/jobs", json=as_bob)
    assert denied.status_code == 403 and "alice cannot submit jobs as bob" in denied.text
    assert api.client("alice").post("/v1/jobs", json={**SPEC, "team": "vision"}).status_code == 403
    made = api.client("root").post("/v1/jobs", json=as_bob).json()
    assert (made["user"], made["team"]) == ("bob", "vision")


def test_a_job_that_never_bursts_reads_as_such_not_as_a_server_error(api):  # type: ignore[no-untyped-def]
    job_id = api.client("alice").post("/v1/jobs", json=SPEC).json()["id"]
    api.store.lifecycle.transition(
        job_id,
        JobState.QUEUED,
        reason="admitted: cluster only",
        actor="controller",
        wait_budget=float("inf"),
    )
    job = api.client("alice").get(f"/v1/jobs/{job_id}").json()
    assert (job["wait_budget_s"], job["never_bursts"], job["budget_expires_at"]) == (
        None,
        True,
        None,
    )
    why = api.client("alice").get(f"/v1/jobs/{job_id}/explain").json()
    assert why["summary"] == (
        "waiting 0s; on-prem when GPUs free; never bursts (cluster-only policy)"
    )


def test_explain_says_when_a_team_over_budget_keeps_a_job_on_prem(api):  # type: ignore[no-untyped-def]
    from decimal import Decimal

    from starburst.core.records import CostEntry

    alice = api.client("alice")
    job_id = alice.post("/v1/jobs", json={**SPEC, "team": "ml"}).json()["id"]
    api.store.lifecycle.transition(
        job_id, JobState.QUEUED, reason="admitted", actor="controller", wait_budget=60
    )
    api.store.accounts.set_team_budget("ml", Decimal("100"))
    now = api.clock.now()
    api.store.ledger.record_costs([CostEntry(job_id, now - 10, now, Decimal("150"), "aws")])
    api.clock.advance(600)  # its budget has run out, but its team may not burst
    summary = alice.get(f"/v1/jobs/{job_id}/explain").json()["summary"]
    assert summary.startswith(
        "waiting 10m of a 1m budget; on-prem when GPUs free; held from the cloud (team ml "
        "spent $150.00 of its $100.00 cloud budget"
    )
