"""One contract for every ``Cluster`` port implementation: the same scenarios, each backend.

Backends:
- ``sim``: the simulator's in-memory ``SimCluster`` (jobs end when the clock passes their
  runtime, so ``finish`` advances the clock);
- ``local``: ``LocalCluster``, the default backend: one node of 8 GPU slots, every job a real
  process group that waits for a file ``finish`` creates;
- ``kubernetes``: ``KubernetesCluster`` on the project's Kubernetes API stand-in, driven through
  the official client (``finish`` reports the Job's Pods Succeeded, as a kubelet would);
- ``kubernetes-real``: the same adapter on a real control plane: by default the one the test
  set-up builds and starts (``tests.support.controlplane``: real etcd, kube-apiserver, Job
  controller and scheduler; its nodes and pod phases come from ``tests.support.kubelet``), in a
  fresh namespace that enforces PodSecurity ``restricted``, the adapter acting as the
  ServiceAccount ``rbac.yaml`` makes (a verb missing from it fails the test). With
  ``STARBURST_TEST_KUBECONFIG`` naming a kubeconfig, a cluster of your own instead: its nodes
  and kubelets cannot be scripted, so only the scenarios that need neither run there.

The contract: the snapshot shows every node and its free GPUs; ``start`` takes the placement's
GPUs at once and is idempotent; a finished job is reported by ``ended`` exactly once and gives
its GPUs back; ``cancel`` gives the GPUs back and the job leaves ``running`` (at once for the
simulator and Kubernetes; once its processes are gone for ``LocalCluster``, whose slots are
free exactly when the end is seen). A gang spanning nodes needs a backend with two nodes.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Protocol

import pytest

from starburst.core.capacity import Node, Part, Placement
from starburst.core.job import Job
from starburst.core.ports import Cluster, JobEnded
from tests.support.clock import ManualClock
from tests.support.waiting import wait_for

REAL = os.environ.get("STARBURST_TEST_KUBECONFIG")
NODES = [Node(f"node-{i}", 8, 64.0, 512 * 1024.0) for i in range(2)]


class Harness(Protocol):
    cluster: Cluster
    scriptable: bool
    nodes: list[Node]

    def submit(self, name: str, gpus: int, pods: int = 1, runtime: float = 100.0) -> Job: ...

    def finish(self, job: Job) -> None: ...

    def ended(self, count: int) -> list[JobEnded]: ...

    def placement(self, *parts: tuple[int, int]) -> Placement: ...


class SimHarness:
    scriptable = True
    nodes = NODES

    def __init__(self) -> None:
        from starburst.sim.cluster import SimCluster

        self.clock = ManualClock(1_800_000_000.0)
        self.cluster = SimCluster(NODES, self.clock)
        self._started: dict[str, float] = {}

    def submit(self, name: str, gpus: int, pods: int = 1, runtime: float = 100.0) -> Job:
        return Job(id=name, submit_time=self.clock.now(), gpus=gpus, runtime=runtime)

    def finish(self, job: Job) -> None:
        running = {r.job.id: r for r in self.cluster.snapshot().running}
        assert job.runtime is not None
        self.clock.set(max(self.clock.t, running[job.id].started_at + job.runtime))

    def ended(self, count: int) -> list[JobEnded]:
        return list(self.cluster.ended())

    def placement(self, *parts: tuple[int, int]) -> Placement:
        return tuple(Part(i, NODES[i].name, g, 0.0, 0.0) for i, g in parts)


#: what PodSecurity ``restricted`` asks of every container (the real tier enforces it)
RESTRICTED_CONTAINER = {
    "securityContext": {
        "allowPrivilegeEscalation": False,
        "runAsNonRoot": True,
        "runAsUser": 65534,
        "capabilities": {"drop": ["ALL"]},
        "seccompProfile": {"type": "RuntimeDefault"},
    }
}


class LocalHarness:
    """``LocalCluster`` with 8 slots; a job runs until ``finish`` creates its gate file."""

    scriptable = True

    def __init__(self, root: Path) -> None:
        from starburst.adapters.local import LocalCluster

        self.nodes = [Node("local", 8, 0.0, 0.0)]
        self.root = root
        self.clock = ManualClock(1_800_000_000.0)
        self.cluster = LocalCluster(root / "state", gpus=8, clock=self.clock, grace=1.0)

    def close(self) -> None:
        for running in self.cluster.snapshot().running:
            self.cluster.cancel(running.job.id)
        wait_for(lambda: not list(self.cluster.snapshot().running), what="every job stopped")

    def submit(self, name: str, gpus: int, pods: int = 1, runtime: float = 100.0) -> Job:
        gate = self.root / f"{name}.finish"
        command = f"until [ -e {gate} ]; do sleep 0.02; done"
        return Job(name, self.clock.now(), gpus, runtime=runtime, extra={"command": command})

    def finish(self, job: Job) -> None:
        (self.root / f"{job.id}.finish").touch()

    def ended(self, count: int) -> list[JobEnded]:
        seen: list[JobEnded] = []

        def enough() -> bool:
            seen.extend(self.cluster.ended())
            return len(seen) >= count

        wait_for(enough)
        return seen

    def placement(self, *parts: tuple[int, int]) -> Placement:
        return tuple(Part(i, self.nodes[i].name, g, 0.0, 0.0) for i, g in parts)


class KubeHarness:
    nodes = NODES

    def __init__(
        self,
        api_client: Any,
        kube: Any = None,
        namespace: str | None = None,
        users: Any = None,
    ) -> None:
        """``kube``: something with ``add_node``/``pods_of``/``set_pod_phase`` (the stand-in,
        or the real control plane's fake kubelet); None for a cluster of one's own.
        ``api_client`` is the adapter's identity; ``users`` (default: the same) is who
        creates the Jobs, as a cluster user would."""
        from starburst.adapters.kubernetes import KubernetesCluster, KubernetesSettings
        from starburst.adapters.kubernetes.retry import Backoff

        self.kube, self.api_client = kube, api_client
        self.scriptable = kube is not None
        self.namespace = namespace or (
            "default" if kube is not None else f"sb-contract-{uuid.uuid4().hex[:6]}"
        )
        from kubernetes import client

        self.batch = client.BatchV1Api(users or api_client)
        self.core = client.CoreV1Api(users or api_client)
        if kube is None:
            self.core.create_namespace({"metadata": {"name": self.namespace}})
        else:
            for node in NODES:
                kube.add_node(node.name, gpus=node.gpus, cpu="64", memory="512Gi")
        self.cluster = KubernetesCluster(
            api_client,
            ManualClock(1_800_000_000.0),
            KubernetesSettings(namespace=self.namespace, backoff=Backoff(base=0.05, cap=0.5)),
        )
        self.cluster.start_watching()
        assert self.cluster.wait_synced(30)
        self._offered: dict[str, Job] = {}

    def close(self) -> None:
        self.cluster.close()
        if self.kube is None:
            self.core.delete_namespace(self.namespace)

    def submit(self, name: str, gpus: int, pods: int = 1, runtime: float = 100.0) -> Job:
        per_pod = gpus // pods
        self.batch.create_namespaced_job(
            self.namespace,
            {
                "metadata": {"name": name, "labels": {"starburst.io/queue": "contract"}},
                "spec": {
                    "suspend": True,
                    "parallelism": pods,
                    "completions": pods,
                    "backoffLimit": 0,
                    "template": {
                        "spec": {
                            "restartPolicy": "Never",
                            "containers": [
                                {
                                    "name": "main",
                                    "image": "busybox",
                                    **RESTRICTED_CONTAINER,
                                    "command": ["sleep", str(int(runtime))],
                                    "resources": {"limits": {"nvidia.com/gpu": str(per_pod)}},
                                }
                            ],
                        }
                    },
                },
            },
        )
        job_id = f"{self.namespace}/{name}"

        def offered() -> Job | None:
            self._offered.update((j.id, j) for j in self.cluster.submissions())
            return self._offered.get(job_id)

        return wait_for(offered)

    def finish(self, job: Job) -> None:
        assert self.kube is not None
        if hasattr(self.kube, "finish_job"):  # a real cluster: pods come moments later

            def running() -> bool:
                pods = self.kube.pods_of(self.namespace, job.name)
                return len(pods) == (job.pods or 1) and all(
                    p["status"].get("phase") == "Running" for p in pods
                )

            wait_for(running, timeout=60)
        for pod in self.kube.pods_of(self.namespace, job.name):
            self.kube.set_pod_phase(self.namespace, pod["metadata"]["name"], "Succeeded")

    def ended(self, count: int) -> list[JobEnded]:
        seen: list[JobEnded] = []

        def enough() -> bool:
            seen.extend(self.cluster.ended())
            return len(seen) >= count

        wait_for(enough)
        return seen

    def placement(self, *parts: tuple[int, int]) -> Placement:
        nodes = self.cluster.snapshot().capacity.nodes
        return tuple(Part(i, nodes[i].name, g, 0.0, 0.0) for i, g in parts)


@pytest.fixture(
    params=[
        "sim",
        "local",
        "kubernetes",
        # one worker runs every real-control-plane test (one control plane per run)
        pytest.param("kubernetes-real", marks=pytest.mark.xdist_group("real-kube")),
    ]
)
def harness(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Harness]:
    if request.param == "sim":
        yield SimHarness()
        return
    if request.param == "local":
        local = LocalHarness(tmp_path)
        try:
            yield local
        finally:
            local.close()
        return
    if request.param == "kubernetes-real" and not REAL:
        yield from _real_control_plane(request)
        return
    if request.param == "kubernetes-real":
        from kubernetes import config

        api_client = config.new_client_from_config(config_file=REAL)
        real = KubeHarness(api_client)
        try:
            yield real
        finally:
            real.close()
            api_client.close()
        return
    from tests.kubeapi import KubeApiServer

    with KubeApiServer() as kube:
        api_client = kube.api_client()
        h = KubeHarness(api_client, kube)
        try:
            yield h
        finally:
            h.close()
            api_client.close()


def _real_control_plane(request: pytest.FixtureRequest) -> Iterator[Harness]:
    """The adapter as the ServiceAccount ``rbac.yaml`` makes (a TokenRequest token, the
    shipped ClusterRole bound to it), users' Jobs created as admin; a request the
    ServiceAccount was refused (the real audit log) fails the test at teardown."""
    from tests.realkube.shipped import shipped_cluster_role
    from tests.support.controlplane import RealKube

    real: RealKube = request.getfixturevalue("real_kube")
    namespace = real.create_namespace("contract")
    role = shipped_cluster_role()
    real.apply_cluster_role(role)
    creds = real.service_account(namespace, "starburst", cluster_role=role["metadata"]["name"])
    admin, adapter = real.api_client(), real.api_client(creds.token)
    with real.kubelet() as kubelet:
        h = KubeHarness(adapter, kubelet, namespace, users=admin)
        try:
            yield h
        finally:
            h.close()
            real.delete_namespace(namespace)  # its pods gone before the nodes go
            admin.close()
            adapter.close()
    denied = [
        f"{e['verb']} {(e.get('objectRef') or {}).get('resource')}"
        for e in real.audit_events(user=creds.username)
        if e["responseStatus"]["code"] == 403
    ]
    assert denied == [], f"the shipped ClusterRole does not grant: {denied}"


def total(h: Harness) -> int:
    return sum(n.gpus for n in h.nodes)


def scriptable(h: Harness) -> None:
    if not h.scriptable:
        pytest.skip("needs scripted nodes and kubelets (the stand-in or the simulator)")


def test_the_snapshot_shows_every_node_and_its_free_gpus(harness: Harness) -> None:
    scriptable(harness)
    snap = harness.cluster.snapshot()
    nodes = [(n.name, n.gpus) for n in harness.nodes]
    assert [(n.name, n.gpus) for n in snap.capacity.nodes] == nodes
    assert snap.capacity.free_gpus == total(harness) and list(snap.running) == []


def test_start_takes_the_placements_gpus_at_once(harness: Harness) -> None:
    scriptable(harness)
    job = harness.submit("a", gpus=6)
    harness.cluster.start(job, harness.placement((0, 6)), "fits")
    snap = harness.cluster.snapshot()
    free = [snap.capacity.free_on(i) for i in range(len(harness.nodes))]
    assert free == [n.gpus - (6 if i == 0 else 0) for i, n in enumerate(harness.nodes)]
    assert [(r.job.id, [p.gpus for p in r.placement]) for r in snap.running] == [(job.id, [6])]


def test_start_is_idempotent(harness: Harness) -> None:
    scriptable(harness)
    job = harness.submit("a", gpus=4)
    last = len(harness.nodes) - 1
    harness.cluster.start(job, harness.placement((last, 4)), "fits")
    harness.cluster.start(job, harness.placement((last, 4)), "fits again")
    snap = harness.cluster.snapshot()
    assert snap.capacity.free_gpus == total(harness) - 4 and len(list(snap.running)) == 1


def test_a_gang_spans_nodes_all_or_nothing(harness: Harness) -> None:
    scriptable(harness)
    if len(harness.nodes) < 2:
        pytest.skip("one node: a gang cannot span nodes")
    job = harness.submit("gang", gpus=16, pods=2)
    harness.cluster.start(job, harness.placement((0, 8), (1, 8)), "two full nodes")
    assert harness.cluster.snapshot().capacity.free_gpus == 0


def test_an_end_is_reported_once_and_gives_the_gpus_back(harness: Harness) -> None:
    scriptable(harness)
    job = harness.submit("a", gpus=8)
    harness.cluster.start(job, harness.placement((0, 8)), "fits")
    harness.finish(job)
    (end,) = harness.ended(1)
    assert (end.job_id, end.succeeded) == (job.id, True)
    assert list(harness.cluster.ended()) == []
    wait_for(lambda: harness.cluster.snapshot().capacity.free_gpus == total(harness))
    assert list(harness.cluster.snapshot().running) == []


def test_cancel_gives_the_gpus_back(harness: Harness) -> None:
    scriptable(harness)
    job = harness.submit("a", gpus=8)
    harness.cluster.start(job, harness.placement((len(harness.nodes) - 1, 8)), "fits")
    harness.cluster.cancel(job.id)
    wait_for(lambda: list(harness.cluster.snapshot().running) == [])
    wait_for(lambda: harness.cluster.snapshot().capacity.free_gpus == total(harness))


def test_the_snapshot_of_a_real_cluster_is_consistent(harness: Harness) -> None:
    snap = harness.cluster.snapshot()
    capacity = snap.capacity
    assert 0 <= capacity.free_gpus <= capacity.total_gpus
    for i, node in enumerate(capacity.nodes):
        assert 0 <= capacity.free_on(i) <= node.gpus
