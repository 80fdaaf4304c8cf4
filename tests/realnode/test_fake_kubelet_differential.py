"""The fake kubelet kept honest: the same Jobs through Starburst on a fake-kubelet node and on
the real node must end the same way.

Each scenario is a suspended Job the controller admits (``tests.realkube.rig``), once onto a
fake-kubelet node (the real node cordoned) and once onto the real node (the fake node gone):
- *complete*: prints two lines and exits 0;
- *fail*: prints on stderr and exits 3;
- *time limit*: prints, then runs past the Job's ``activeDeadlineSeconds``;
- *GPU assignment*: asks for 2 GPUs and prints how many devices it was handed.

On the real node the kubelet runs the script; on the fake node the test plays what the script
does (what it prints, how it ends) through the fake kubelet, which serves that output as a
kubelet serves logs. What is compared is what Starburst and its user see: Starburst's final
state and reason (the cause and the output tail), ``starburst logs`` (``job_output``), the
pods' phase and their container's terminated reason and exit code, the Job's conditions, and
the GPUs Starburst counts in use once it started the Job. Pod names are normalised; for the
time limit only the cause is compared (the pods are being deleted while Starburst reads them,
so whether the output tail makes it is a race on either node).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from starburst.adapters.kubernetes.pod_logs import job_output
from starburst.core.lifecycle import JobState
from tests.kube.adapter_support import waiting_jobs
from tests.realkube.rig import Rig, controller_rig
from tests.realnode.pods import busybox_job
from tests.support.kubelet import FakeKubelet
from tests.support.realnode import NODE, RealNode
from tests.support.waiting import wait_for

FAKE_NODE = "fake-gpu"
POD_NAME = re.compile(r"\b([a-z0-9-]+)-[a-z0-9]{5}\b")
ENDED = (JobState.SUCCEEDED, JobState.FAILED)


@dataclass(frozen=True)
class Scenario:
    name: str
    script: str  # what the real node runs
    output: str  # what the fake kubelet says it printed
    exit_code: int | None  # how it ends on the fake node (None: it runs until killed)
    gpus: int = 1
    deadline: int | None = None


SCENARIOS = [
    Scenario("complete", 'echo "step 1"; echo "step 2"', "step 1\nstep 2\n", 0),
    # (stderr only: lines on stdout and stderr may interleave either way in a real log)
    Scenario("fail", 'echo "out of memory" >&2; exit 3', "out of memory\n", 3),
    Scenario("time-limit", 'echo "started"; sleep 600', "started\n", None, deadline=3),
    Scenario(
        "gpus",
        'echo "devices: $(echo "$NVIDIA_VISIBLE_DEVICES" | tr , "\\n" | wc -l)"',
        "devices: 2\n",
        0,
        gpus=2,
    ),
]


def _normalised(text: str) -> str:
    return POD_NAME.sub(r"\1-<pod>", text).replace(FAKE_NODE, "<node>").replace(NODE, "<node>")


def _ended_pods(core: client.CoreV1Api, ns: str, name: str) -> list[tuple[Any, ...]]:
    pods = core.list_namespaced_pod(ns, label_selector=f"job-name={name}").items
    ended = []
    for pod in pods:
        for status in pod.status.container_statuses or ():
            gone = status.state.terminated
            ended.append((pod.status.phase, gone and gone.reason, gone and gone.exit_code))
    return sorted(ended, key=str)


def outcome(rig: Rig, scenario: Scenario, used_gpus: int) -> dict[str, Any]:
    """What Starburst and its user see of the ended Job (see the module)."""
    ns, name = rig.namespace, scenario.name
    core, batch = client.CoreV1Api(rig.api), client.BatchV1Api(rig.api)
    reason = _normalised(rig.reasons(name)[-1])
    job = batch.read_namespaced_job(name, ns)
    seen: dict[str, Any] = {
        "state": rig.state(name),
        "used_gpus": used_gpus,
        "conditions": sorted(
            (c.type, c.reason) for c in job.status.conditions or () if c.status == "True"
        ),
    }
    if scenario.deadline is not None:
        seen["cause"] = reason.splitlines()[0]
    else:
        seen |= {
            "reason": reason,
            "logs": _normalised(job_output(core, ns, name)),
            "pods": _ended_pods(core, ns, name),
        }
    return seen


def admit(rig: Rig, scenario: Scenario) -> int:
    """Create the suspended Job, let Starburst start it; the GPUs it counts in use then."""
    free_before = rig.cluster.snapshot().capacity.free_gpus
    job = busybox_job(
        scenario.name, scenario.script, gpus=scenario.gpus, deadline=scenario.deadline
    )
    client.BatchV1Api(rig.api).create_namespaced_job(rig.namespace, job)
    assert wait_for(lambda: len(waiting_jobs(rig.cluster)) == 1)
    report = rig.controller.run_pass()
    assert report is not None and report.started == [f"{rig.namespace}/{scenario.name}"]
    return free_before - rig.cluster.snapshot().capacity.free_gpus


def cordon(real_node: RealNode, cordoned: bool) -> None:
    real_node.kube.request(
        "PATCH",
        f"/api/v1/nodes/{NODE}",
        {"spec": {"unschedulable": cordoned}},
        content_type="application/merge-patch+json",
    )


def on_fake_node(
    real_node: RealNode, namespace: str, tmp_path: Path, scenario: Scenario
) -> dict[str, Any]:
    kube = real_node.kube
    cordon(real_node, True)
    try:
        with (
            kube.kubelet(serving=kube.kubelet_serving()) as fake,
            controller_rig(kube, namespace, tmp_path / "fake") as rig,
        ):
            fake.add_node(FAKE_NODE, gpus=4)
            used = admit(rig, scenario)
            assert wait_for(lambda: _running(fake, namespace, scenario.name))
            for pod in fake.pods_of(namespace, scenario.name):
                pod_name = pod["metadata"]["name"]
                if scenario.exit_code is None:  # runs until the deadline kills it
                    fake.outputs[(namespace, pod_name)] = scenario.output
                    continue
                phase = "Succeeded" if scenario.exit_code == 0 else "Failed"
                fake.set_pod_phase(namespace, pod_name, phase, scenario.exit_code, scenario.output)
            assert rig.passes_until(lambda: rig.state(scenario.name) in ENDED, timeout=90)
            seen = outcome(rig, scenario, used)
            kube.delete_namespace(namespace)  # its pods finished while the fake kubelet runs
            return seen
    finally:
        cordon(real_node, False)


def _running(fake: FakeKubelet, namespace: str, name: str) -> bool:
    pods = fake.pods_of(namespace, name)
    return bool(pods) and all(p["status"].get("phase") == "Running" for p in pods)


def on_real_node(
    real_node: RealNode, namespace: str, tmp_path: Path, scenario: Scenario
) -> dict[str, Any]:
    with controller_rig(real_node.kube, namespace, tmp_path / "real") as rig:
        used = admit(rig, scenario)
        assert rig.passes_until(lambda: rig.state(scenario.name) in ENDED, timeout=120)
        return outcome(rig, scenario, used)


@pytest.fixture
def two_namespaces(real_node: RealNode) -> Iterator[tuple[str, str]]:
    kube = real_node.kube
    names = (kube.create_namespace("fake"), kube.create_namespace("real"))
    yield names
    for name in names:
        kube.delete_namespace(name)


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_a_fake_kubelet_node_and_the_real_node_end_a_job_the_same_way(
    real_node: RealNode, two_namespaces: tuple[str, str], tmp_path: Path, scenario: Scenario
) -> None:
    fake = on_fake_node(real_node, two_namespaces[0], tmp_path, scenario)
    real = on_real_node(real_node, two_namespaces[1], tmp_path, scenario)
    assert fake == real
