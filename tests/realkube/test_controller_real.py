"""The controller end to end on the real control plane, as the ServiceAccount it ships RBAC for.

Suspended Jobs are created as users create them; the controller (real ``Controller.run_pass``
on the adapter, SQL store on SQLite, simulated cloud edge) admits them; the real scheduler
places their pods, the fake kubelet runs them, the real Job controller completes the Job.
"""

from __future__ import annotations

from typing import Any

from kubernetes import client

from starburst.core.lifecycle import JobState
from tests.kube.adapter_support import waiting_jobs
from tests.realkube.jobs import condition, suspended_job
from tests.realkube.rig import Rig
from tests.support.kubelet import FakeKubelet
from tests.support.waiting import wait_for


def pinned_nodes(job: Any) -> set[str]:
    """The nodes a Job's pods are pinned to (required node affinity on the hostname)."""
    affinity = job.spec.template.spec.affinity.node_affinity
    terms = affinity.required_during_scheduling_ignored_during_execution.node_selector_terms
    return {
        v
        for t in terms
        for e in t.match_expressions or []
        if e.key == "kubernetes.io/hostname"
        for v in e.values or []
    }


def test_a_suspended_job_is_pinned_started_run_and_completed(
    rig: Rig, kubelet: FakeKubelet, batch: client.BatchV1Api
) -> None:
    ns = rig.namespace
    batch.create_namespaced_job(ns, suspended_job("solo", gpus=4))
    assert wait_for(lambda: len(waiting_jobs(rig.cluster)) == 1)
    report = rig.controller.run_pass()
    assert report is not None and report.started == [f"{ns}/solo"]
    job = batch.read_namespaced_job("solo", ns)
    assert job.spec.suspend is False
    (node,) = pinned_nodes(job)
    assert wait_for(
        lambda: (
            [
                (p["spec"].get("nodeName"), p["status"].get("phase"))
                for p in kubelet.pods_of(ns, "solo")
            ]
            == [(node, "Running")]
        )
    )
    assert rig.store.jobs.get(f"{ns}/solo").state is JobState.RUNNING_ONPREM
    kubelet.finish_job(ns, "solo")
    assert rig.passes_until(lambda: rig.store.jobs.get(f"{ns}/solo").state is JobState.SUCCEEDED)
    assert condition(batch.read_namespaced_job("solo", ns), "Complete")
    assert rig.denied() == []


def test_a_job_split_over_two_nodes_runs_its_pods_on_both(
    rig: Rig, kubelet: FakeKubelet, batch: client.BatchV1Api
) -> None:
    ns = rig.namespace
    batch.create_namespaced_job(ns, suspended_job("gang", gpus=8, pods=2))
    assert wait_for(lambda: len(waiting_jobs(rig.cluster)) == 1)
    report = rig.controller.run_pass()
    assert report is not None and report.started == [f"{ns}/gang"]
    assert wait_for(
        lambda: (
            sorted(
                (p["spec"].get("nodeName") or "", p["status"].get("phase") or "")
                for p in kubelet.pods_of(ns, "gang")
            )
            == [("gpu-a", "Running"), ("gpu-b", "Running")]
        )
    )
    assert rig.store.jobs.get(f"{ns}/gang").state is JobState.RUNNING_ONPREM
    assert rig.denied() == []


def test_a_failed_pod_fails_the_job_and_frees_its_gpus(
    rig: Rig, kubelet: FakeKubelet, batch: client.BatchV1Api
) -> None:
    ns = rig.namespace
    batch.create_namespaced_job(ns, suspended_job("doomed", gpus=8))
    assert wait_for(lambda: len(waiting_jobs(rig.cluster)) == 1)
    report = rig.controller.run_pass()
    assert report is not None and report.started == [f"{ns}/doomed"]
    assert wait_for(
        lambda: [p["status"].get("phase") for p in kubelet.pods_of(ns, "doomed")] == ["Running"]
    )
    assert rig.cluster.snapshot().capacity.free_gpus == 8
    kubelet.finish_job(ns, "doomed", succeeded=False)
    assert rig.passes_until(lambda: rig.store.jobs.get(f"{ns}/doomed").state is JobState.FAILED)
    assert condition(batch.read_namespaced_job("doomed", ns), "Failed")
    assert wait_for(lambda: rig.cluster.snapshot().capacity.free_gpus == 16)
    assert rig.denied() == []


def test_a_controller_restarted_mid_run_adopts_its_job_and_sees_it_end(
    rig: Rig, kubelet: FakeKubelet, batch: client.BatchV1Api
) -> None:
    ns = rig.namespace
    batch.create_namespaced_job(ns, suspended_job("steady", gpus=4, pods=2))
    assert wait_for(lambda: len(waiting_jobs(rig.cluster)) == 1)
    report = rig.controller.run_pass()
    assert report is not None and report.started == [f"{ns}/steady"]
    assert wait_for(
        lambda: (
            [p["status"].get("phase") for p in kubelet.pods_of(ns, "steady")]
            == ["Running", "Running"]
        )
    )
    pods = {p["metadata"]["uid"] for p in kubelet.pods_of(ns, "steady")}
    rig.restart()
    report = rig.controller.run_pass()
    assert report is not None and report.started == []  # not started twice
    assert rig.store.jobs.get(f"{ns}/steady").state is JobState.RUNNING_ONPREM
    assert rig.cluster.snapshot().capacity.free_gpus == 8  # its GPUs stay taken
    assert {p["metadata"]["uid"] for p in kubelet.pods_of(ns, "steady")} == pods
    kubelet.finish_job(ns, "steady")
    assert rig.passes_until(lambda: rig.store.jobs.get(f"{ns}/steady").state is JobState.SUCCEEDED)
    assert rig.denied() == []
