"""Each backend declares the optional capabilities the controller relies on, and the wiring
finds exactly those: a renamed adapter method would otherwise switch a feature off silently
(no Kubernetes annotations, no prompt passes, metering to the poll instead of the real end)."""

from __future__ import annotations

from pathlib import Path

import pytest

from starburst.adapters.local import EmulatedCloud, LocalCluster
from starburst.controller.loop.capabilities import Capabilities
from starburst.core import ports
from starburst.core.capacity import Node
from starburst.sim.cloud import SimCloud
from starburst.sim.cluster import SimCluster
from starburst.wallclock import WallClock

CLUSTER_SIDE = (
    ports.SubmissionSource,
    ports.JobAnnotator,
    ports.BudgetNotes,
    ports.DeletedJobs,
    ports.LogSource,
)
CLOUD_SIDE = (ports.CloudHealth, ports.FailureReasons, ports.BilledLaunches, ports.LaunchEnds)


def declared(backend: type, among: tuple[type, ...]) -> set[str]:
    return {c.__name__ for c in (*among, ports.ChangeNotifier) if issubclass(backend, c)}


def test_the_local_backends_say_when_a_job_ends_and_keep_output(tmp_path: Path) -> None:
    cluster = LocalCluster(tmp_path / "cluster", 1)
    cloud = EmulatedCloud(tmp_path / "cloud")
    caps = Capabilities.of(cluster, cloud)
    assert caps.notifiers == (cluster, cloud)
    assert caps.logs is cluster
    assert caps.reasons is cloud and caps.billing is cloud and caps.ends is cloud
    assert caps.health is None  # the emulated cloud is never degraded
    assert caps.submissions is caps.annotator is caps.budget_notes is caps.deleted is None


def test_the_simulated_backends_have_no_capabilities() -> None:
    clock = WallClock()
    cluster = SimCluster([Node("n1", 8)], clock)
    assert Capabilities.of(cluster, SimCloud(clock, 2.5)) == Capabilities()


def test_no_cloud_means_no_cloud_capabilities(tmp_path: Path) -> None:
    caps = Capabilities.of(LocalCluster(tmp_path, 1), None)
    assert caps.health is caps.reasons is caps.billing is caps.ends is None
    assert len(caps.notifiers) == 1


def test_the_kubernetes_cluster_declares_every_cluster_capability() -> None:
    pytest.importorskip("kubernetes")
    from starburst.adapters.kubernetes.cluster import KubernetesCluster

    assert declared(KubernetesCluster, CLUSTER_SIDE) == {
        "ChangeNotifier",
        "SubmissionSource",
        "JobAnnotator",
        "BudgetNotes",
        "DeletedJobs",
        "LogSource",
    }


def test_the_skypilot_cloud_declares_health_reasons_billing_and_ends() -> None:
    from starburst.adapters.skypilot import SkyPilotCloud

    assert declared(SkyPilotCloud, CLOUD_SIDE) == {
        "CloudHealth",
        "FailureReasons",
        "BilledLaunches",
        "LaunchEnds",
    }
