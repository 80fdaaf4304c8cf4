"""The stand-in's Job controller, scheduler and kubelet, seen through the official client.

batch/v1 semantics (Kubernetes "Jobs" documentation): an unsuspended Job creates
``parallelism`` Pods labelled ``job-name``/``controller-uid`` and owned by the Job; Pods bind
to a node with room that satisfies their node selector/affinity and resource requests, or stay
Pending (``PodScheduled=False``, ``Unschedulable``); Job status follows the Pods' phases to the
``Complete`` or ``Failed`` condition; suspending deletes the active Pods.
"""

from __future__ import annotations

import pytest
from kubernetes import client

from tests.kube.builders import job_body, pod_body
from tests.kubeapi import Taint


def pods(core, job: str) -> list[client.V1Pod]:
    return core.list_namespaced_pod("default", label_selector=f"job-name={job}").items


def pin(nodes: list[str]) -> dict:
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {
                        "matchExpressions": [
                            {"key": "kubernetes.io/hostname", "operator": "In", "values": nodes}
                        ]
                    }
                ]
            }
        }
    }


def test_a_suspended_job_creates_no_pods(core, batch):
    batch.create_namespaced_job("default", job_body("j", suspend=True, parallelism=2))
    assert pods(core, "j") == []
    job = batch.read_namespaced_job("j", "default")
    assert [(c.type, c.status) for c in job.status.conditions] == [("Suspended", "True")]
    assert job.status.start_time is None


def test_an_unsuspended_job_creates_parallelism_pods_owned_by_it(kube, core, batch):
    kube.add_node("n1", gpus=8)
    job = batch.create_namespaced_job("default", job_body("j", gpus=2, parallelism=3))
    made = pods(core, "j")
    assert len(made) == 3
    for pod in made:
        assert pod.metadata.name.startswith("j-")
        assert pod.metadata.labels["controller-uid"] == job.metadata.uid
        assert pod.metadata.labels["batch.kubernetes.io/job-name"] == "j"
        ref = pod.metadata.owner_references[0]
        assert (ref.kind, ref.name, ref.uid, ref.controller) == ("Job", "j", job.metadata.uid, True)
    status = batch.read_namespaced_job("j", "default").status
    assert status.active == 3 and status.start_time is not None


def test_job_defaults_selector_and_template_labels(batch):
    job = batch.create_namespaced_job("default", job_body("j", suspend=True))
    uid = job.metadata.uid
    assert job.spec.selector.match_labels == {"batch.kubernetes.io/controller-uid": uid}
    assert job.spec.template.metadata.labels["job-name"] == "j"
    assert job.spec.backoff_limit == 0 and job.spec.completion_mode == "NonIndexed"


def test_a_job_needs_a_never_or_onfailure_restart_policy(batch):
    body = job_body("j")
    body["spec"]["template"]["spec"]["restartPolicy"] = "Always"
    with pytest.raises(client.ApiException) as err:
        batch.create_namespaced_job("default", body)
    assert err.value.status == 422


def test_pods_bind_to_nodes_with_room_in_name_order(kube, core, batch):
    kube.add_node("n1", gpus=4)
    kube.add_node("n2", gpus=8)
    batch.create_namespaced_job("default", job_body("j", gpus=3, parallelism=3))
    assert sorted(p.spec.node_name for p in pods(core, "j")) == ["n1", "n2", "n2"]


def test_a_pod_that_fits_nowhere_stays_pending_unschedulable(kube, core, batch):
    kube.add_node("n1", gpus=4)
    batch.create_namespaced_job("default", job_body("big", gpus=8))
    (pod,) = pods(core, "big")
    assert pod.spec.node_name is None and pod.status.phase == "Pending"
    cond = next(c for c in pod.status.conditions if c.type == "PodScheduled")
    assert (cond.status, cond.reason) == ("False", "Unschedulable")


def test_a_pending_pod_binds_when_room_frees(kube, core, batch):
    kube.add_node("n1", gpus=8)
    batch.create_namespaced_job("default", job_body("first", gpus=6))
    batch.create_namespaced_job("default", job_body("second", gpus=4))
    assert pods(core, "second")[0].spec.node_name is None
    kube.set_pod_phase("default", pods(core, "first")[0].metadata.name, "Succeeded")
    assert pods(core, "second")[0].spec.node_name == "n1"


def test_node_affinity_is_honoured(kube, core, batch):
    for name in ("n1", "n2", "n3"):
        kube.add_node(name, gpus=8)
    batch.create_namespaced_job(
        "default", job_body("j", gpus=1, parallelism=2, affinity=pin(["n3"]))
    )
    assert [p.spec.node_name for p in pods(core, "j")] == ["n3", "n3"]


def test_node_selector_selects_the_gpu_type(kube, core, batch):
    kube.add_node("n1", gpus=8, labels={"nvidia.com/gpu.product": "V100"})
    kube.add_node("n2", gpus=8, labels={"nvidia.com/gpu.product": "A100"})
    batch.create_namespaced_job(
        "default", job_body("j", nodeSelector={"nvidia.com/gpu.product": "A100"})
    )
    assert pods(core, "j")[0].spec.node_name == "n2"


def test_cordoned_tainted_and_not_ready_nodes_are_skipped(kube, core, batch):
    kube.add_node("a-cordoned", unschedulable=True)
    kube.add_node("b-tainted", taints=[Taint("maintenance")])
    kube.add_node("c-notready", ready=False)
    kube.add_node("d-good")
    batch.create_namespaced_job("default", job_body("j"))
    assert pods(core, "j")[0].spec.node_name == "d-good"


def test_a_tolerated_taint_does_not_block(kube, core, batch):
    kube.add_node("n1", taints=[Taint("nvidia.com/gpu", value="present")])
    batch.create_namespaced_job(
        "default",
        job_body(
            "j",
            tolerations=[{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
        ),
    )
    assert pods(core, "j")[0].spec.node_name == "n1"


def test_cpu_and_memory_requests_count(kube, core):
    kube.add_node("n1", gpus=8, cpu="2", memory="4Gi")
    for name in ("a", "b"):
        body = pod_body(name)
        body["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "1500m", "memory": "1Gi"}}
        core.create_namespaced_pod("default", body)
    assert core.read_namespaced_pod("a", "default").spec.node_name == "n1"
    assert core.read_namespaced_pod("b", "default").spec.node_name is None


def test_pod_phases_drive_job_status_to_complete(kube, core, batch):
    kube.add_node("n1", gpus=8)
    batch.create_namespaced_job("default", job_body("j", parallelism=2))
    names = [p.metadata.name for p in pods(core, "j")]
    for name in names:
        kube.set_pod_phase("default", name, "Running")
    assert batch.read_namespaced_job("j", "default").status.ready == 2
    kube.set_pod_phase("default", names[0], "Succeeded")
    status = batch.read_namespaced_job("j", "default").status
    assert (status.active, status.succeeded) == (1, 1) and status.completion_time is None
    kube.set_pod_phase("default", names[1], "Succeeded")
    status = batch.read_namespaced_job("j", "default").status
    assert status.succeeded == 2 and not status.active
    assert status.completion_time is not None
    assert [(c.type, c.status) for c in status.conditions] == [("Complete", "True")]


def test_a_failed_pod_beyond_the_backoff_limit_fails_the_job(kube, core, batch):
    kube.add_node("n1", gpus=8)
    batch.create_namespaced_job("default", job_body("j", parallelism=2))
    first, second = (p.metadata.name for p in pods(core, "j"))
    kube.set_pod_phase("default", first, "Failed", exit_code=137)
    status = batch.read_namespaced_job("j", "default").status
    assert status.failed == 1
    failed = next(c for c in status.conditions if c.type == "Failed")
    assert (failed.status, failed.reason) == ("True", "BackoffLimitExceeded")
    with pytest.raises(client.ApiException):
        core.read_namespaced_pod(second, "default")  # the other active pod is stopped


def test_a_failed_pod_within_the_backoff_limit_is_replaced(kube, core, batch):
    kube.add_node("n1", gpus=8)
    body = job_body("j")
    body["spec"]["backoffLimit"] = 2
    batch.create_namespaced_job("default", body)
    (first,) = pods(core, "j")
    kube.set_pod_phase("default", first.metadata.name, "Failed", exit_code=1)
    phases = sorted(p.status.phase for p in pods(core, "j"))
    assert phases == ["Failed", "Pending"]
    assert batch.read_namespaced_job("j", "default").status.active == 1


def test_the_kubelet_reports_container_states(kube, core, batch):
    kube.add_node("n1")
    batch.create_namespaced_job("default", job_body("j"))
    (pod,) = pods(core, "j")
    kube.set_pod_phase("default", pod.metadata.name, "Failed", exit_code=3)
    state = core.read_namespaced_pod(pod.metadata.name, "default").status.container_statuses[0]
    assert state.state.terminated.exit_code == 3 and state.state.terminated.reason == "Error"


def test_an_unbound_pod_cannot_run(kube, core, batch):
    batch.create_namespaced_job("default", job_body("j"))
    (pod,) = pods(core, "j")
    with pytest.raises(ValueError, match="not bound"):
        kube.set_pod_phase("default", pod.metadata.name, "Running")


def test_suspending_deletes_active_pods_and_resuming_recreates_them(kube, core, batch):
    kube.add_node("n1", gpus=8)
    batch.create_namespaced_job("default", job_body("j", parallelism=2))
    assert len(pods(core, "j")) == 2
    batch.patch_namespaced_job("j", "default", {"spec": {"suspend": True}})
    assert pods(core, "j") == []
    job = batch.read_namespaced_job("j", "default")
    assert not job.status.active and job.status.start_time is None
    batch.patch_namespaced_job("j", "default", {"spec": {"suspend": False}})
    assert len(pods(core, "j")) == 2
    conds = batch.read_namespaced_job("j", "default").status.conditions
    assert [(c.type, c.status, c.reason) for c in conds] == [("Suspended", "False", "JobResumed")]


def test_deleting_a_job_in_the_background_deletes_its_pods(kube, core, batch):
    kube.add_node("n1", gpus=8)
    batch.create_namespaced_job("default", job_body("j", parallelism=2))
    batch.delete_namespaced_job("j", "default", propagation_policy="Background")
    assert core.list_namespaced_pod("default").items == []


def test_pin_and_unsuspend_in_one_patch_lands_on_the_pinned_node(kube, core, batch):
    for name in ("n1", "n2"):
        kube.add_node(name, gpus=8)
    batch.create_namespaced_job("default", job_body("j", gpus=4, parallelism=2, suspend=True))
    batch.patch_namespaced_job(
        "j",
        "default",
        {"spec": {"suspend": False, "template": {"spec": {"affinity": pin(["n2"])}}}},
    )
    assert [p.spec.node_name for p in pods(core, "j")] == ["n2", "n2"]
