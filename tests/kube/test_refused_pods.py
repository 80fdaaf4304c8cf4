"""Pods refused at creation (PodSecurity ``restricted`` here; ResourceQuota and webhooks look
the same: a ``FailedCreate`` Event on the Job), and the pods Starburst writes passing it."""

from __future__ import annotations

import json

import pytest
from kubernetes import client

from starburst.core.job import Job
from tests.kube.adapter_support import on, queued_job
from tests.kube.builders import pod_body
from tests.kubeapi.podsecurity import ENFORCE
from tests.support.waiting import wait_for


@pytest.fixture
def locked(core: client.CoreV1Api) -> str:
    core.create_namespace({"metadata": {"name": "locked", "labels": {ENFORCE: "restricted"}}})
    return "locked"


def test_a_restricted_namespace_refuses_a_plain_pod_with_the_plugins_message(core, locked):
    with pytest.raises(client.ApiException) as caught:
        core.create_namespaced_pod(locked, pod_body("plain"))
    assert caught.value.status == 403
    message = json.loads(caught.value.body)["message"]
    assert message.startswith(
        'pods "plain" is forbidden: violates PodSecurity '
        '"restricted:latest": allowPrivilegeEscalation != false'
    )
    for check in ("unrestricted capabilities", "runAsNonRoot != true", "seccompProfile"):
        assert check in message
    core.create_namespaced_pod("default", pod_body("plain"))  # elsewhere: fine


def test_a_started_job_whose_pods_are_refused_ends_and_frees_its_placement(
    kube, core, batch, make_cluster, locked
):
    kube.add_node("n1", gpus=8)
    cluster = make_cluster()
    batch.create_namespaced_job(locked, queued_job("open", gpus=4))
    (job,) = wait_for(cluster.submissions)
    wait_for(lambda: cluster.snapshot().capacity.nodes)
    cluster.start(job, on(cluster.snapshot(), ("n1", 4)), "fits")
    (end,) = wait_for(cluster.ended)
    assert (end.job_id, end.succeeded) == ("locked/open", False)
    assert end.reason.startswith('its pods were refused: pods "open-')
    assert 'violates PodSecurity "restricted:latest"' in end.reason
    assert cluster.snapshot().capacity.free_gpus == 8 and not cluster.snapshot().running
    stored = wait_for(lambda: (j := batch.read_namespaced_job("open", locked)).spec.suspend and j)
    assert stored.metadata.annotations["starburst.io/state"] == "failed"
    # the Stopped Event is written after the suspending patch the wait above saw
    assert wait_for(
        lambda: (
            {
                (e.type, e.reason)
                for e in core.list_namespaced_event(
                    locked, field_selector="involvedObject.name=open"
                ).items
            }
            >= {("Warning", "FailedCreate"), ("Warning", "Stopped")}
        )
    )


def test_the_jobs_starburst_creates_pass_podsecurity_restricted(kube, make_cluster, locked):
    kube.add_node("n1", gpus=8)
    kube.add_node("n2", gpus=8)
    cluster = make_cluster(namespace=locked)
    wait_for(lambda: len(cluster.snapshot().capacity.nodes) == 2)
    job = Job(
        "sub-1",
        0.0,
        16,
        pods=2,
        extra={"command": "python train.py", "image": "pytorch/pytorch:2.4"},
    )
    cluster.start(job, on(cluster.snapshot(), ("n1", 8), ("n2", 8)), "fits")
    pods = wait_for(
        lambda: (
            len(
                p := [
                    x for x in kube.store.items(kube_pods()) if x["metadata"]["namespace"] == locked
                ]
            )
            == 2
            and p
        )
    )
    assert all(p["spec"]["securityContext"]["runAsNonRoot"] for p in pods)
    assert wait_for(
        lambda: (
            sorted(x["spec"].get("nodeName") or "-" for x in kube.store.items(kube_pods()))
            == ["n1", "n2"]
        )
    )
    assert not cluster.ended()


def kube_pods():
    from tests.kubeapi.resources import BY_PATH

    return BY_PATH[("", "v1", "pods")]


def test_a_refusal_retried_with_success_is_not_a_failure(kube, core, batch, make_cluster):
    """A webhook timed out once, then the Job controller made every pod: the job runs on."""
    kube.add_node("n1", gpus=8)
    cluster = make_cluster()
    batch.create_namespaced_job("default", queued_job("flaky", gpus=2, pods=2))
    (job,) = wait_for(cluster.submissions)
    wait_for(lambda: cluster.snapshot().capacity.nodes)
    cluster.start(job, on(cluster.snapshot(), ("n1", 4)), "fits")
    wait_for(lambda: len(kube.pods_of("default", "flaky")) == 2)
    first = kube.pods_of("default", "flaky")[0]["metadata"]["name"]
    kube.set_pod_phase("default", first, "Succeeded")  # one pod done: one unfinished left
    uid = batch.read_namespaced_job("flaky", "default").metadata.uid
    core.create_namespaced_event(
        "default",
        {
            "metadata": {"generateName": "flaky."},
            "reason": "FailedCreate",
            "type": "Warning",
            "message": "Error creating: Internal error occurred: failed calling webhook: timeout",
            "involvedObject": {
                "apiVersion": "batch/v1",
                "kind": "Job",
                "name": "flaky",
                "namespace": "default",
                "uid": uid,
            },
        },
    )
    events = next(i for i in cluster.informers if i.name == "events")
    wait_for(lambda: events.cache)  # this life saw the Event...
    restarted = make_cluster()  # ...and a new controller life reads it in its first list
    wait_for(lambda: restarted.snapshot().running)
    assert not cluster.ended() and not restarted.ended()
    assert [r.job.id for r in restarted.snapshot().running] == ["default/flaky"]
