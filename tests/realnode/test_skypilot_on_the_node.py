"""SkyPilot's launch onto the real node: how far the real API server gets offline.

A SkyPilot API server of this module's own (``tests.skypilot_real.server``) is given the real
node's control plane as its Kubernetes infra: the admin kubeconfig, the real ``kubectl`` on its
PATH (its command runner execs into pods with it) and the real ``rsync`` (only ``socat`` and
``nc``, which ``sky check`` wants and nodeport networking never runs, are stubs); its image
catalog names ``SKYPILOT_POD`` (``tests.support.nodeimages``: Debian with everything SkyPilot's
pod start script would install with apt, imported into the node's containerd) and its config
pulls that image only if it is not present (SkyPilot's template says ``Always``, which would
ask a registry); its jobs controller asks for 1 CPU (the default 4+ does not fit a 2-core node).
The node is labelled with an accelerator (``skypilot.co/accelerator``) so that GPU tasks plan
onto Kubernetes.

A burst launched through the adapter (``SkyPilotCloud``) goes through these steps:
1. the API server plans it on Kubernetes and creates the managed-jobs controller's pod;
2. the real scheduler binds it to the real node, the kubelet runs it in ``SKYPILOT_POD``; the
   pod's start script sets up sshd (STEP 1, nothing to install), finds SkyPilot's runtime
   baked into the image (STEP 2: ``uv`` and the ``~/skypilot-runtime`` venv with SkyPilot and
   Ray, which it would otherwise fetch from astral.sh and PyPI) and starts Ray's head;
3. SkyPilot's commands in the pod (``echo SKYPILOT_SSH_USER: $(whoami)`` first, then its
   setup) go through ``pods/exec``, which the kubelet serves (the audit log shows them
   upgraded, code 101), and ``rsync`` copies its files in; SkyPilot installs its own wheel,
   uploaded from the API server, into the runtime venv with ``uv pip install``: the pods'
   ``UV_OFFLINE=1`` (set through ``kubernetes.pod_config``, as an air-gapped cluster would)
   makes uv resolve its dependencies from the venv instead of asking PyPI; SkyPilot starts its
   skylet and submits the managed job, whose controller starts in the pod;
4. where it stops: that controller validates the task and fetches SkyPilot's accelerator
   catalog from ``raw.githubusercontent.com``; a pod here has no DNS and no route out, so it
   retries the launch minutes apart (``STOP_LOG_LINES``) and the launch stays under way.
The test asserts every step and the stop: it fails if a step regresses, and also if the launch
gets further (then update ``STOP_LOG_LINES`` and the docs). Without the baked
runtime (``skypilot_pod_image()``) it stopped at STEP 2's ``curl -LsSf
https://astral.sh/uv/install.sh`` ("Could not resolve host: astral.sh"); without
``UV_OFFLINE`` at the wheel's install (uv: "Failed to fetch: https://pypi.org/simple/click/").
Costs: the image builds once in 2.5-12 min on a 2-core machine (145-745 s; 1.0 GB: Ray), the
test's call takes 5-7 min (SkyPilot's launch), the node's start and stop a minute or two.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml
from kubernetes import client

from starburst.adapters.skypilot import SkyPilotCloud
from starburst.core.job import Job
from starburst.core.ports import CloudStatus
from starburst.pricing import load_price_table
from starburst.wallclock import WallClock
from tests.skypilot_real.conftest import _import_sky
from tests.skypilot_real.server import (
    SkyServer,
    server_port,
    sky_binary,
)
from tests.support import helmtool
from tests.support.image_tools import ImageBuildError, NoImageTools
from tests.support.nodeimages import SKYPILOT_POD, skypilot_pod_image
from tests.support.realnode import NODE, RealNode
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.realnode, pytest.mark.slow]

LAUNCH_TIMEOUT_S = 900.0
ACCELERATOR_LABEL = "skypilot.co/accelerator"
IMAGES_CSV = (
    "Tag,Region,ImageId\n"
    f"skypilot:custom-cpu-ubuntu-2204-v1,,{SKYPILOT_POD}\n"
    f"skypilot:custom-gpu-ubuntu-2204-v1,,{SKYPILOT_POD}\n"
)
CONFIG = {
    "kubernetes": {
        "networking": "nodeport",
        "pod_config": {
            "spec": {
                "containers": [
                    {
                        "imagePullPolicy": "IfNotPresent",
                        # an air-gapped cluster's setting: uv resolves SkyPilot's wheel from
                        # what the image has installed instead of asking an index
                        "env": [{"name": "UV_OFFLINE", "value": "1"}],
                    }
                ]
            }
        },
    },
    "jobs": {"controller": {"resources": {"cpus": "1+", "memory": "2+", "disk_size": 20}}},
}
#: SkyPilot's setup through pods/exec, in its provision log: the pod's start script set up
#: sshd (STEP 1) and found SkyPilot's runtime baked into the image (STEP 2: uv and the venv,
#: each install satisfied offline) and started Ray's head; then SkyPilot installed its own
#: wheel, uploaded from the API server, with ``uv pip install`` (``UV_OFFLINE``: resolved from
#: the venv), started its skylet and submitted the managed job, whose controller started
#: (``~/sky_logs/1-*/run.log`` in the pod)
PASSED_LOG_LINES = ("Started 1 controllers",)
#: where it stops: the managed job's controller, in the pod, validates the task and fetches
#: SkyPilot's accelerator catalog from GitHub (``~/sky_logs/jobs_controller/*.log``); a pod here
#: has no DNS and no route out, so it retries the launch, minutes apart, for ever
STOP_LOG_LINES = (
    "skypilot-catalog/master/catalogs/",
    "Failed to resolve 'raw.githubusercontent.com'",
    "Retrying to launch the cluster",
)
JOB_LOGS = "cat ~/sky_logs/1-*/run.log ~/sky_logs/jobs_controller/*.log 2>/dev/null"


def _label_node(real_node: RealNode, value: str | None) -> None:
    core = client.CoreV1Api(real_node.kube.api_client())
    try:
        core.patch_node(NODE, {"metadata": {"labels": {ACCELERATOR_LABEL: value}}})
    finally:
        core.api_client.close()


@pytest.fixture(scope="module")
def sky_on_the_node(real_node: RealNode) -> Iterator[SkyServer]:
    binary = sky_binary()
    if binary is None:
        pytest.skip("the `sky` command is not installed (pip install -e '.[test]')")
    try:
        archive = skypilot_pod_image(runtime=True)
    except (NoImageTools, ImageBuildError) as err:
        pytest.fail(f"SkyPilot's pod image cannot be built here: {err}")
    real_node.ctr("images", "import", str(archive))
    kubectl = helmtool.require("kubectl")
    home = Path(tempfile.mkdtemp(prefix="starburst-sky-node-"))
    path = f"{kubectl.parent}{os.pathsep}{os.environ.get('PATH', '')}"
    server = SkyServer(
        home,
        server_port(),
        binary,
        extra_env={"PATH": path},
        stubs=("socat", "nc"),
        images_csv=IMAGES_CSV,
        config=yaml.safe_dump(CONFIG),
    )
    (home / ".kube").mkdir()
    shutil.copy(real_node.kube.admin_kubeconfig, home / ".kube" / "config")
    _label_node(real_node, "a100")
    try:
        server.start()
        yield server
    finally:
        server.stop()
        _label_node(real_node, None)
        shutil.rmtree(home, ignore_errors=True)


@pytest.fixture
def sky(sky_on_the_node: SkyServer, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    for key, value in sky_on_the_node.env.items():
        monkeypatch.setenv(key, value)
    return _import_sky()


def _pod_log(core: client.CoreV1Api, pod: Any) -> str:
    try:
        return str(core.read_namespaced_pod_log(pod.metadata.name, pod.metadata.namespace))
    except client.ApiException as err:
        return f"(no log: {err.reason})"


def _execs(real_node: RealNode, pod: str) -> list[int]:
    """The response codes of the ``pods/exec`` requests into ``pod`` (101: the kubelet
    served the stream)."""
    return [
        int(e.get("responseStatus", {}).get("code", 0))
        for e in real_node.kube.audit_events()
        if e.get("objectRef", {}).get("subresource") == "exec"
        and e.get("objectRef", {}).get("name") == pod
        and e.get("stage") == "ResponseComplete"
    ]


def test_skypilot_launch_onto_the_real_node(
    sky: ModuleType, sky_on_the_node: SkyServer, real_node: RealNode, tmp_path: Path
) -> None:
    """How far it gets: see the module docstring."""
    server = sky_on_the_node
    checked = server.cli("check", "kubernetes", timeout=600)
    assert "Kubernetes: enabled" in checked.stdout + checked.stderr, checked.stdout
    table = tmp_path / "prices.yaml"
    table.write_text(
        yaml.safe_dump(
            {"taken": "2026-11-01", "gpus": {"A100": {"kubernetes": {"on_demand": 1.20}}}}
        )
    )
    cloud = SkyPilotCloud(WallClock(), load_price_table(table), sync_interval=0.0, clouds_ttl=0.0)
    job = Job(
        "real/node-burst",
        0.0,
        1,
        gpu_type="A100",
        cpus=0.5,  # SkyPilot's default for a GPU task, 4 CPUs, does not fit a 2-core node
        memory_mb=1024,
        extra={"command": "echo hello"},
    )
    handle = cloud.launch(job, "waited 1m of a 1m budget")
    admin = real_node.kube.api_client()
    core = client.CoreV1Api(admin)
    seen: dict[str, Any] = {}
    logs: dict[str, str] = {}
    kubectl = helmtool.require("kubectl")

    def stopped() -> bool:
        for pod in core.list_namespaced_pod("default").items:
            seen[pod.metadata.name] = pod
            if pod.status.phase == "Running":
                logs[pod.metadata.name] = _in_pod(kubectl, real_node, pod.metadata.name)
        if cloud.poll(handle) in (CloudStatus.FAILED, CloudStatus.REFUSED, CloudStatus.SUCCEEDED):
            return True
        return any(all(line in log for line in STOP_LOG_LINES) for log in logs.values())

    try:
        assert wait_for(stopped, timeout=LAUNCH_TIMEOUT_S, interval=5.0)
    finally:
        admin.close()
    status, reason = cloud.poll(handle), cloud.reason(handle)
    launch = cloud.launch_of(job.id)
    assert launch is not None and launch.request_id is not None  # the server took the launch
    assert launch.current.price.cloud == "kubernetes"
    # 1-2. the jobs controller's pod, created by SkyPilot, ran on the real node in our image
    (name,) = (n for n in seen if n.startswith("sky-jobs-controller-"))
    pod, log = seen[name], logs.get(name, "")
    print(f"\nlaunch {status}: {reason[-2000:]}\npod {name}: {pod.status.phase}\n{log[-3000:]}")
    assert pod.spec.node_name == NODE
    assert pod.spec.containers[0].image == SKYPILOT_POD
    # 3. SkyPilot's commands in the pod went through pods/exec, served by the kubelet
    codes = _execs(real_node, name)
    print(f"pods/exec into {name}: {codes}")
    assert 101 in codes, codes
    # the setup passed offline and the managed job's controller started in the pod
    for line in PASSED_LOG_LINES:
        assert line in log, (line, log[-2500:])
    # 4. where it stops (see STOP_LOG_LINES): the launch is still under way, not ended
    for line in STOP_LOG_LINES:
        assert line in log, (line, log[-2500:])
    assert status in (CloudStatus.PENDING, CloudStatus.PROVISIONING), (status, reason)
    cloud.cancel(handle)


def _in_pod(kubectl: Path, real_node: RealNode, pod: str) -> str:
    """The managed job's logs in ``pod`` (through ``pods/exec``), or why they could not be read."""
    done = subprocess.run(
        [str(kubectl), "--kubeconfig", str(real_node.kube.admin_kubeconfig), "exec", pod,
         "--", "bash", "-c", JOB_LOGS],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    return done.stdout if done.returncode == 0 else f"(no log: {done.stderr.strip()})"
