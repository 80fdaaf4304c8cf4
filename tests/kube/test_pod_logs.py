"""Pod output: the stand-in's ``pods/log`` subresource (official client), and the adapter's
``job_logs`` that ``starburst logs`` reads for a Job that ran on-prem."""

from __future__ import annotations

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from starburst.core.job import Job
from tests.kube.adapter_support import queued_job
from tests.kube.builders import job_body
from tests.support.waiting import wait_for


def test_the_log_subresource_serves_what_the_container_printed(kube, core, batch) -> None:
    kube.add_node("n1", gpus=8)
    batch.create_namespaced_job("default", job_body("j", gpus=1))
    (pod,) = kube.pods_of("default", "j")
    name = pod["metadata"]["name"]
    with pytest.raises(ApiException) as waiting:  # Pending: nothing to read yet
        core.read_namespaced_pod_log(name, "default")
    assert waiting.value.status == 400 and "waiting to start" in waiting.value.body
    kube.set_pod_phase("default", name, "Running")
    kube.write_pod_log("default", name, "epoch 1\nepoch 2\nepoch 3\n")
    assert core.read_namespaced_pod_log(name, "default") == "epoch 1\nepoch 2\nepoch 3\n"
    assert core.read_namespaced_pod_log(name, "default", tail_lines=2) == "epoch 2\nepoch 3\n"
    assert core.read_namespaced_pod_log(name, "default", tail_lines=0) == ""
    with pytest.raises(ApiException) as unknown:
        core.read_namespaced_pod_log("no-such-pod", "default")
    assert unknown.value.status == 404


def test_job_logs_gather_every_pod_of_the_job(kube, batch, cluster) -> None:
    kube.add_node("n1", gpus=8)
    job = queued_job("train", gpus=1, pods=2)
    job["spec"]["suspend"] = False
    batch.create_namespaced_job("default", job)
    pods = sorted(
        p["metadata"]["name"]
        for p in wait_for(
            lambda: len(kube.pods_of("default", "train")) == 2 and kube.pods_of("default", "train")
        )
    )
    kube.set_pod_phase("default", pods[0], "Running")
    kube.write_pod_log("default", pods[0], "loss 0.9\nloss 0.5\n")
    stored = Job(
        "default/train", 0.0, 2, pods=2, extra={"namespace": "default", "k8s_name": "train"}
    )
    text = cluster.job_logs(stored, 1)
    assert text == (
        f"==> pod {pods[0]} <==\nloss 0.5\n"
        f"==> pod {pods[1]} <==\n(no output yet: the container has not started)\n"
    )
    ghost = cluster.job_logs(Job("default/ghost", 0.0, 1), None)
    assert ghost.startswith("(job sb-default-ghost-") and "has no pods" in ghost


def test_the_api_alone_reads_pod_output_without_watching(
    kube, api: client.ApiClient, clock
) -> None:
    from starburst.adapters.kubernetes.cluster import KubernetesCluster

    kube.add_node("n1", gpus=8)
    batch = client.BatchV1Api(api)
    job = queued_job("eval", gpus=1)
    job["spec"]["suspend"] = False
    batch.create_namespaced_job("default", job)
    (pod,) = wait_for(lambda: kube.pods_of("default", "eval"))
    kube.set_pod_phase("default", pod["metadata"]["name"], "Succeeded")
    kube.write_pod_log("default", pod["metadata"]["name"], "accuracy 0.93\n")
    unwatched = KubernetesCluster(api, clock)  # as `starburst api` builds it: no informers
    stored = Job("default/eval", 0.0, 1, extra={"namespace": "default", "k8s_name": "eval"})
    assert unwatched.job_logs(stored).endswith("accuracy 0.93\n")
