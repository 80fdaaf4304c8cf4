"""The real Kubernetes control plane as SkyPilot's Kubernetes infra, bursting through it.

The session's SkyPilot API server is given a kubeconfig for the test control plane
(``real_kube``), whose fake kubelet registers a GPU node (``nvidia.com/gpu``, labelled
``skypilot.co/accelerator``) and a CPU node, both reporting ``ephemeral-storage`` as a real
kubelet does. ``sky check`` must find Kubernetes enabled, and a burst launched through the
adapter is followed as far as SkyPilot gets on a cluster without a kubelet:
1. the API server accepts the launch and plans it on Kubernetes only (a cloud priced cheaper
   but not enabled is never tried);
2. SkyPilot places its managed-jobs controller (4+ CPUs, 4x memory, a 50 GB disk, which is
   an ``ephemeral-storage`` request: with nodes reporting none it stopped here,
   ResourcesUnavailable) and *creates its pod* on the real API server; the real scheduler
   binds it to a node and the fake kubelet reports it Running;
3. SkyPilot's first command in that pod (``echo SKYPILOT_SSH_USER: $(whoami)``, through
   ``pods/exec``) needs a kubelet to serve it: the API server's call to the node's kubelet
   (127.0.0.1:10250, nothing there) is refused, and the launch fails with "Failed to get ssh
   user for pod sky-jobs-controller-...". The adapter ends the launch as failed with that
   reason. That is where it stops: every later step (the controller's setup, the task's own
   GPU pod) runs commands in pods.
What it took to get to 3 offline, in ``server.py``: the accelerator and Kubernetes image
catalogs SkyPilot would download, stubs for ``socat``/``nc``/``rsync`` that it checks for.
This module enables Kubernetes on the shared server, so it runs last.
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


def test_a_burst_gets_skypilot_to_create_its_pods_on_the_real_api_server(
    sky: ModuleType, sky_server: SkyServer, kube_infra: Any, tmp_path: Path
) -> None:
    """How far it gets: see the module docstring (planned on Kubernetes, the jobs controller's
    pod created, bound and Running, then its first command finds no kubelet)."""
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
    core = client.CoreV1Api(kube_infra)
    seen: dict[str, Any] = {}

    def ended() -> bool:
        for pod in core.list_pod_for_all_namespaces().items:  # (their last state seen)
            seen[f"{pod.metadata.namespace}/{pod.metadata.name}"] = pod
        return cloud.poll(handle) in (
            CloudStatus.FAILED,
            CloudStatus.REFUSED,
            CloudStatus.SUCCEEDED,
        )

    assert wait_for(ended, timeout=LAUNCH_TIMEOUT_S, interval=1.0)
    launch = cloud.launch_of(job.id)
    assert launch is not None
    assert launch.current.price.cloud == "kubernetes"  # never failed over to aws (not enabled)
    assert launch.request_id is not None  # the API server accepted the launch request
    # SkyPilot created its jobs controller's pod; the real scheduler bound it, it ran
    controllers = [
        pod for name, pod in seen.items() if name.startswith("default/sky-jobs-controller-")
    ]
    assert controllers, sorted(seen)
    (pod,) = controllers
    assert pod.spec.node_name in ("cpu-1", "gpu-a100-1"), pod.spec.node_name
    assert pod.status.phase == "Running"
    requests = pod.spec.containers[0].resources.requests
    assert requests["ephemeral-storage"] == "50G", requests  # the 50 GB disk
    # and where it stops: the first command in the pod needs a kubelet
    reason = cloud.reason(handle)
    assert cloud.poll(handle) is CloudStatus.FAILED, reason
    assert "Failed to get ssh user for pod sky-jobs-controller-" in reason, reason
