"""Starburst as Kueue's burst policy, on the real tier with Kueue's real manager.

A ClusterQueue of 1 GPU opted in (``starburst.io/burst: "true"``), Compute-Wait with c = 0.5,
so a 1-GPU job declared to run 600 s gets a 300 s budget, one declared 2000 s a 1000 s one.
The controller runs on a hand-moved clock that starts at the API server's present, so that
budgets, which count from a Job's ``creationTimestamp``, are checked to the second (``at``);
Kueue admits by its own (real) quota.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from starburst.adapters.kubernetes.conversion import Conventions, rfc3339
from starburst.adapters.kubernetes.kueue import CONDITION, KueueWorkloads, served
from starburst.api.app import create_app
from starburst.controller.kueue_burst import KueueBurst
from starburst.core.lifecycle import JobState
from tests.api.conftest import LiveServer
from tests.kueue import objects
from tests.realkube.rig import Rig, controller_rig
from tests.support import http
from tests.support.waiting import wait_for

OPT_IN = {"starburst.io/burst": "true"}


def with_kueue(rig: Rig) -> KueueWorkloads:
    """Attach the Kueue pass to the rig's (current) controller, as the wiring does."""
    workloads = KueueWorkloads(rig.api, rig.clock, Conventions())
    loop = rig.controller.loop
    store = rig.store
    rig.controller.kueue = KueueBurst(
        submissions=store.submissions, jobs=store.jobs, lifecycle=store.lifecycle,
        ledger=store.ledger, models=store.models, workloads=workloads,
        policy=lambda: loop.config.policy, follower=lambda: loop.cloud_side,
        estimator=lambda: loop.estimator,
    )  # fmt: skip
    return workloads


@pytest.fixture
def kueue_rig(kueue_kube, kueue_queue, tmp_path: Path) -> Iterator[tuple[Rig, Any]]:
    kube = kueue_kube.kube
    queue = kueue_queue(gpus=1, annotations=OPT_IN)
    with (
        kube.kubelet() as kubelet,
        controller_rig(
            kube, queue.namespace, tmp_path, clock_start=math.floor(time.time()),
            policy="compute", coefficient=0.5,
        ) as rig,
    ):  # fmt: skip
        kubelet.add_node("gpu-a", gpus=8)
        rig.cloud.runtime = 120  # a cloud run takes 2 minutes of the rig's clock
        with_kueue(rig)
        try:
            yield rig, (queue, kubelet)
        finally:
            kube.delete_namespace(queue.namespace)


def passes(rig: Rig, seconds: float = 1.0, count: int = 1) -> None:
    for _ in range(count):
        rig.clock.advance(seconds)
        rig.controller.run_pass()


def at(rig: Rig, instant: float) -> None:
    """A pass at ``instant`` of the controller's clock (never earlier than it now is)."""
    assert instant >= rig.clock.now(), "a test that moves the clock back is wrong"
    rig.clock.set(instant)
    rig.controller.run_pass()


def decision(kube: Any, namespace: str, name: str) -> tuple[str, str, str]:
    """Starburst's condition on the Job's Workload (status, reason) and its mirror on the
    Job (the ``starburst.io/burst-status`` annotation)."""
    found = objects.condition(objects.workload(kube, namespace, name), CONDITION)
    assert found is not None, f"no {CONDITION} condition on {name}'s Workload"
    notes = objects.job(kube, namespace, name)["metadata"].get("annotations") or {}
    return found["status"], found["reason"], notes.get("starburst.io/burst-status", "")


def finish(kubelet: Any, namespace: str, name: str) -> None:
    """End the Job's pods (once the scheduler has bound them to the fake node)."""
    wait_for(lambda: kubelet.finish_job(namespace, name), timeout=60, what=f"{name}'s pods")


def admitted(kube: Any, namespace: str, name: str) -> bool:
    found = objects.workloads_of(kube, namespace, name)
    return bool(found) and objects.has_condition(found[0], "Admitted")


def events_on(kube: Any, namespace: str, name: str, reason: str) -> list[dict[str, Any]]:
    path = f"/api/v1/namespaces/{namespace}/events?fieldSelector=involvedObject.name={name}"
    return [e for e in kube.request("GET", path)["items"] if e["reason"] == reason]


def test_kueue_admits_before_the_budget_or_starburst_bursts_after_it(kueue_rig):
    rig, (queue, kubelet) = kueue_rig
    kube, ns = rig.real, queue.namespace
    assert served(rig.api) == ["v1beta2", "v1beta1"] or "v1beta2" in served(rig.api)
    objects.create(kube, objects.kueue_job("first", queue.local_queue, predicted_runtime=60), ns)
    wait_for(lambda: admitted(kube, ns, "first"), timeout=60, what="Kueue to admit first")
    second_job = objects.kueue_job("second", queue.local_queue, predicted_runtime=600)
    objects.create(kube, second_job, ns)
    wait_for(lambda: objects.evaluated_workload(kube, ns, "second"), timeout=60)
    created = objects.created(kube, ns, "second")
    at(rig, created + 1)

    assert rig.state("first") is None  # admitted before Starburst looked: Kueue's alone
    second = rig.store.jobs.get(f"{ns}/second")
    assert (second.state, second.wait_budget) == (JobState.QUEUED, 300)
    assert second.queued_at == created  # its budget counts from the Job's creation
    assert second.predicted_runtime == 600  # recorded, as for any job: explain shows it
    assert (
        objects.job(kube, ns, "second")["metadata"]["annotations"]["starburst.io/wait-budget"]
        == "300"
    )
    assert events_on(kube, ns, objects.workload(kube, ns, "second")["metadata"]["name"], "Waiting")
    assert decision(kube, ns, "second") == ("False", "Waiting", "Waiting")
    waiting = objects.condition(objects.workload(kube, ns, "second"), CONDITION)
    assert waiting is not None and rfc3339(created + 300) in waiting["message"]

    # Kueue's quota frees within second's budget: Kueue admits it, it runs on-prem
    at(rig, created + 100)
    finish(kubelet, ns, "first")
    wait_for(lambda: admitted(kube, ns, "second"), timeout=60, what="Kueue to admit second")
    passes(rig)
    assert rig.state("second") is JobState.RUNNING_ONPREM
    assert "admitted on-prem by Kueue" in rig.reasons("second")[-1]
    assert decision(kube, ns, "second") == ("False", "AdmittedOnPrem", "AdmittedOnPrem")
    assert objects.has_condition(objects.workload(kube, ns, "second"), "Admitted")  # Kueue's
    rig.restart()  # a new leader never starts Kueue's running job on-prem again
    with_kueue(rig)
    passes(rig)
    assert rig.state("second") is JobState.RUNNING_ONPREM

    # third arrives while second holds the quota (after it: Kueue's FIFO has no tie to break)
    third_job = objects.kueue_job("third", queue.local_queue, predicted_runtime=2000)
    objects.create(kube, third_job, ns)
    wait_for(lambda: objects.evaluated_workload(kube, ns, "third"), timeout=60)
    passes(rig)
    third = rig.store.jobs.get(f"{ns}/third")
    assert (third.state, third.wait_budget) == (JobState.QUEUED, 1000)
    third_created = objects.created(kube, ns, "third")
    assert third.queued_at == third_created

    # third's budget runs out while second holds the quota: out of Kueue, into the cloud,
    # at its creation + its budget to the second
    at(rig, third_created + 999)
    assert rig.state("third") is JobState.QUEUED
    at(rig, third_created + 1000)
    assert rig.state("third") in (JobState.BURSTING, JobState.RUNNING_CLOUD)
    assert any("taken out of Kueue" in r for r in rig.reasons("third"))
    assert [j.id for j in rig.cloud.launched] == [f"{ns}/third"]
    third_workload = objects.workload(kube, ns, "third")
    assert third_workload["spec"]["active"] is False
    assert not objects.has_condition(third_workload, "Admitted")
    assert objects.job(kube, ns, "third")["spec"]["suspend"] is True
    (burst,) = events_on(kube, ns, third_workload["metadata"]["name"], "Burst")
    assert "spec.active=false" in burst["message"]
    assert events_on(kube, ns, "third", "Burst")
    assert "starburst.io/burst-to" in objects.job(kube, ns, "third")["metadata"]["annotations"]
    assert decision(kube, ns, "third") == ("True", "Burst", "Burst")
    # `kubectl get workloads`: never admitted on-prem, not finished there either
    shown = objects.printed(kube, ns, third_workload["metadata"]["name"])
    assert (shown["Admitted"], shown["Finished"]) in (("", ""), ("False", ""))

    # the cloud side follows it like any burst; Kueue never admits it meanwhile
    passes(rig, 60, count=3)
    assert rig.state("third") is JobState.SUCCEEDED
    passes(rig)  # the Kueue look after the cloud side's says so on the Workload
    assert decision(kube, ns, "third") == ("True", "CloudSucceeded", "CloudSucceeded")
    (launch,) = rig.store.ledger.launches(f"{ns}/third")  # what `starburst costs` bills
    assert launch.ended_at is not None and float(launch.hourly_price) > 0
    assert not admitted(kube, ns, "third")
    shown = objects.printed(kube, ns, third_workload["metadata"]["name"])
    assert shown["Admitted"] != "True" and shown["Finished"] != "True"
    finish(kubelet, ns, "second")
    wait_for(lambda: objects.job(kube, ns, "second").get("status", {}).get("succeeded"))
    passes(rig)
    assert rig.state("second") is JobState.SUCCEEDED
    assert decision(kube, ns, "second") == ("False", "AdmittedOnPrem", "AdmittedOnPrem")
    assert (
        objects.printed(kube, ns, objects.workload(kube, ns, "second")["metadata"]["name"])[
            "Finished"
        ]
        == "True"
    )  # Kueue's own condition, as Kueue set it
    seen_by_users(rig, ns)
    assert rig.denied() == []


def seen_by_users(rig: Rig, ns: str) -> None:
    """``starburst explain``, ``jobs`` and ``costs`` (their REST routes) cover Kueue's jobs."""
    server = LiveServer(create_app(rig.settings, rig.store, auth=False, clock=rig.clock)).start()
    try:
        with http.client(base_url=server.url) as api:
            explained = api.get(f"/v1/jobs/{ns}/third/explain").json()
            assert explained["predicted_runtime_s"] == 2000
            assert explained["wait_budget_s"] == 1000
            assert explained["budget_computed"].startswith(
                "17m = 1 GPU × 33m20s runtime estimate × coefficient 0.5 (compute), from the "
                "Job's creation, in Kueue's queue lq"
            )
            listed = {j["id"]: j for j in api.get("/v1/jobs").json()["jobs"]}
            assert listed[f"{ns}/second"]["predicted_runtime_s"] == 600
            assert listed[f"{ns}/third"]["ran_on"] == "cloud"
            day = datetime.fromtimestamp(rig.clock.now(), UTC).date()
            window = {"since": str(day - timedelta(days=1)), "until": str(day + timedelta(2))}
            report = api.get("/v1/costs", params={**window, "by": "job"}).json()
            rows = {r["key"]["job"]: r for r in report["rows"]}
            assert float(rows[f"{ns}/third"]["amount"]) > 0  # its cloud run
            assert rows[f"{ns}/second"]["onprem_gpu_hours"] > 0  # its run under Kueue
    finally:
        server.stop()


def test_a_restart_between_leaving_kueue_and_the_burst_loses_nothing(kueue_rig):
    rig, (queue, _) = kueue_rig
    kube, ns = rig.real, queue.namespace
    objects.create(kube, objects.kueue_job("holder", queue.local_queue, predicted_runtime=60), ns)
    wait_for(lambda: admitted(kube, ns, "holder"), timeout=60)
    objects.create(kube, objects.kueue_job("late", queue.local_queue, predicted_runtime=600), ns)
    wait_for(lambda: objects.evaluated_workload(kube, ns, "late"), timeout=60)
    created = objects.created(kube, ns, "late")
    workloads = with_kueue(rig)
    at(rig, created + 1)
    assert rig.state("late") is JobState.QUEUED

    # the controller dies right after taking the Workload out of Kueue's queue (the first
    # step of a burst), before the store says anything
    at(rig, created + 299)  # 1 s short of the budget
    (pending,) = [w for w in workloads.workloads() if w.name.startswith("job-late")]
    assert workloads.deactivate(pending, "budget spent (test: the controller dies now)")
    rig.restart()
    with_kueue(rig)
    passes(rig, 1)

    assert rig.state("late") in (JobState.BURSTING, JobState.RUNNING_CLOUD)
    assert [j.id for j in rig.cloud.launched] == [f"{ns}/late"]
    passes(rig, 60, count=3)  # no second launch, whatever the passes see
    assert len(rig.cloud.launched) == 1
    assert rig.state("late") is JobState.SUCCEEDED
    passes(rig)
    assert decision(kube, ns, "late") == ("True", "CloudSucceeded", "CloudSucceeded")


def test_the_budget_counts_from_the_jobs_creation_across_restarts(kueue_rig):
    rig, (queue, _) = kueue_rig
    kube, ns = rig.real, queue.namespace
    objects.create(kube, objects.kueue_job("holder", queue.local_queue, predicted_runtime=60), ns)
    wait_for(lambda: admitted(kube, ns, "holder"), timeout=60)
    objects.create(kube, objects.kueue_job("late", queue.local_queue, predicted_runtime=600), ns)
    wait_for(lambda: objects.evaluated_workload(kube, ns, "late"), timeout=60)
    created = objects.created(kube, ns, "late")

    # first looked at 120 s after its creation: 180 s of its 300 s budget are left
    at(rig, created + 120)
    assert rig.state("late") is JobState.QUEUED
    # the controller restarts mid-wait: the budget neither restarts nor stretches
    rig.restart()
    with_kueue(rig)
    at(rig, created + 299)
    assert rig.state("late") is JobState.QUEUED
    rig.restart()
    with_kueue(rig)
    at(rig, created + 300)
    assert rig.state("late") in (JobState.BURSTING, JobState.RUNNING_CLOUD)
    assert [j.id for j in rig.cloud.launched] == [f"{ns}/late"]
    assert decision(kube, ns, "late") == ("True", "Burst", "Burst")

    # a Job created while no controller ran, first seen past its budget, bursts at that look
    objects.create(kube, objects.kueue_job("unseen", queue.local_queue, predicted_runtime=200), ns)
    wait_for(lambda: objects.evaluated_workload(kube, ns, "unseen"), timeout=60)
    unseen_created = objects.created(kube, ns, "unseen")
    rig.restart()
    with_kueue(rig)
    at(rig, max(rig.clock.now(), unseen_created) + 100)  # its budget: 100 s
    assert rig.state("unseen") in (JobState.BURSTING, JobState.RUNNING_CLOUD)
    assert rig.store.jobs.get(f"{ns}/unseen").queued_at == unseen_created
    assert decision(kube, ns, "unseen") == ("True", "Burst", "Burst")
    assert rig.denied() == []


def test_kueue_down_when_the_budget_runs_out_delays_the_burst_and_loses_nothing(
    kueue_rig, kueue_kube
):
    rig, (queue, _) = kueue_rig
    kube, ns = rig.real, queue.namespace
    objects.create(kube, objects.kueue_job("holder", queue.local_queue, predicted_runtime=60), ns)
    wait_for(lambda: admitted(kube, ns, "holder"), timeout=60)
    objects.create(kube, objects.kueue_job("late", queue.local_queue, predicted_runtime=600), ns)
    wait_for(lambda: objects.evaluated_workload(kube, ns, "late"), timeout=60)
    created = objects.created(kube, ns, "late")
    at(rig, created + 1)
    assert rig.state("late") is JobState.QUEUED

    kueue_kube.stop()  # Kueue's manager (and so its Workload webhooks) is down
    try:
        at(rig, created + 300)  # the budget ran out: the Workload cannot be patched now
        assert rig.state("late") is JobState.QUEUED
        assert rig.cloud.launched == []
    finally:
        kueue_kube.restart()
    passes(rig, 1)

    assert rig.state("late") in (JobState.BURSTING, JobState.RUNNING_CLOUD)
    assert [j.id for j in rig.cloud.launched] == [f"{ns}/late"]
    assert objects.workload(kube, ns, "late")["spec"]["active"] is False
    assert not admitted(kube, ns, "late")
    assert decision(kube, ns, "late") == ("True", "Burst", "Burst")


def test_a_queued_job_whose_kueue_job_is_deleted_ends_cancelled(kueue_rig):
    rig, (queue, _) = kueue_rig
    kube, ns = rig.real, queue.namespace
    objects.create(kube, objects.kueue_job("holder", queue.local_queue, predicted_runtime=60), ns)
    wait_for(lambda: admitted(kube, ns, "holder"), timeout=60)
    objects.create(kube, objects.kueue_job("gone", queue.local_queue, predicted_runtime=600), ns)
    wait_for(lambda: objects.evaluated_workload(kube, ns, "gone"), timeout=60)
    at(rig, objects.created(kube, ns, "gone") + 1)
    assert rig.state("gone") is JobState.QUEUED

    kube.request(
        "DELETE", f"/apis/batch/v1/namespaces/{ns}/jobs/gone", {"propagationPolicy": "Foreground"}
    )
    wait_for(lambda: not objects.workloads_of(kube, ns, "gone"), timeout=60)
    passes(rig)

    assert rig.state("gone") is JobState.CANCELLED
    assert "no longer followed for Kueue" in rig.reasons("gone")[-1]
    assert rig.cloud.launched == []
