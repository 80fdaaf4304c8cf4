"""Helpers for the adapter tests: waiting for the watches, Job manifests."""

from __future__ import annotations

from typing import Any

from starburst.core.capacity import Part
from tests.support.waiting import wait_for


def submitted(cluster, count: int) -> dict[str, Any]:
    """Wait until ``count`` submissions arrived (they are handed out once), by Job name."""
    seen: dict[str, Any] = {}

    def more() -> bool:
        seen.update((job.name, job) for job in cluster.submissions())
        return len(seen) >= count

    wait_for(more)
    return seen


def queued_job(
    name: str,
    gpus: int = 1,
    pods: int = 1,
    gpu_type: str | None = None,
    labels: dict[str, str] | None = None,
    cpu: str = "2",
    memory: str = "4Gi",
) -> dict[str, Any]:
    pod_spec: dict[str, Any] = {
        "restartPolicy": "Never",
        "containers": [
            {
                "name": "main",
                "image": "trainer:1",
                "command": ["python", "train.py"],
                "resources": {
                    "requests": {"nvidia.com/gpu": str(gpus), "cpu": cpu, "memory": memory},
                    "limits": {"nvidia.com/gpu": str(gpus)},
                },
            }
        ],
    }
    if gpu_type:
        pod_spec["nodeSelector"] = {"nvidia.com/gpu.product": gpu_type}
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "labels": {"starburst.io/queue": "default", **(labels or {})}},
        "spec": {
            "suspend": True,
            "parallelism": pods,
            "completions": pods,
            "backoffLimit": 0,
            "template": {"spec": pod_spec},
        },
    }


def on(snapshot, *names_and_gpus: tuple[str, int]) -> tuple[Part, ...]:
    """A placement on named nodes of this snapshot (node indices looked up)."""
    index = {n.name: i for i, n in enumerate(snapshot.capacity.nodes)}
    return tuple(Part(index[name], name, gpus, 0.0, 0.0) for name, gpus in names_and_gpus)
