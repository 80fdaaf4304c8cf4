"""A Kubernetes Job made from a Starburst submission (``starburst submit``, the REST API).

Jobs that users create with ``kubectl`` already exist when Starburst starts them; a job
submitted through Starburst itself has only its spec (command, image, GPUs…) in the store.
Starting it on-prem creates the ``batch/v1`` Job that runs it — already pinned to the chosen
nodes and unsuspended, in one create — carrying the same labels and annotations a started
user Job carries, so everything downstream (watches, capacity, endings, cancel, logs) treats
both alike.

Terms:
- *name*: ``sb-<slug of the id>-<8 hex of sha1(id)>``, at most 52 characters of DNS-1123
  (room for the pod suffixes), so the same job always maps to the same Job: a start repeated
  after a crash finds the Job it created (409 AlreadyExists) instead of creating another.
- *identity*: the Starburst id is in the ``starburst.io/job-id`` annotation, and in the label
  of that name when the id is a valid label value (``conversion.job_id`` reads either).
- *pods*: ``Job.pods`` pods (1 when None) of ``gpus / pods`` GPUs each, CPUs and memory
  shared the same way; ``restartPolicy: Never``, ``backoffLimit: 0`` (Starburst, not the Job
  controller, decides what happens after a failure).
- *security*: the pod passes PodSecurity ``restricted`` (the level a locked-down namespace
  enforces): non-root (uid 1000, since many images would start as root), no privilege
  escalation, every capability dropped, the runtime's default seccomp profile.

Invariants: building a manifest never contacts the cluster; a job without a command or an
image cannot run in a container and is a ``PermanentError`` naming what is missing.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Mapping
from typing import Any

from starburst.adapters.kubernetes import conversion as conv
from starburst.adapters.kubernetes.pinning import pinned_scheduling
from starburst.core.capacity import Placement, describe_placement
from starburst.core.errors import PermanentError
from starburst.core.job import Job, job_env
from starburst.core.time_limit import time_limit_of

_LABEL_VALUE = re.compile(r"^(?:[A-Za-z0-9](?:[-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)$")
CONTAINER = "main"
RUN_AS_USER = 1000  # restricted pods may not run as root; images often default to it


def job_name(job_id: str) -> str:
    """The Kubernetes name of the Job Starburst creates for ``job_id`` (deterministic)."""
    slug = re.sub(r"[^a-z0-9]+", "-", job_id.lower()).strip("-")[:38].strip("-")
    digest = hashlib.sha1(job_id.encode()).hexdigest()[:8]
    return f"sb-{slug}-{digest}" if slug else f"sb-{digest}"


def label_value(value: str | None) -> str | None:
    """``value`` if Kubernetes accepts it as a label value, else None."""
    return value if value and _LABEL_VALUE.match(value) else None


def job_manifest(
    job: Job,
    placement: Placement,
    reason: str,
    now: float,
    namespace: str,
    conventions: conv.Conventions,
    hostnames: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The started ``batch/v1`` Job that runs ``job`` on ``placement``."""
    command = job.extra.get("command", "").strip()
    image = job.extra.get("image", "").strip()
    if not command or not image:
        missing = " and ".join(w for w, v in (("a command", command), ("an image", image)) if not v)
        raise PermanentError(f"job {job.id} needs {missing} to run as a Kubernetes Job")
    pods = job.pods or 1
    labels = {conv.QUEUE_LABEL: "starburst"}
    for key, value in (
        (conv.JOB_ID_LABEL, job.id),
        (conv.USER_LABEL, job.user),
        (conv.TEAM_LABEL, job.team),
    ):
        if (checked := label_value(value)) is not None:
            labels[key] = checked
    names = hostnames or {}
    pod_spec: dict[str, Any] = {
        "restartPolicy": "Never",
        "containers": [
            {
                "name": CONTAINER,
                "image": image,
                "command": ["/bin/sh", "-c", command],
                "env": [{"name": k, "value": v} for k, v in _env(job).items()],
                "resources": _resources(job, pods),
                "securityContext": {
                    "allowPrivilegeEscalation": False,
                    "capabilities": {"drop": ["ALL"]},
                },
            }
        ],
        "securityContext": {
            "runAsNonRoot": True,
            "runAsUser": RUN_AS_USER,
            "seccompProfile": {"type": "RuntimeDefault"},
        },
        **pinned_scheduling({}, [names.get(p.node_name, p.node_name) for p in placement]),
        "tolerations": [
            {"key": key, "operator": "Exists"} for key in sorted(conventions.tolerated_taints)
        ],
    }
    if job.gpu_type:
        pod_spec["nodeSelector"] = {conventions.gpu_type_label: job.gpu_type}
    spec: dict[str, Any] = {
        "suspend": False,
        "parallelism": pods,
        "completions": pods,
        "backoffLimit": 0,
        "template": {"metadata": {"labels": dict(labels)}, "spec": pod_spec},
    }
    if (limit := time_limit_of(job)) is not None:  # the hard --time-limit
        spec["activeDeadlineSeconds"] = max(1, math.ceil(limit))
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": job_name(job.id),
            "namespace": namespace,
            "labels": labels,
            "annotations": {
                conv.JOB_ID_LABEL: job.id,
                conv.STATE: "running",
                conv.PLACEMENT: describe_placement(placement),
                conv.REASON: reason,
                "starburst.io/started-at": conv.rfc3339(now),
            },
        },
        "spec": spec,
    }


def _resources(job: Job, pods: int) -> dict[str, dict[str, str]]:
    limits: dict[str, str] = {}
    requests: dict[str, str] = {}
    if job.gpus:
        limits[conv.GPU] = requests[conv.GPU] = str(job.gpus // pods)
    if job.cpus:
        requests["cpu"] = f"{job.cpus / pods:g}"
    if job.memory_mb:
        requests["memory"] = f"{max(1, round(job.memory_mb / pods))}Mi"
    return {"limits": limits, "requests": requests}


def _env(job: Job) -> dict[str, str]:
    return {**job_env(job), "STARBURST_JOB_ID": job.id}
