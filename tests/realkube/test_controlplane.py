"""The real control plane itself: authentication, RBAC, PodSecurity, audit, and the fake
kubelet driving the real scheduler and Job controller."""

from __future__ import annotations

import json

import pytest
from kubernetes import client

from tests.realkube.jobs import suspended_job
from tests.support.controlplane import RealKube
from tests.support.kubelet import FakeKubelet
from tests.support.waiting import wait_for


def test_a_service_account_token_is_authenticated_and_rbac_decides(
    real_kube: RealKube, real_namespace: str
) -> None:
    bare = real_kube.service_account(real_namespace, "nobody")
    reader = real_kube.service_account(real_namespace, "reader", role="view")
    with real_kube.api_client(bare.token) as api:
        with pytest.raises(client.ApiException) as denied:
            client.CoreV1Api(api).list_namespaced_pod(real_namespace)
        assert denied.value.status == 403
        assert bare.username in denied.value.body
    with real_kube.api_client(reader.token) as api:
        assert client.CoreV1Api(api).list_namespaced_pod(real_namespace).items == []
    with real_kube.api_client("not-a-token") as api:
        with pytest.raises(client.ApiException) as unknown:
            client.CoreV1Api(api).list_namespaced_pod(real_namespace)
        assert unknown.value.status == 401
    assert wait_for(
        lambda: any(
            e["verb"] == "list"
            and e["objectRef"]["resource"] == "pods"
            and e["responseStatus"]["code"] == 403
            for e in real_kube.audit_events(user=bare.username)
        )
    )
    assert all(
        e["user"]["username"] == reader.username
        for e in real_kube.audit_events(user=reader.username)
    )


def test_pod_security_restricted_is_enforced(core: client.CoreV1Api, real_namespace: str) -> None:
    loose = {
        "metadata": {"name": "loose"},
        "spec": {"containers": [{"name": "main", "image": "busybox"}]},
    }
    with pytest.raises(client.ApiException) as refused:
        core.create_namespaced_pod(real_namespace, loose)
    assert refused.value.status == 403
    message = json.loads(refused.value.body)["message"]
    assert 'violates PodSecurity "restricted:latest"' in message


def test_the_fake_kubelet_runs_a_jobs_pods_and_the_job_controller_completes_it(
    kubelet: FakeKubelet,
    core: client.CoreV1Api,
    batch: client.BatchV1Api,
    real_namespace: str,
) -> None:
    kubelet.add_node("gpu-0", gpus=8)
    node = core.read_node("gpu-0")
    assert node.status.allocatable["nvidia.com/gpu"] == "8" and not node.spec.taints
    assert [c.status for c in node.status.conditions if c.type == "Ready"] == ["True"]
    batch.create_namespaced_job(real_namespace, suspended_job("two", gpus=4, pods=2, suspend=False))
    assert wait_for(
        lambda: (
            [p["status"].get("phase") for p in kubelet.pods_of(real_namespace, "two")]
            == ["Running"] * 2
        )
    )
    assert {p["spec"]["nodeName"] for p in kubelet.pods_of(real_namespace, "two")} == {"gpu-0"}
    assert kubelet.finish_job(real_namespace, "two") == 2
    assert wait_for(
        lambda: (batch.read_namespaced_job("two", real_namespace).status.succeeded or 0) == 2
    )


def test_a_failed_pod_fails_the_job(
    kubelet: FakeKubelet, batch: client.BatchV1Api, real_namespace: str
) -> None:
    kubelet.add_node("gpu-0", gpus=8)
    batch.create_namespaced_job(real_namespace, suspended_job("bad", suspend=False))
    assert wait_for(
        lambda: (
            [p["status"].get("phase") for p in kubelet.pods_of(real_namespace, "bad")]
            == ["Running"]
        )
    )
    kubelet.finish_job(real_namespace, "bad", succeeded=False)

    def failed() -> bool:
        job = batch.read_namespaced_job("bad", real_namespace)
        return any(c.type == "Failed" and c.status == "True" for c in job.status.conditions or ())

    assert wait_for(failed)
