"""The adapter's watch failures on the real control plane: no change lost, none started twice.

The stand-in versions are ``tests/kube/test_adapter_resilience.py``; here the server is a real
kube-apiserver, and the adapter (as the ServiceAccount ``rbac.yaml`` makes) reaches it through
a loopback TCP proxy (``tests.support.tcpproxy``) that a test can cut or take down, so:
- *cut*: every connection dropped mid-stream, the cluster changing while the adapter cannot
  reach it; it resumes from its resourceVersion (within the server's watch cache) and relists
  nothing;
- *server-ended watches*: the server closes each watch at its ``timeoutSeconds``; the adapter
  resumes each time, relisting nothing;
- *410 Gone*: the proxy fails over to a second API server on the same etcd (``replica()``),
  whose watch cache starts at etcd's current revision and so has forgotten the adapter's
  resourceVersion (what a client sees after an API server restart or failover); the real
  server answers 410, the adapter relists and notices every change it missed;
- *cordon* (and a ``NoSchedule`` taint): the node leaves the capacity; a Job is placed on
  the other node, where the real scheduler binds its pod.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from kubernetes import client

from starburst.adapters.kubernetes import KubernetesCluster, KubernetesSettings
from starburst.adapters.kubernetes.informer import Informer
from starburst.adapters.kubernetes.retry import Backoff
from starburst.core.capacity import PlacementStrategy
from tests.kube.adapter_support import on, submitted, waiting_jobs
from tests.realkube.jobs import suspended_job
from tests.realkube.shipped import shipped_cluster_role
from tests.support.clock import ManualClock
from tests.support.controlplane import RealKube
from tests.support.kubelet import FakeKubelet
from tests.support.tcpproxy import TcpProxy
from tests.support.waiting import wait_for


@dataclass
class Through:
    """An adapter reaching the real API server through ``proxy``, as ``user``."""

    cluster: KubernetesCluster
    proxy: TcpProxy
    ns: str
    user: str

    def informer(self, name: str) -> Informer:
        return next(i for i in self.cluster.informers if i.name == name)

    def requests(self, verb: str, resource: str, stage: str, real: RealKube) -> int:
        return sum(
            1
            for e in real.audit_events(user=self.user)
            if e["verb"] == verb
            and (e.get("objectRef") or {}).get("resource") == resource
            and e["stage"] == stage
        )


@pytest.fixture
def through(real_kube: RealKube, real_namespace: str) -> Iterator[Callable[..., Through]]:
    made: list[tuple[KubernetesCluster, TcpProxy, Any]] = []
    role = shipped_cluster_role()
    real_kube.apply_cluster_role(role)
    creds = real_kube.service_account(real_namespace, "sb", cluster_role=role["metadata"]["name"])

    def make(watch_timeout: int = 60) -> Through:
        proxy = TcpProxy(real_kube.port).start()
        api = real_kube.api_client(creds.token, url=proxy.url)
        settings = KubernetesSettings(
            namespace=real_namespace,
            watch_timeout=watch_timeout,
            backoff=Backoff(base=0.05, cap=0.5),
        )
        cluster = KubernetesCluster(api, ManualClock(1_800_000_000.0), settings).start_watching()
        made.append((cluster, proxy, api))
        assert cluster.wait_synced(30)
        return Through(cluster, proxy, real_namespace, creds.username)

    yield make
    for cluster, proxy, api in made:
        cluster.close()
        proxy.close()
        api.close()


def names(jobs: Any) -> list[str]:
    return sorted(j.name for j in jobs)


def test_a_cut_connection_resumes_and_sees_what_changed_meanwhile(
    through: Callable[..., Through], batch: client.BatchV1Api
) -> None:
    t = through()
    batch.create_namespaced_job(t.ns, suspended_job("a"))
    assert names(submitted(t.cluster, 1).values()) == ["a"]
    jobs = t.informer("jobs")
    assert t.proxy.down() >= 1  # every connection dropped mid-stream, and no way back...
    assert wait_for(lambda: jobs.errors >= 1)  # ...as the jobs watch found when it retried
    batch.delete_namespaced_job("a", t.ns)  # the cluster changes meanwhile
    batch.create_namespaced_job(t.ns, suspended_job("b"))
    t.proxy.up()
    assert names(submitted(t.cluster, 1).values()) == ["b"]
    ends: list[Any] = []
    assert wait_for(lambda: bool(ends.extend(t.cluster.ended()) or ends))
    assert [(e.job_id, e.reason) for e in ends] == [(f"{t.ns}/a", "its Kubernetes Job was deleted")]
    assert jobs.lists == 1  # resumed from its resourceVersion: the server still had it


def test_watches_the_server_ends_resume_without_relisting(
    through: Callable[..., Through], batch: client.BatchV1Api, real_kube: RealKube
) -> None:
    t = through(watch_timeout=1)  # the server closes every watch after a second
    jobs = t.informer("jobs")

    def ended_by_server() -> int:
        return t.requests("watch", "jobs", "ResponseComplete", real_kube)

    assert wait_for(lambda: ended_by_server() >= 2, timeout=60)
    batch.create_namespaced_job(t.ns, suspended_job("late"))
    assert names(submitted(t.cluster, 1).values()) == ["late"]
    seen = ended_by_server()
    assert wait_for(lambda: ended_by_server() >= seen + 2, timeout=60)
    assert jobs.lists == 1 and jobs.errors == 0
    assert [j.name for j in waiting_jobs(t.cluster)] == ["late"]


def test_a_failover_to_a_replica_that_forgot_the_version_relists_and_loses_nothing(
    through: Callable[..., Through],
    kubelet: FakeKubelet,
    batch: client.BatchV1Api,
    real_kube: RealKube,
) -> None:
    kubelet.add_node("gpu-a", gpus=8)
    t = through()
    batch.create_namespaced_job(t.ns, suspended_job("queued-then-deleted"))
    batch.create_namespaced_job(t.ns, suspended_job("running-then-deleted"))
    offered = submitted(t.cluster, 2)
    assert wait_for(lambda: bool(t.cluster.snapshot().capacity.nodes))
    running = offered["running-then-deleted"]
    t.cluster.start(running, on(t.cluster.snapshot(), ("gpu-a", 1)), "go")
    jobs = t.informer("jobs")
    assert t.proxy.down() >= 1
    assert wait_for(lambda: jobs.errors >= 1)
    known = jobs.resource_version
    batch.delete_namespaced_job("queued-then-deleted", t.ns)
    batch.delete_namespaced_job("running-then-deleted", t.ns, propagation_policy="Background")
    batch.create_namespaced_job(t.ns, suspended_job("new"))

    with real_kube.replica() as port:
        # the replica has forgotten the adapter's resourceVersion: 410 Gone, for real
        assert expired(real_kube, port, f"/apis/batch/v1/namespaces/{t.ns}/jobs", known)

        t.proxy.up(port)  # the adapter's address now leads to the replica
        ends: list[Any] = []
        assert wait_for(lambda: bool(ends.extend(t.cluster.ended()) or len(ends) == 2))
        assert sorted((e.job_id, e.succeeded, e.reason) for e in ends) == [
            (f"{t.ns}/queued-then-deleted", False, "its Kubernetes Job was deleted"),
            (f"{t.ns}/running-then-deleted", False, "its Kubernetes Job was deleted"),
        ]

        assert names(submitted(t.cluster, 1).values()) == ["new"]
        assert jobs.lists == 2  # one relist, after the 410
        assert [j.name for j in waiting_jobs(t.cluster)] == ["new"]
        # the deleted Job's GPU is free (once the garbage collector took its pod)
        assert wait_for(lambda: t.cluster.snapshot().capacity.free_gpus == 8)
        t.proxy.up(real_kube.port)  # back to the first server, before the replica stops
        t.proxy.cut()  # (a replica stopping waits for its open watches to end)


def expired(real: RealKube, port: int, path: str, resource_version: str | None) -> bool:
    """A watch from ``resource_version`` on the server at ``port`` answers 410 Gone (after
    the replica's watch cache is ready: until then it answers 429, retry later)."""
    answer: list[Any] = []

    def once() -> bool:
        try:
            body = real.request(
                "GET",
                f"{path}?watch=1&resourceVersion={resource_version}&timeoutSeconds=1",
                port=port,
            )
        except OSError as err:  # urllib's HTTPError is an OSError: 429 while initialising
            answer[:] = [err]
            return getattr(err, "code", None) != 429
        answer[:] = [body]
        return True

    assert wait_for(once, timeout=60), answer
    body = answer[0]
    assert isinstance(body, dict), body  # one event: the error
    assert body["type"] == "ERROR" and body["object"]["code"] == 410, body
    assert body["object"]["reason"] == "Expired", body
    return True


def test_a_cordoned_or_tainted_node_leaves_the_capacity_and_gets_no_pods(
    through: Callable[..., Through],
    kubelet: FakeKubelet,
    batch: client.BatchV1Api,
    core: client.CoreV1Api,
) -> None:
    for node in ("gpu-a", "gpu-b", "gpu-c"):
        kubelet.add_node(node, gpus=8)
    t = through()
    batch.create_namespaced_job(t.ns, suspended_job("waits", gpus=8))
    job = submitted(t.cluster, 1)["waits"]
    assert wait_for(lambda: t.cluster.snapshot().capacity.total_gpus == 24)
    core.patch_node("gpu-a", {"spec": {"unschedulable": True}})  # kubectl cordon gpu-a
    taint = {"key": "maintenance", "value": "disk", "effect": "NoSchedule"}
    core.patch_node("gpu-b", {"spec": {"taints": [taint]}})  # kubectl taint ...:NoSchedule
    assert wait_for(lambda: t.cluster.snapshot().capacity.total_gpus == 8)
    placement = t.cluster.snapshot().capacity.place(job, PlacementStrategy.FIRST_FIT)
    assert placement is not None
    assert [p.node_name for p in placement] == ["gpu-c"]
    t.cluster.start(job, placement, "gpu-a is cordoned, gpu-b tainted")
    assert wait_for(lambda: [p["spec"].get("nodeName") for p in kubelet.pods_of(t.ns, "waits")]
                    == ["gpu-c"])  # fmt: skip
    core.patch_node("gpu-a", {"spec": {"unschedulable": False}})  # kubectl uncordon gpu-a
    assert wait_for(lambda: t.cluster.snapshot().capacity.free_gpus == 8)
