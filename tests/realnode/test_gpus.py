"""GPUs the Kubernetes way: the device plugin advertises fake ``nvidia.com/gpu`` devices, the
kubelet assigns them, and a container learns its own from ``NVIDIA_VISIBLE_DEVICES``.

- a pod asking for 2 GPUs sees exactly 2 distinct devices of the node's;
- pods running at the same time never share a device, and a pod asking for more than is left
  waits ``Pending`` (the scheduler's ``Insufficient nvidia.com/gpu``) until a holder ends.
"""

from __future__ import annotations

from tests.realnode.pods import Pods
from tests.support.realnode import RealNode
from tests.support.waiting import wait_for

#: print the assignment, then hold the devices until told to end (a file that never comes
#: here: the test deletes the pod)
HOLD = "env | grep NVIDIA_VISIBLE_DEVICES; echo held; sleep 3600"


def devices(pods: Pods, name: str) -> list[str]:
    pods.wait_log(name, "held")
    return pods.env_of(name)["NVIDIA_VISIBLE_DEVICES"].split(",")


def test_a_pod_asking_for_2_gpus_sees_which_2(real_node: RealNode, pods: Pods) -> None:
    pods.run("two", "env | grep NVIDIA_VISIBLE_DEVICES", gpus=2)
    assert pods.wait_phase("two", "Succeeded", "Failed")["status"]["phase"] == "Succeeded"
    seen = pods.env_of("two")["NVIDIA_VISIBLE_DEVICES"].split(",")
    assert len(seen) == len(set(seen)) == 2
    assert set(seen) <= {f"gpu-{i}" for i in range(real_node.gpus)}


def test_pods_never_share_a_gpu_and_one_that_does_not_fit_waits(
    real_node: RealNode, pods: Pods
) -> None:
    assert real_node.gpus == 4
    pods.run("a", HOLD, gpus=2)
    pods.run("b", HOLD, gpus=2)
    a, b = devices(pods, "a"), devices(pods, "b")
    assert len(a) == len(b) == 2
    assert not set(a) & set(b), (a, b)
    pods.run("c", HOLD, gpus=1)  # all 4 are held
    pending = pods.wait_phase("c", "Pending")
    assert wait_for(
        lambda: any(
            "Insufficient nvidia.com/gpu" in (c.get("message") or "")
            for c in pods.get("c")["status"].get("conditions") or ()
        ),
        timeout=30,
    ), pending["status"]
    pods.kube.request("DELETE", f"{pods.base}/a", {"gracePeriodSeconds": 1})
    c = devices(pods, "c")
    assert len(c) == 1 and c[0] in a, (c, a)
