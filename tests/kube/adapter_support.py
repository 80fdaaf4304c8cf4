"""Helpers for the adapter tests: a settable clock, waiting for the watches, Job manifests."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from starburst.core.capacity import Part


class ManualClock:
    def __init__(self, now: float = 1_800_000_000.0) -> None:
        self.t = now

    def now(self) -> float:
        return self.t


def eventually(check: Callable[[], Any], timeout: float = 10.0) -> Any:
    """Poll until ``check()`` is truthy (the informers apply watch events asynchronously)."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout}s: {check}")
        time.sleep(0.01)


def submitted(cluster, count: int) -> dict[str, Any]:
    """Wait until ``count`` submissions arrived (they are handed out once), by Job name."""
    seen: dict[str, Any] = {}

    def more() -> bool:
        seen.update((job.name, job) for job in cluster.submissions())
        return len(seen) >= count

    eventually(more)
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
