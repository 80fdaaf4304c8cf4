"""The controller's wiring turns Starburst into Kueue's burst policy where the cluster serves
Kueue's API (``build_kueue_burst``), and the pass it wires reads the real Kueue."""

from __future__ import annotations

from pathlib import Path

from starburst.adapters.db.store import SqlStore
from starburst.adapters.kubernetes.cluster import KubernetesCluster, KubernetesSettings
from starburst.controller.wiring import build_kueue_burst, wire_controller
from starburst.settings import Settings
from tests.kube.recording_cloud import RecordingCloud
from tests.support.clock import ManualClock
from tests.support.databases import upgrade


def test_the_wiring_follows_kueue_where_it_is_served(kueue_kube, kueue_queue, tmp_path: Path):
    queue = kueue_queue(annotations={"starburst.io/burst": "true"})
    url = f"sqlite:///{tmp_path / 'sb.db'}"
    upgrade(url)
    settings = Settings(
        database_url=url, state_dir=tmp_path, cluster="kubernetes",
        kubeconfig=str(kueue_kube.kube.admin_kubeconfig),
    )  # fmt: skip
    clock = ManualClock(1_800_000_000.0)
    store = SqlStore.open(url, clock=clock)
    api = kueue_kube.kube.api_client()
    cluster = KubernetesCluster(api, clock, KubernetesSettings())  # not watching: not needed
    controller = wire_controller(settings, store, cluster, RecordingCloud(clock, 2.5), clock=clock)
    try:
        kueue = build_kueue_burst(settings, store, clock, controller)
        assert kueue is not None
        cluster_queues, _ = kueue.workloads.opted_in()
        assert cluster_queues[queue.cluster_queue] is True
        local = build_kueue_burst(settings.model_copy(update={"cluster": "local"}), store, clock,
                                  controller)  # fmt: skip
        assert local is None
    finally:
        controller.stop()
        store.close()
        api.close()
