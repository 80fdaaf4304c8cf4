"""``starburst doctor`` on a cluster with Kueue: installed, its queues, and those opted in."""

from __future__ import annotations

from pathlib import Path

from starburst.doctor import run_checks
from starburst.settings import load_settings
from tests.support.databases import upgrade


def test_doctor_names_kueues_queues_and_those_starburst_bursts_for(
    kueue_kube, kueue_queue, tmp_path: Path
):
    opted = kueue_queue(annotations={"starburst.io/burst": "true"})
    plain = kueue_queue()
    url = f"sqlite:///{tmp_path / 'sb.db'}"
    upgrade(url)
    kubeconfig = str(kueue_kube.kube.admin_kubeconfig)
    settings = load_settings(database_url=url, cluster="kubernetes", kubeconfig=kubeconfig)

    (line,) = [c for c in run_checks(settings) if c.name == "kueue"]

    assert line.ok and line.detail.startswith("installed")
    assert opted.cluster_queue in line.detail and plain.cluster_queue in line.detail
    bursts_for = line.detail.split("Starburst bursts for ", 1)[1]
    assert f"ClusterQueue {opted.cluster_queue}" in bursts_for
    assert plain.cluster_queue not in bursts_for
    assert "manageJobsWithoutQueueName must stay false" in line.detail
