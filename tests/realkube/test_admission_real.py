"""Admitting a Job on the real control plane when something goes wrong in between.

- *ResourceQuota*: the namespace's quota cannot hold the Job's pods. The real quota admission
  refuses each pod create, the real Job controller records ``FailedCreate``, and the job ends
  failed with the quota's words; its placement is freed at once and the Job suspended again.
  (The stand-in has no ResourceQuota; its refusals are PodSecurity's, ``tests/kube``.)
- *A controller that dies mid-admission*: the start intent (placement and ``running_onprem``)
  is in the store, the Job never unsuspended. A new controller life re-issues the recorded
  start: the Job runs once, its pods on the recorded nodes in the recorded counts.
"""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client

from starburst.core.lifecycle import JobState
from tests.kube.adapter_support import waiting_jobs
from tests.realkube.jobs import suspended_job
from tests.realkube.rig import Rig
from tests.support.kubelet import FakeKubelet
from tests.support.waiting import wait_for


def test_pods_refused_by_a_resource_quota_end_the_job_and_free_its_gpus(
    rig: Rig, core: client.CoreV1Api, batch: client.BatchV1Api
) -> None:
    quota = {"metadata": {"name": "gpus"}, "spec": {"hard": {"requests.nvidia.com/gpu": "4"}}}
    core.create_namespaced_resource_quota(rig.ns, quota)
    # quota admission refuses everything while the quota controller has not counted yet
    assert wait_for(lambda: core.read_namespaced_resource_quota("gpus", rig.ns).status.hard)
    batch.create_namespaced_job(rig.ns, suspended_job("big", gpus=8))
    assert rig.passes_until(lambda: rig.state("big") is JobState.FAILED)
    last = rig.reasons("big")[-1]
    assert last.startswith("failed on-prem: its pods were refused: pods "), last
    assert "exceeded quota: gpus, requested: requests.nvidia.com/gpu=8" in last, last
    assert "limited: requests.nvidia.com/gpu=4" in last, last
    assert wait_for(lambda: batch.read_namespaced_job("big", rig.ns).spec.suspend is True)
    assert rig.cluster.snapshot().capacity.free_gpus == 16
    # and a Job the quota holds runs
    batch.create_namespaced_job(rig.ns, suspended_job("small", gpus=4))
    assert rig.passes_until(lambda: rig.state("small") is JobState.RUNNING_ONPREM)
    assert rig.denied() == []


class Died(BaseException):
    """The controller process is killed (not an error any code handles)."""


def test_a_controller_killed_between_the_start_intent_and_the_unsuspend_starts_it_once(
    rig: Rig, kubelet: FakeKubelet, batch: client.BatchV1Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    def killed(*args: Any, **kwargs: Any) -> None:
        raise Died

    monkeypatch.setattr(rig.cluster, "start", killed)  # dies at the cluster call
    batch.create_namespaced_job(rig.ns, suspended_job("trio", gpus=3, pods=3))
    assert wait_for(lambda: [j.name for j in waiting_jobs(rig.cluster)] == ["trio"])
    with pytest.raises(Died):
        rig.passes_until(lambda: False)
    # the intent is recorded; the Job is as the user made it
    assert rig.state("trio") is JobState.RUNNING_ONPREM
    placement = rig.store.jobs.placement(f"{rig.ns}/trio")
    assert [(p.node_name, p.gpus) for p in placement] == [("gpu-a", 6), ("gpu-b", 3)]
    job = batch.read_namespaced_job("trio", rig.ns)
    assert job.spec.suspend is True
    assert "starburst.io/state" not in (job.metadata.annotations or {})  # (only "waiting")
    assert kubelet.pods_of(rig.ns, "trio") == []

    rig.restart()
    report = rig.controller.run_pass()  # leads, reconciles: the recorded start is carried out
    assert report is not None
    assert wait_for(
        lambda: (
            sorted(
                p["spec"].get("nodeName") or "-"
                for p in kubelet.pods_of(rig.ns, "trio")
                if p["status"].get("phase") == "Running"
            )
            == ["gpu-a", "gpu-a", "gpu-b"]
        )
    )
    job = batch.read_namespaced_job("trio", rig.ns)
    assert job.spec.suspend is False
    assert job.metadata.annotations["starburst.io/placement"] == "gpu-a×6, gpu-b×3"
    for _ in range(3):  # later passes neither start it again nor lose it
        rig.clock.advance(1)
        rig.controller.run_pass()
    assert len(kubelet.pods_of(rig.ns, "trio")) == 3
    assert rig.state("trio") is JobState.RUNNING_ONPREM
    assert rig.cluster.snapshot().capacity.free_gpus == 16 - 9
    assert rig.denied() == []
