"""The ``TuningLog`` contract (``store.tuning``): what ``starburst tune`` reads and writes,
the same tests for every store implementation."""

from __future__ import annotations

from decimal import Decimal

import pytest

from starburst.core.capacity import Node, Part
from starburst.core.estimates import EstimateUse
from starburst.core.lifecycle import JobState
from starburst.core.policy import PolicyKind
from starburst.core.records import CloudLaunch, CostEntry, JobSpec
from starburst.core.setting import PolicySetting

T0 = 1_780_000_000.0


def run_job(
    store,
    job_id: str,
    *,
    cloud: bool,
    submit: float,
    start: float,
    end: float,  # type: ignore[no-untyped-def]
    estimate: float,
) -> None:
    store.submissions.submit(
        JobSpec(id=job_id, gpus=2, cpus=4, user="ann", team="ml", gpu_type="a100"), at=submit
    )
    store.lifecycle.set_estimates(job_id, predicted_runtime=estimate)
    store.lifecycle.transition(job_id, JobState.QUEUED, reason="queued", actor="t", at=submit)
    if cloud:
        store.lifecycle.transition(job_id, JobState.BURSTING, reason="burst", actor="t", at=start)
        launch = store.ledger.record_launch(
            CloudLaunch(
                job_id=job_id,
                name=f"sb-{job_id}",
                provider="aws",
                accelerators="A100:2",
                hourly_price=Decimal("6"),
                launched_at=start,
            )
        )
        store.ledger.update_launch(launch.id or 0, status="succeeded", ended_at=end)
        store.ledger.record_costs(
            [
                CostEntry(
                    job_id,
                    start,
                    end,
                    Decimal("6") * Decimal(str((end - start) / 3600)),
                    "aws",
                    gpu_hours=2 * (end - start) / 3600,
                    source="cloud",
                    launch_id=launch.id,
                )
            ]
        )
    else:
        store.lifecycle.record_placement(job_id, (Part(0, "n0", 2, 4.0, 0.0),), at=start)
        store.lifecycle.transition(
            job_id, JobState.RUNNING_ONPREM, reason="start", actor="t", at=start
        )
    store.lifecycle.transition(job_id, JobState.SUCCEEDED, reason="done", actor="t", at=end)


def test_finished_jobs_carry_measured_runtimes_and_the_controllers_estimates(store) -> None:  # type: ignore[no-untyped-def]
    run_job(store, "a", cloud=False, submit=T0, start=T0 + 100, end=T0 + 1100, estimate=800)
    run_job(store, "b", cloud=True, submit=T0 + 10, start=T0 + 70, end=T0 + 3670, estimate=4000)
    store.submissions.submit(JobSpec(id="late", gpus=1), at=T0 + 20)  # never ran: not history
    records = store.tuning
    jobs = {j.id: j for j in records.finished_jobs(T0, T0 + 60)}
    assert set(jobs) == {"a", "b"}
    assert jobs["a"].runtime == pytest.approx(1000) and jobs["a"].estimate == 800
    assert jobs["b"].runtime == pytest.approx(3600) and jobs["b"].estimate == 4000
    assert (jobs["b"].user, jobs["b"].team, jobs["b"].gpu_type, jobs["b"].cpus) == (
        "ann",
        "ml",
        "a100",
        4.0,
    )
    assert jobs["b"].extra == {"ran_on": "cloud", "state": "succeeded"}
    assert records.finished_jobs(T0 + 5, T0 + 60)[0].id == "b"  # submitted in the window
    spend = records.cloud_spend(["a", "b"])
    assert spend.amount == pytest.approx(6.0) and spend.gpu_hours == pytest.approx(2.0)


def test_state_is_overwritten_and_settings_are_an_append_only_log(store, clock) -> None:  # type: ignore[no-untyped-def]
    records = store.tuning
    assert records.cluster_shape() is None and records.setting_in_force() is None
    records.record_cluster_shape([Node("n0", 8, 64.0, 0.0, "a100")])
    records.record_cluster_shape([Node("n0", 8), Node("n1", 4, gpu_type="t4")])
    assert [(n.name, n.gpus, n.gpu_type) for n in records.cluster_shape() or []] == [
        ("n0", 8, "gpu"),
        ("n1", 4, "t4"),
    ]
    first = records.apply_setting(
        PolicySetting(PolicyKind.COMPUTE, 0.1, None, True, EstimateUse.P90),
        actor="cli:ann",
        reason="tune",
        evidence={"jobs": 3},
    )
    clock.advance(5)
    second = records.apply_setting(
        PolicySetting(PolicyKind.CONSTANT, 0.5, None, False), actor="api:bob", reason="tune again"
    )
    in_force = records.setting_in_force()
    assert in_force == second and second.id > first.id
    assert [a.id for a in records.settings_log()] == [second.id, first.id]
    assert first.evidence == {"jobs": 3} and first.actor == "cli:ann"
    assert first.setting.estimate is EstimateUse.P90  # the estimate budgets use is kept
    assert second.setting.estimate is EstimateUse.P50  # the default


def test_a_cloud_job_without_an_ended_launch_is_not_history(store) -> None:  # type: ignore[no-untyped-def]
    run_job(store, "b", cloud=True, submit=T0, start=T0 + 10, end=T0 + 70, estimate=60)
    store.submissions.submit(JobSpec(id="c", gpus=1), at=T0 + 1)
    store.lifecycle.transition("c", JobState.QUEUED, reason="queued", actor="t", at=T0 + 1)
    store.lifecycle.transition("c", JobState.BURSTING, reason="burst", actor="t", at=T0 + 2)
    store.lifecycle.transition("c", JobState.RUNNING_CLOUD, reason="up", actor="t", at=T0 + 3)
    store.lifecycle.transition("c", JobState.FAILED, reason="lost", actor="t", at=T0 + 9)
    store.submissions.submit(JobSpec(id="gone", gpus=1), at=T0 + 2)
    store.lifecycle.transition("gone", JobState.CANCELLED, reason="user", actor="t", at=T0 + 3)
    assert [j.id for j in store.tuning.finished_jobs(T0, T0 + 60)] == ["b"]
    assert store.tuning.finished_jobs(T0 + 60, T0 + 99) == []
    assert store.tuning.cloud_spend(["c", "ghost"]).amount == 0.0


def test_controller_state_is_json_overwritten_per_name(store) -> None:  # type: ignore[no-untyped-def]
    records = store.tuning
    assert records.state("scheduler") is None
    records.record_state("scheduler", {"policy": "constant", "caps": (1, 2)})
    records.record_state("other", {"x": 1})
    records.record_state("scheduler", {"policy": "compute", "nested": {"a": [1.5]}}, at=T0)
    assert records.state("scheduler") == {"policy": "compute", "nested": {"a": [1.5]}}
    assert records.state("other") == {"x": 1}
    records.record_state("tuple", {"caps": (1, 2)})
    assert records.state("tuple") == {"caps": [1, 2]}  # kept as JSON: a tuple reads as a list


def test_the_settings_log_is_newest_first_and_bounded(store, clock) -> None:  # type: ignore[no-untyped-def]
    records = store.tuning
    applied = [
        records.apply_setting(
            PolicySetting(PolicyKind.CONSTANT, float(i)), actor="t", reason=f"r{i}", at=T0 + i
        )
        for i in range(4)
    ]
    assert [a.reason for a in records.settings_log(limit=2)] == ["r3", "r2"]
    assert records.settings_log() == list(reversed(applied))
    assert applied[1].at == T0 + 1 and applied[1].setting.budget == 1.0
    assert records.setting_in_force() == applied[-1]
