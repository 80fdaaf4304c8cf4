"""The controller on the real control plane, as the ServiceAccount ``rbac.yaml`` makes.

``Rig`` is one controller life: the real ``Controller`` over the adapter (``KubernetesCluster``
with the ServiceAccount's token, its ClusterRole the shipped one), an SQL store on SQLite, a
``RecordingCloud`` edge (``tests.kube.recording_cloud``), all on a hand-moved clock. Two
8-GPU nodes (``gpu-a``, ``gpu-b``) come from the test's fake kubelet; the policy is no-wait.

- ``passes_until(check)``: a pass per second of virtual time until ``check()`` holds;
- ``restart()``: the controller process dies and a new one starts (new adapter and
  controller, same store, cloud and ServiceAccount);
- ``denied()``: what the ServiceAccount was refused (403), from the real audit log: every
  test ends asserting it is empty, so a verb missing from ``rbac.yaml`` fails it.

``controller_rig`` is the same controller life on any control plane and namespace, whatever
its nodes (the real node's tier uses it on its own control plane).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from starburst.adapters.db.store import SqlStore
from starburst.adapters.kubernetes import KubernetesCluster, KubernetesSettings
from starburst.adapters.kubernetes.retry import Backoff
from starburst.controller.daemon import Controller
from starburst.controller.wiring import wire_controller
from starburst.core.lifecycle import JobState
from starburst.settings import Settings
from tests.kube.recording_cloud import RecordingCloud
from tests.realkube.shipped import shipped_cluster_role
from tests.support.clock import ManualClock
from tests.support.controlplane import RealKube
from tests.support.databases import upgrade
from tests.support.kubelet import FakeKubelet
from tests.support.waiting import wait_for


@dataclass
class Rig:
    controller: Controller
    store: SqlStore
    cluster: KubernetesCluster
    cloud: RecordingCloud
    clock: ManualClock
    ns: str
    real: RealKube
    user: str
    api: Any
    settings: Settings

    @property
    def namespace(self) -> str:
        return self.ns

    def passes_until(self, check: Any, timeout: float = 60.0) -> bool:
        def once() -> bool:
            self.clock.advance(1)
            self.controller.run_pass()
            return bool(check())

        return wait_for(once, timeout=timeout)

    def restart(self) -> None:
        """The controller process dies and a new one starts: new adapter, same store."""
        self.controller.stop()
        self.cluster.close()
        self.cluster = adapter(self.api, self.clock, self.ns)
        self.controller = wire_controller(
            self.settings, self.store, self.cluster, self.cloud, clock=self.clock
        )

    def state(self, name: str) -> JobState | None:
        try:
            return self.store.jobs.get(f"{self.ns}/{name}").state
        except Exception:
            return None

    def reasons(self, name: str) -> list[str]:
        return [e.reason for e in self.store.jobs.events(f"{self.ns}/{name}")]

    def denied(self) -> list[str]:
        """Requests the controller's ServiceAccount was refused (403), from the audit log."""
        return [
            f"{e['verb']} {e['objectRef'].get('resource')}"
            for e in self.real.audit_events(user=self.user)
            if e["responseStatus"]["code"] == 403
        ]


def adapter(api: Any, clock: ManualClock, namespace: str) -> KubernetesCluster:
    settings = KubernetesSettings(namespace=namespace, backoff=Backoff(base=0.05, cap=0.5))
    cluster = KubernetesCluster(api, clock, settings).start_watching()
    assert cluster.wait_synced(30)
    return cluster


@contextlib.contextmanager
def controller_rig(
    real_kube: RealKube,
    namespace: str,
    tmp_path: Path,
    clock_start: float = 1_800_000_000.0,
    **settings: Any,
) -> Iterator[Rig]:
    """A controller life on ``real_kube`` watching ``namespace`` (see the module), whatever
    nodes the cluster has (fake, or the real node of ``tests.support.realnode``); ``settings``
    override the no-wait policy's (``policy="compute", coefficient=0.5``). ``clock_start``:
    where the hand-moved clock starts (the API server's present, for tests that measure from
    objects' ``creationTimestamp``)."""
    role = shipped_cluster_role()
    real_kube.apply_cluster_role(role)
    creds = real_kube.service_account(namespace, "starburst", cluster_role=role["metadata"]["name"])
    tmp_path.mkdir(parents=True, exist_ok=True)
    url = f"sqlite:///{tmp_path / 'sb.db'}"
    upgrade(url)
    clock = ManualClock(clock_start)
    store = SqlStore.open(url, clock=clock)
    api = real_kube.api_client(creds.token)
    cluster = adapter(api, clock, namespace)
    config = Settings(
        **{"database_url": url, "state_dir": tmp_path, "policy": "no-wait", "cloud": "none"}
        | settings
    )
    cloud = RecordingCloud(clock, 2.5)
    made = Rig(
        wire_controller(config, store, cluster, cloud, clock=clock),
        store, cluster, cloud, clock, namespace, real_kube, creds.username, api, config,
    )  # fmt: skip
    try:
        yield made
    finally:
        made.controller.stop()
        made.cluster.close()
        store.close()
        api.close()


@pytest.fixture
def rig(
    real_kube: RealKube, real_namespace: str, kubelet: FakeKubelet, tmp_path: Path
) -> Iterator[Rig]:
    kubelet.add_node("gpu-a", gpus=8)
    kubelet.add_node("gpu-b", gpus=8)
    with controller_rig(real_kube, real_namespace, tmp_path) as made:
        yield made
