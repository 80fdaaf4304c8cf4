"""Busybox pods on the real node, as a user would run them (PodSecurity ``restricted``).

``Pods.run(name, script, gpus=...)`` creates a pod on ``NODE`` running ``sh -c script``;
``wait_phase`` waits for a phase; ``log`` is what ``kubectl logs`` shows; ``env_of`` reads the
``NAME=value`` lines a script printed with ``env``.
"""

from __future__ import annotations

import urllib.error
from typing import Any

from tests.realkube.jobs import SECURE, suspended_job
from tests.support.controlplane import RealKube
from tests.support.nodeimages import BUSYBOX
from tests.support.realnode import NODE
from tests.support.waiting import wait_for

TERMINAL = ("Succeeded", "Failed")


def container(script: str, gpus: int = 0) -> dict[str, Any]:
    resources: dict[str, Any] = {"requests": {"cpu": "10m", "memory": "16Mi"}}
    if gpus:
        resources["requests"]["nvidia.com/gpu"] = str(gpus)
        resources["limits"] = {"nvidia.com/gpu": str(gpus)}
    return {
        "name": "main",
        "image": BUSYBOX,
        "command": ["sh", "-c", script],
        "securityContext": SECURE,
        "resources": resources,
    }


class Pods:
    def __init__(self, kube: RealKube, namespace: str) -> None:
        self.kube, self.namespace = kube, namespace
        self.base = f"/api/v1/namespaces/{namespace}/pods"

    def run(self, name: str, script: str, gpus: int = 0) -> dict[str, Any]:
        pod = {
            "metadata": {"name": name},
            "spec": {
                "restartPolicy": "Never",
                "nodeSelector": {"kubernetes.io/hostname": NODE},
                "terminationGracePeriodSeconds": 1,
                "containers": [container(script, gpus)],
            },
        }
        made: dict[str, Any] = self.kube.request("POST", self.base, pod)
        return made

    def get(self, name: str) -> dict[str, Any]:
        pod: dict[str, Any] = self.kube.request("GET", f"{self.base}/{name}")
        return pod

    def wait_phase(self, name: str, *phases: str, timeout: float = 90.0) -> dict[str, Any]:
        wait_for(
            lambda: self.get(name)["status"].get("phase") in phases,
            timeout=timeout,
            interval=0.2,
            what=f"pod {name} to be {' or '.join(phases)}",
        )
        return self.get(name)

    def log(self, name: str) -> str:
        return str(self.kube.request("GET", f"{self.base}/{name}/log"))

    def wait_log(self, name: str, text: str, timeout: float = 60.0) -> str:
        def printed() -> bool:
            try:
                return text in self.log(name)
            except urllib.error.HTTPError as err:
                if err.code != 400:  # 400: its container has not started yet
                    raise
                return False

        wait_for(printed, timeout=timeout, interval=0.3, what=f"pod {name} to print {text!r}")
        return self.log(name)

    def env_of(self, name: str) -> dict[str, str]:
        lines = self.log(name).splitlines()
        return dict(line.split("=", 1) for line in lines if "=" in line)


def busybox_job(
    name: str, script: str, *, gpus: int = 1, pods: int = 1, deadline: int | None = None
) -> dict[str, Any]:
    """A suspended Job queued for Starburst (``tests.realkube.jobs``) whose pods run
    ``sh -c script`` in busybox; ``deadline``: its ``activeDeadlineSeconds``."""
    job = suspended_job(name, gpus=gpus, pods=pods)
    template = job["spec"]["template"]["spec"]
    template["containers"] = [container(script, gpus)]
    template["terminationGracePeriodSeconds"] = 1
    if deadline is not None:
        job["spec"]["activeDeadlineSeconds"] = deadline
    return job
