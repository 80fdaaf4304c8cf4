"""Starburst and Kueue in one namespace, both real: Kueue's Jobs are never touched by
Starburst, Starburst's Jobs are never admitted by Kueue (``manageJobsWithoutQueueName: false``),
and a Job with both labels is Kueue's, with one Warning Event from Starburst saying so."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from starburst.core.lifecycle import JobState
from tests.kueue import objects
from tests.realkube.jobs import suspended_job
from tests.realkube.rig import controller_rig
from tests.support.waiting import wait_for


def admitted_and_running(kube: Any, namespace: str, name: str) -> bool:
    workload = objects.evaluated_workload(kube, namespace, name)
    return bool(
        workload
        and objects.has_condition(workload, "Admitted")
        and objects.job(kube, namespace, name)["spec"]["suspend"] is False
    )


def events_on(kube: Any, namespace: str, name: str) -> list[dict[str, Any]]:
    path = f"/api/v1/namespaces/{namespace}/events?fieldSelector=involvedObject.name={name}"
    return list(kube.request("GET", path)["items"])


def from_starburst(event: dict[str, Any]) -> bool:
    return (event.get("source") or {}).get("component") == "starburst"


def test_starburst_and_kueue_share_a_namespace(kueue_kube, kueue_queue, tmp_path: Path):
    kube = kueue_kube.kube
    queue = kueue_queue(gpus=4)
    ns = queue.namespace
    with kube.kubelet() as kubelet, controller_rig(kube, ns, tmp_path) as rig:
        try:
            kubelet.add_node("gpu-a", gpus=8)
            objects.create(kube, objects.kueue_job("kueue-job", queue.local_queue, gpus=2), ns)
            both = objects.kueue_job("both", queue.local_queue, gpus=1, starburst="default")
            objects.create(kube, both, ns)
            objects.create(kube, suspended_job("starburst-job", gpus=1), ns)

            rig.passes_until(lambda: rig.state("starburst-job") is JobState.RUNNING_ONPREM)
            for name in ("kueue-job", "both"):
                wait_for(lambda n=name: admitted_and_running(kube, ns, n), timeout=60,
                         what=f"Kueue to admit {name}")  # fmt: skip
            wait_for(lambda: any(e["reason"] == "Ignored" for e in events_on(kube, ns, "both")))
            for _ in range(3):  # Starburst sees Kueue's Jobs running: still not its own
                rig.clock.advance(1)
                rig.controller.run_pass()

            assert rig.state("kueue-job") is None and rig.state("both") is None
            assert objects.workloads_of(kube, ns, "starburst-job") == []
            for name in ("kueue-job", "both"):
                annotations = objects.job(kube, ns, name)["metadata"].get("annotations") or {}
                assert not [k for k in annotations if k.startswith("starburst.io/")], name
            (warning,) = [e for e in events_on(kube, ns, "both") if e["reason"] == "Ignored"]
            assert warning["type"] == "Warning" and "left to Kueue" in warning["message"]
            assert not [e for e in events_on(kube, ns, "kueue-job") if from_starburst(e)]
            assert rig.denied() == []
        finally:
            kube.delete_namespace(ns)
