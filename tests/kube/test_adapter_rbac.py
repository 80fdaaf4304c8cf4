"""The RBAC file is the one source of the controller's access, complete and nothing more.

``rbac.yaml`` is a multi-document YAML (the Helm chart renders it): a ServiceAccount and a
ClusterRole bound to it.
The completeness test records every request the adapter really makes while it does all it
can do (watch, start on one and several nodes, create a submission's Job, burst, annotate,
cancel, give up a Job whose pods were refused, read logs, hold the Lease), through the API
stand-in's audit list, and checks each (verb, resource) is granted.
"""

from __future__ import annotations

from collections.abc import Iterator
from importlib import resources
from typing import Any

import pytest
import yaml

from starburst.adapters.kubernetes import KubernetesCluster, KubernetesSettings
from starburst.adapters.kubernetes.lease import LeaseLock
from starburst.adapters.kubernetes.retry import Backoff
from starburst.core.job import Job
from tests.kube.adapter_support import on, queued_job, waiting_jobs
from tests.kubeapi.podsecurity import ENFORCE
from tests.support.waiting import wait_for

AGENT = "starburst-rbac-test"
NAMESPACE = "starburst"  # where the ServiceAccount and the Lease live
#: calls on paths the scenario below cannot force deterministically (a 409 on a start)
UNFORCED = {("get", "batch", "jobs")}
#: Kueue's kinds, which the stand-in does not serve: the Kueue tier exercises them with the
#: shipped ClusterRole and asserts nothing was denied (tests/kueue/test_burst_policy.py)
KUEUE = {
    ("list", "kueue.x-k8s.io", "workloads"),
    ("patch", "kueue.x-k8s.io", "workloads"),
    ("patch", "kueue.x-k8s.io", "workloads/status"),
    ("list", "kueue.x-k8s.io", "clusterqueues"),
    ("list", "kueue.x-k8s.io", "localqueues"),
}


def documents() -> dict[str, dict[str, Any]]:
    text = resources.files("starburst.adapters.kubernetes").joinpath("rbac.yaml").read_text()
    docs = [d for d in yaml.safe_load_all(text) if d]
    kinds = [d["kind"] for d in docs]
    assert kinds == ["ServiceAccount", "ClusterRole", "ClusterRoleBinding"]
    return {d["kind"]: d for d in docs}


def rules_of(role: dict[str, Any]) -> set[tuple[str, str, str]]:
    return {
        (verb, group, resource)
        for rule in role["rules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }


def test_the_file_binds_its_roles_to_its_service_account():
    docs = documents()
    account = docs["ServiceAccount"]["metadata"]
    subject = {"kind": "ServiceAccount", "name": account["name"], "namespace": account["namespace"]}
    binding = docs["ClusterRoleBinding"]
    assert binding["subjects"] == [subject]
    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "ClusterRole",
        "name": docs["ClusterRole"]["metadata"]["name"],
    }


def test_nothing_destructive_is_granted():
    assert not {v for v, _, _ in rules_of(documents()["ClusterRole"])} & {
        "delete",
        "deletecollection",
        "*",
        "escalate",
        "bind",
        "impersonate",
    }


@pytest.fixture
def cluster(kube, clock) -> Iterator[KubernetesCluster]:
    """The adapter on a client that signs its requests (User-Agent) from the first one."""
    api = kube.api_client()
    api.user_agent = AGENT
    adapter = KubernetesCluster(api, clock, KubernetesSettings(backoff=Backoff(base=0.05, cap=0.5)))
    try:
        yield adapter.start_watching()
    finally:
        adapter.close()
        api.close()


def test_every_request_the_adapter_makes_is_granted(kube, core, batch, cluster):
    core.create_namespace({"metadata": {"name": NAMESPACE}})
    core.create_namespace({"metadata": {"name": "locked", "labels": {ENFORCE: "restricted"}}})
    for name in ("n1", "n2"):
        kube.add_node(name, gpus=8)
    api = cluster._core.api_client
    wait_for(lambda: len(cluster.snapshot().capacity.nodes) == 2)
    for name, gpus, pods in (("multi", 4, 2), ("away", 2, 1), ("gone", 1, 1)):
        batch.create_namespaced_job("default", queued_job(name, gpus=gpus, pods=pods))
    batch.create_namespaced_job("locked", queued_job("refused", gpus=1))
    jobs = {j.name: j for j in wait_for(lambda: _all(cluster, 4))}
    cluster.start(jobs["multi"], on(cluster.snapshot(), ("n1", 4), ("n2", 4)), "fits")
    wait_for(lambda: all(p["spec"].get("nodeName") for p in kube.pods_of("default", "multi")))
    cluster.note_waiting(jobs["away"].id, 60.0, 600.0, "waiting 0s of a 1m budget")
    cluster.burst(jobs["away"].id, "aws:us-east-1", "budget spent", "sky-1", 3.2)
    cluster.start(jobs["gone"], on(cluster.snapshot(), ("n1", 1)), "fits")
    cluster.cancel(jobs["gone"].id)
    cluster.start(jobs["refused"], on(cluster.snapshot(), ("n2", 1)), "fits")
    wait_for(lambda: [e for e in cluster.ended() if e.job_id == "locked/refused"])
    submission = Job("sub-1", 0.0, 1, extra={"command": "python x.py", "image": "py:3"})
    cluster.start(submission, on(cluster.snapshot(), ("n1", 1)), "fits")
    pod = kube.pods_of("default", "multi")[0]["metadata"]["name"]
    kube.set_pod_phase("default", pod, "Running")
    kube.write_pod_log("default", pod, "hi\n")
    assert "hi" in cluster.job_logs(jobs["multi"])
    lock = LeaseLock(api, NAMESPACE, "starburst-leader", "me", lambda: 1, duration=5.0)
    assert lock.try_acquire() == 1
    lock.release()
    lock.close()

    made = {
        (verb, group, resource, ns)
        for verb, group, resource, ns, agent in kube.audit
        if agent == AGENT
    }
    granted = rules_of(documents()["ClusterRole"])
    assert sorted(m for m in made if m[:3] not in granted) == []
    # the scenario exercised every grant (so the list is also not longer than needed)
    assert granted == {m[:3] for m in made} | UNFORCED | KUEUE


def _all(cluster: Any, count: int) -> list[Job] | None:
    seen = waiting_jobs(cluster)
    return seen if len(seen) == count else None
