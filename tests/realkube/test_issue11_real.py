"""Issue 11's cluster bugs, on the real control plane, as the ServiceAccount ``rbac.yaml`` makes.

The same scenarios as the stand-in tests (``tests/kube/test_kubectl_flows.py``,
``test_refused_pods.py``, ``test_standin_validation.py``), now against a real kube-apiserver
(validation, PodSecurity ``restricted`` admission, RBAC), the real Job controller and the real
kube-scheduler; the fake kubelet runs the pods it binds. Each failed on the code before the fix:
the multi-node pin was refused (422), kubectl Jobs could not burst, a Job suspended by someone
else kept its GPUs, a deleted waiting Job kept its record, pods refused at creation left a
started Job holding its placement.
"""

from __future__ import annotations

import json

import pytest
from kubernetes import client

from starburst.adapters.skypilot.task import build_task, launch_options
from starburst.core.job import Job
from starburst.core.lifecycle import JobState
from starburst.pricing import default_price_table
from tests.cloud.fake_sky import FakeSky
from tests.kube.adapter_support import waiting_jobs
from tests.kubeapi import KubeApiServer
from tests.kubeapi.validation import ONE_VALUE
from tests.realkube.jobs import suspended_job
from tests.realkube.rig import Rig
from tests.realkube.shipped import shipped_cluster_role
from tests.support.kubelet import FakeKubelet
from tests.support.waiting import wait_for


def placed(kubelet: FakeKubelet, ns: str, name: str) -> list[str]:
    return sorted(p["spec"].get("nodeName") or "-" for p in kubelet.pods_of(ns, name))


def test_the_old_multi_node_pin_is_refused_as_the_stand_in_refuses_it(
    real_namespace: str, batch: client.BatchV1Api
) -> None:
    batch.create_namespaced_job(real_namespace, suspended_job("old", gpus=1))
    pin = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {
                        "matchFields": [
                            {"key": "metadata.name", "operator": "In", "values": ["gpu-a", "gpu-b"]}
                        ]
                    }
                ]
            }
        }
    }
    patch = {"spec": {"suspend": False, "template": {"spec": {"affinity": pin}}}}
    with pytest.raises(client.ApiException) as caught:
        batch.patch_namespaced_job("old", real_namespace, patch)
    assert caught.value.status == 422
    real = json.loads(caught.value.body)["message"]
    assert ONE_VALUE in real
    with KubeApiServer() as standin:  # the stand-in answers the same, word for word
        api = standin.api_client()
        try:
            standin_batch = client.BatchV1Api(api)
            standin_batch.create_namespaced_job("default", suspended_job("old", gpus=1))
            with pytest.raises(client.ApiException) as again:
                standin_batch.patch_namespaced_job("old", "default", patch)
        finally:
            api.close()
    assert again.value.status == 422
    assert json.loads(again.value.body)["message"] == real


def test_an_unequal_multi_node_split_lands_in_the_placements_counts(
    rig: Rig, kubelet: FakeKubelet, batch: client.BatchV1Api
) -> None:
    """3 pods of 3 GPUs on two 8-GPU nodes: the core places 2 + 1; the real scheduler binds
    each released pod to exactly the node Starburst chose for it."""
    batch.create_namespaced_job(rig.ns, suspended_job("trio", gpus=3, pods=3))
    assert rig.passes_until(lambda: rig.state("trio") is JobState.RUNNING_ONPREM)
    assert any("gpu-a×6, gpu-b×3" in r for r in rig.reasons("trio"))
    assert wait_for(lambda: placed(kubelet, rig.ns, "trio") == ["gpu-a", "gpu-a", "gpu-b"])
    # and the capacity the snapshot sees is the truth: 2 GPUs left on a, 5 on b
    batch.create_namespaced_job(rig.ns, suspended_job("five", gpus=5))
    assert rig.passes_until(lambda: rig.state("five") is JobState.RUNNING_ONPREM)
    assert wait_for(lambda: placed(kubelet, rig.ns, "five") == ["gpu-b"])
    assert rig.denied() == []


def test_a_kubectl_job_bursts_with_what_its_template_runs(
    rig: Rig, batch: client.BatchV1Api
) -> None:
    batch.create_namespaced_job(rig.ns, suspended_job("fill-a", gpus=8))
    batch.create_namespaced_job(rig.ns, suspended_job("fill-b", gpus=8))
    body = suspended_job("q3", gpus=4)
    body["spec"]["template"]["spec"]["nodeSelector"] = {"nvidia.com/gpu.product": "A100"}
    body["spec"]["template"]["spec"]["containers"][0].update(
        image="ghcr.io/lab/train:7", args=["--epochs", "3"], env=[{"name": "SEED", "value": "7"}]
    )
    batch.create_namespaced_job(rig.ns, body)
    assert rig.passes_until(lambda: rig.state("q3") is JobState.BURSTING)
    (launched,) = [j for j in rig.cloud.launched if j.id == f"{rig.ns}/q3"]
    task = build_task(FakeSky(), launched, launch_options(launched, default_price_table())[0], "n")
    assert task.kwargs["run"] == "python train.py --epochs 3"
    assert task.kwargs["envs"] == {"SEED": "7", "STARBURST_JOB_ID": f"{rig.ns}/q3"}
    assert task.kwargs["resources"].kwargs["image_id"] == "docker:ghcr.io/lab/train:7"
    assert batch.read_namespaced_job("q3", rig.ns).spec.suspend is True
    assert rig.denied() == []


def test_suspension_by_someone_else_and_deletion_end_the_job(
    rig: Rig, kubelet: FakeKubelet, batch: client.BatchV1Api, core: client.CoreV1Api
) -> None:
    batch.create_namespaced_job(rig.ns, suspended_job("mine", gpus=8))
    assert rig.passes_until(lambda: rig.state("mine") is JobState.RUNNING_ONPREM)
    assert wait_for(lambda: placed(kubelet, rig.ns, "mine") == ["gpu-a"])
    batch.patch_namespaced_job("mine", rig.ns, {"spec": {"suspend": True}})  # kubectl, Kueue
    assert rig.passes_until(lambda: rig.state("mine") is JobState.FAILED)
    assert "suspended by someone else" in rig.reasons("mine")[-1]
    assert wait_for(
        lambda: (
            (batch.read_namespaced_job("mine", rig.ns).metadata.annotations or {}).get(
                "starburst.io/state"
            )
            == "failed"
        )
    )
    # the Stopped Event is written after the patch the wait above saw
    assert wait_for(
        lambda: (
            ("Warning", "Stopped")
            in {
                (e.type, e.reason)
                for e in core.list_namespaced_event(
                    rig.ns, field_selector="involvedObject.name=mine"
                ).items
            }
        )
    )
    # its GPUs are free again: a 16-GPU gang fits both nodes
    batch.create_namespaced_job(rig.ns, suspended_job("gang", gpus=8, pods=2))
    assert rig.passes_until(lambda: rig.state("gang") is JobState.RUNNING_ONPREM)
    # a waiting Job deleted with kubectl ends its record
    body = suspended_job("later", gpus=2)
    body["spec"]["template"]["spec"]["containers"].append(
        {**body["spec"]["template"]["spec"]["containers"][0], "name": "sidecar"}
    )
    batch.create_namespaced_job(rig.ns, body)  # cannot burst (two containers): waits
    assert rig.passes_until(lambda: rig.state("later") is JobState.QUEUED)
    batch.delete_namespaced_job("later", rig.ns)
    assert rig.passes_until(lambda: rig.state("later") is JobState.FAILED)
    assert "its Kubernetes Job was deleted" in rig.reasons("later")[-1]
    assert rig.denied() == []


def test_pods_refused_by_podsecurity_end_the_job_and_free_its_gpus(
    rig: Rig, batch: client.BatchV1Api
) -> None:
    body = suspended_job("open", gpus=8)
    del body["spec"]["template"]["spec"]["containers"][0]["securityContext"]
    batch.create_namespaced_job(rig.ns, body)  # a Job is admitted; its pods will not be
    assert rig.passes_until(lambda: rig.state("open") is JobState.FAILED)
    last = rig.reasons("open")[-1]
    assert "its pods were refused" in last and "violates PodSecurity" in last
    assert wait_for(lambda: batch.read_namespaced_job("open", rig.ns).spec.suspend is True)
    assert rig.cluster.snapshot().capacity.free_gpus == 16
    assert rig.denied() == []


def test_a_job_starburst_creates_passes_restricted_and_runs_split(
    rig: Rig, kubelet: FakeKubelet
) -> None:
    job = Job(
        "sub-1",
        0.0,
        16,
        pods=2,
        extra={"command": "python train.py", "image": "pytorch/pytorch:2.4"},
    )
    snap = rig.cluster.snapshot()
    index = {n.name: i for i, n in enumerate(snap.capacity.nodes)}
    from starburst.core.capacity import Part

    placement = tuple(Part(index[n], n, 8, 0.0, 0.0) for n in ("gpu-a", "gpu-b"))
    rig.cluster.start(job, placement, "fits on gpu-a×8, gpu-b×8")
    from starburst.adapters.kubernetes.manifest import job_name

    assert wait_for(lambda: placed(kubelet, rig.ns, job_name("sub-1")) == ["gpu-a", "gpu-b"])
    assert not rig.cluster.ended()
    assert rig.denied() == []


def test_every_request_the_adapter_makes_is_granted_by_the_shipped_role(
    rig: Rig, kubelet: FakeKubelet, batch: client.BatchV1Api
) -> None:
    """The real audit log of the ServiceAccount, through everything the adapter does: every
    (verb, resource) it used is a rule of rbac.yaml's ClusterRole, and none was refused."""
    from starburst.adapters.kubernetes.lease import LeaseLock
    from starburst.core.capacity import Part

    ns, cluster = rig.ns, rig.cluster
    batch.create_namespaced_job(ns, suspended_job("multi", gpus=4, pods=2))
    batch.create_namespaced_job(ns, suspended_job("away", gpus=2))
    batch.create_namespaced_job(ns, suspended_job("gone", gpus=1))
    open_body = suspended_job("refused", gpus=1)
    del open_body["spec"]["template"]["spec"]["containers"][0]["securityContext"]
    batch.create_namespaced_job(ns, open_body)
    assert wait_for(lambda: len(waiting_jobs(cluster)) == 4)
    jobs = {j.name: j for j in waiting_jobs(cluster)}
    index = {n.name: i for i, n in enumerate(cluster.snapshot().capacity.nodes)}

    def on(*parts: tuple[str, int]) -> tuple[Part, ...]:
        return tuple(Part(index[n], n, g, 0.0, 0.0) for n, g in parts)

    cluster.start(jobs["multi"], on(("gpu-a", 4), ("gpu-b", 4)), "fits")
    assert wait_for(lambda: placed(kubelet, ns, "multi") == ["gpu-a", "gpu-b"])
    cluster.note_waiting(jobs["away"].id, 60.0, 600.0, "waiting 0s of a 1m budget")
    cluster.burst(jobs["away"].id, "aws:us-east-1", "budget spent", "sky-1", 3.2)
    cluster.start(jobs["gone"], on(("gpu-a", 1)), "fits")
    cluster.cancel(jobs["gone"].id)
    cluster.start(jobs["refused"], on(("gpu-b", 1)), "fits")
    assert wait_for(lambda: batch.read_namespaced_job("refused", ns).spec.suspend is True)
    cluster.start(
        Job("sub-1", 0.0, 1, extra={"command": "python x.py", "image": "py:3"}),
        on(("gpu-a", 1)),
        "fits",
    )
    # suspending a Job deletes its pods, asynchronously (the Job controller, then the kubelet):
    # the log read below lists them, and must find none (the fake kubelet serves no logs)
    assert wait_for(
        lambda: not cluster._core.list_namespaced_pod(ns, label_selector="job-name=gone").items,
        timeout=60,
    )
    cluster.job_logs(jobs["gone"])  # lists its pods (none left)
    lock = LeaseLock(
        cluster._core.api_client, ns, "starburst-leader", "me", lambda: 1, duration=5.0
    )
    assert lock.try_acquire() == 1
    lock.release()
    lock.close()

    granted = {
        (verb, group, resource)
        for rule in shipped_cluster_role()["rules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }

    def used() -> set[tuple[str, str, str]]:
        out = set()
        for event in rig.real.audit_events(user=rig.user):
            ref = event.get("objectRef") or {}
            resource = ref.get("resource", "")
            if ref.get("subresource"):
                resource += "/" + ref["subresource"]
            out.add((event["verb"], ref.get("apiGroup", ""), resource))
        return out

    assert wait_for(lambda: ("update", "coordination.k8s.io", "leases") in used())
    assert sorted(used() - granted) == []
    # and every grant was used, but re-reading a Job after a 409 (not forced here), the
    # pods' output (the fake kubelet serves none) and Kueue's objects (no Kueue on this
    # control plane: tests/kueue runs the Kueue pass under this role, with no denial)
    assert sorted(granted - used()) == [
        ("get", "", "pods/log"),
        ("get", "batch", "jobs"),
        ("list", "kueue.x-k8s.io", "clusterqueues"),
        ("list", "kueue.x-k8s.io", "localqueues"),
        ("list", "kueue.x-k8s.io", "workloads"),
        ("patch", "kueue.x-k8s.io", "workloads"),
        ("patch", "kueue.x-k8s.io", "workloads/status"),
    ]
    assert rig.denied() == []


def test_a_budget_alert_is_an_event_in_the_team_namespace(rig: Rig, core: client.CoreV1Api) -> None:
    """The real server refuses a Namespace Event outside ``default`` whose involved object has
    no namespace: the alert used to be lost (the fallback, the adapter's namespace, is the
    same namespace here)."""
    rig.cluster.note_budget(rig.ns, "BudgetAlert", f"team {rig.ns} spent 80.00 of its 100.00 USD")
    (event,) = core.list_namespaced_event(rig.ns, field_selector="reason=BudgetAlert").items
    assert (event.involved_object.kind, event.involved_object.name) == ("Namespace", rig.ns)
    assert event.type == "Warning" and event.message.endswith("of its 100.00 USD")
    assert rig.denied() == []
