"""Helpers for the adapter tests: waiting for the watches, Job manifests."""

from __future__ import annotations

from typing import Any

from starburst.adapters.kubernetes import KubernetesCluster
from starburst.adapters.kubernetes import conversion as conv
from starburst.core.capacity import Part
from starburst.core.job import Job
from tests.support.waiting import wait_for


def submitted(cluster, count: int) -> dict[str, Any]:
    """Wait until ``count`` submissions arrived (they are handed out once), by Job name."""
    seen: dict[str, Any] = {}

    def more() -> bool:
        seen.update((job.name, job) for job in cluster.submissions())
        return len(seen) >= count

    wait_for(more)
    return seen


def waiting_jobs(cluster: KubernetesCluster) -> list[Job]:
    """The Jobs waiting in the cluster as the adapter's Job watch last saw them, FIFO.

    Read from the ``jobs`` informer's cache (its state only; the adapter's own patch answers
    may be newer, so wait for a change rather than expect it at once). Unlike
    ``submissions()`` it hands nothing out, so the controller under test still gets them.
    """
    (jobs,) = [informer for informer in cluster.informers if informer.name == "jobs"]
    cached = list(dict(jobs.cache).values())  # a copy: the watch thread writes the cache
    conventions = cluster.settings.conventions
    waiting = [
        conv.submission_from_k8s(obj, conventions)[0]
        for obj in cached
        if conv.job_state(obj) == "queued"
    ]
    return sorted(waiting, key=lambda j: (j.submit_time, j.id))


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
