"""The real Kubernetes control plane as SkyPilot's Kubernetes infra, bursting through it.

The session's SkyPilot API server is given a kubeconfig for the test control plane
(``real_kube``), whose fake kubelet registers a GPU node (``nvidia.com/gpu``, labelled
``skypilot.co/accelerator``) and a CPU node. ``sky check`` must find Kubernetes enabled, and a
burst launched through the adapter is followed as far as SkyPilot gets: the API server accepts
it and plans it on Kubernetes, then cannot place its jobs controller on these nodes
(ResourcesUnavailable), so no pod is created. Even past that point it could not run: no kubelet
runs containers here (the fake kubelet only reports pod phases), so the controller pod would
never really start and SkyPilot could not reach it. This module enables Kubernetes on the
shared server, so it runs last.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml

from starburst.adapters.skypilot import SkyPilotCloud
from starburst.core.job import Job
from starburst.core.ports import CloudStatus
from starburst.pricing import load_price_table
from starburst.wallclock import WallClock
from tests.skypilot_real.conftest import settled
from tests.skypilot_real.server import SkyServer
from tests.support.controlplane import RealKube, real_kube  # noqa: F401 (fixture)
from tests.support.waiting import wait_for

LAUNCH_TIMEOUT_S = 600.0


@pytest.fixture
def kube_infra(sky_server: SkyServer, real_kube: RealKube) -> Iterator[Any]:  # noqa: F811
    kubelet = real_kube.kubelet().start()
    kubelet.add_node("gpu-a100-1", gpus=8, labels={"skypilot.co/accelerator": "a100"})
    kubelet.add_node("cpu-1", gpus=0, cpu="32", memory="128Gi")
    config = sky_server.home / ".kube" / "config"
    config.parent.mkdir(exist_ok=True)
    shutil.copy(real_kube.admin_kubeconfig, config)
    api = real_kube.api_client()
    try:
        yield api
    finally:
        api.close()
        kubelet.close()
        config.unlink(missing_ok=True)


def test_sky_check_enables_the_real_control_plane(
    sky: ModuleType, sky_server: SkyServer, kube_infra: Any
) -> None:
    done = sky_server.cli("check", "kubernetes", timeout=600)
    out = done.stdout + done.stderr
    assert "Kubernetes: enabled" in out, out
    rid = sky.client.sdk.enabled_clouds()
    assert settled(sky, rid) == "SUCCEEDED"
    assert [c.lower() for c in sky.get(rid)] == ["kubernetes"]


def test_a_burst_reaches_skypilots_kubernetes_placement(
    sky: ModuleType, sky_server: SkyServer, kube_infra: Any, tmp_path: Path
) -> None:
    """How far it gets: the launch is validated and accepted by the API server and planned on
    Kubernetes only (aws is priced cheaper-second but not enabled, so never tried); SkyPilot
    then has to place its jobs controller (4+ CPUs, 4x memory, a 50 GB disk) and answers
    ResourcesUnavailable on these kubelet-less nodes, before any pod is created. The adapter
    ends the launch as no capacity, without failing over to a cloud SkyPilot cannot use."""
    from kubernetes import client

    table = tmp_path / "prices.yaml"
    table.write_text(
        yaml.safe_dump(
            {
                "taken": "2026-11-01",
                "gpus": {"A100": {"kubernetes": {"on_demand": 1.20}, "aws": {"on_demand": 4.10}}},
            }
        )
    )
    sky_server.cli("check", "kubernetes", timeout=600)
    cloud = SkyPilotCloud(WallClock(), load_price_table(table), sync_interval=0.0, clouds_ttl=0.0)
    job = Job("real/k8s-burst", 0.0, 1, gpu_type="A100", extra={"command": "nvidia-smi"})
    handle = cloud.launch(job, "waited 1m of a 1m budget")
    ended = (CloudStatus.FAILED, CloudStatus.REFUSED, CloudStatus.SUCCEEDED)
    assert wait_for(lambda: cloud.poll(handle) in ended, timeout=LAUNCH_TIMEOUT_S)
    launch = cloud.launch_of(job.id)
    assert launch is not None
    assert launch.current.price.cloud == "kubernetes"  # never failed over to aws (not enabled)
    assert launch.request_id is not None  # the API server accepted the launch request
    reason = cloud.reason(handle)
    assert cloud.poll(handle) is CloudStatus.FAILED, reason
    assert "ResourcesUnavailableError" in reason and "Kubernetes" in reason, reason
    # where it stops: SkyPilot created no pod on the API server
    pods = client.CoreV1Api(kube_infra).list_pod_for_all_namespaces().items
    assert [p.metadata.name for p in pods] == []
