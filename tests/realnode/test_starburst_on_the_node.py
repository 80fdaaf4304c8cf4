"""Starburst's Kubernetes backend on the real node, unchanged: the controller (real
``Controller`` and adapter, as the shipped ServiceAccount) admits a suspended GPU Job, pins its
pods to the real node and lifts its scheduling gate, the kubelet runs the user's command with
the GPUs the device plugin assigned, the real Job controller completes the Job, and Starburst
records the end and shows the output (``starburst logs`` reads it through the same adapter).
A Job too big for the real node is split over it and a fake-kubelet node: its pods are created
gated and Starburst releases each onto its node, as on any cluster.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import client

from starburst.adapters.kubernetes.pod_logs import job_output
from starburst.core.lifecycle import JobState
from tests.kube.adapter_support import waiting_jobs
from tests.realkube.rig import Rig, controller_rig
from tests.realkube.test_controller_real import pinned_nodes
from tests.realnode.pods import busybox_job
from tests.support.realnode import NODE, RealNode
from tests.support.waiting import wait_for


@pytest.fixture
def node_rig(real_node: RealNode, node_namespace: str, tmp_path: Path) -> Iterator[Rig]:
    with controller_rig(real_node.kube, node_namespace, tmp_path) as made:
        yield made


def test_a_suspended_gpu_job_is_admitted_onto_the_real_node_and_runs_to_completion(
    node_rig: Rig,
) -> None:
    rig, ns = node_rig, node_rig.namespace
    batch, core = client.BatchV1Api(rig.api), client.CoreV1Api(rig.api)
    script = 'echo "training on $NVIDIA_VISIBLE_DEVICES"'
    batch.create_namespaced_job(ns, busybox_job("train", script, gpus=2, pods=2))
    assert wait_for(lambda: len(waiting_jobs(rig.cluster)) == 1)
    report = rig.controller.run_pass()
    assert report is not None and report.started == [f"{ns}/train"]
    job = batch.read_namespaced_job("train", ns)
    assert pinned_nodes(job) == {NODE}
    assert job.metadata.annotations["starburst.io/placement"] == f"{NODE}×4"
    assert rig.passes_until(lambda: rig.state("train") is JobState.SUCCEEDED, timeout=120)
    out = job_output(core, ns, "train")
    lines = [line for line in out.splitlines() if line.startswith("training on ")]
    assert len(lines) == 2, out
    seen = [d for line in lines for d in line.removeprefix("training on ").split(",")]
    assert len(seen) == len(set(seen)) == 4, out  # the node's 4 GPUs, none twice
    assert rig.denied() == []


def test_a_job_split_over_the_real_node_and_a_fake_one_runs_on_both(
    real_node: RealNode, node_rig: Rig
) -> None:
    """Multi-node: the pods are created gated, Starburst releases each onto its node (the
    real node's two, the fake node's one), and the Job completes when all three end."""
    rig, ns, kube = node_rig, node_rig.namespace, real_node.kube
    batch, core = client.BatchV1Api(rig.api), client.CoreV1Api(rig.api)
    with kube.kubelet(serving=kube.kubelet_serving()) as fake:
        fake.add_node("fake-gpu", gpus=2)
        assert wait_for(lambda: rig.cluster.snapshot().capacity.free_gpus == 6)
        script = 'echo "on $NVIDIA_VISIBLE_DEVICES"'
        batch.create_namespaced_job(ns, busybox_job("split", script, gpus=2, pods=3))
        assert wait_for(lambda: len(waiting_jobs(rig.cluster)) == 1)
        report = rig.controller.run_pass()
        assert report is not None and report.started == [f"{ns}/split"]
        assert pinned_nodes(batch.read_namespaced_job("split", ns)) == {NODE, "fake-gpu"}

        def on_fake() -> list[str]:
            return [
                p["metadata"]["name"]
                for p in fake.pods_of(ns, "split")
                if p["spec"].get("nodeName") == "fake-gpu"
            ]

        assert wait_for(lambda: len(on_fake()) == 1, timeout=60)
        (fake_pod,) = on_fake()
        fake.set_pod_phase(ns, fake_pod, "Succeeded", output="on gpu-fake\n")
        assert rig.passes_until(lambda: rig.state("split") is JobState.SUCCEEDED, timeout=120)
        pods = fake.pods_of(ns, "split")
        assert sorted(p["spec"]["nodeName"] for p in pods) == ["fake-gpu", NODE, NODE]
        assert all(not p["spec"].get("schedulingGates") for p in pods)
        out = job_output(core, ns, "split")
        real = [
            line for line in out.splitlines() if line.startswith("on gpu-") and "fake" not in line
        ]
        assert len(real) == 2, out
        seen = [d for line in real for d in line.removeprefix("on ").split(",")]
        assert len(seen) == len(set(seen)) == 4, out
        kube.delete_namespace(ns)  # while the fake kubelet still ends its pods
    assert rig.denied() == []
