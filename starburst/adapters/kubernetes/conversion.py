"""Kubernetes objects ↔ Starburst's domain values. Pure functions on plain dicts.

Terms and conventions (the contract with users' Job manifests):
- A *queued Job* is a ``batch/v1`` Job labelled ``starburst.io/queue`` with
  ``spec.suspend: true`` and no ``starburst.io/state`` annotation. Its Starburst id is the
  ``starburst.io/job-id`` label, else that annotation (ids that are not valid label values,
  on Jobs Starburst created: ``manifest.py``), else ``<namespace>/<name>``.
- *Size*: GPUs = the pod template's ``nvidia.com/gpu`` request (a limit stands in for a
  missing request) × ``parallelism``; CPUs and memory likewise. GPU type: the template's
  ``nodeSelector`` on the GPU-type label (``nvidia.com/gpu.product`` by default). Owner: the
  ``starburst.io/user`` label. What it runs (image, command, env) comes from the template too
  (``podtask.py``), so it can burst.
- *Team* of a queued Job (``team_of``): its namespace — namespaces are an admin's boundary,
  and whoever may create Jobs in one belongs to it. The ``starburst.io/team`` label may name
  another team only if an admin allowed that team for the namespace (``namespace_teams``,
  the setting ``kubernetes_namespace_teams``); otherwise the label is ignored, so that nobody
  with kubectl spends another team's cloud budget (or creates a team) by labelling a Job.
- *Problems* of a queued Job (``submission_from_k8s``): what was ignored — an unusable
  ``starburst.io/predicted-runtime`` (not a number of seconds above 0 and at most ten years),
  a team label not allowed — each said once in a Warning Event on the Job. Annotations are
  user-writable: none of them may make reading a Job fail.
- *State* on the Job, written by Starburst: ``starburst.io/state`` = ``running`` (started
  on-prem, with ``starburst.io/placement`` = "node×gpus, …"), ``burst``, ``cancelled`` or
  ``failed`` (Starburst gave it up: suspended by someone else, pods refused; the reason is in
  ``starburst.io/reason``).
  A labelled Job that is not suspended counts as running even without the annotation (someone
  else admitted it): it is never queued or started again.
- *Kueue's Jobs* (``left_to_kueue``): a Job with Kueue's ``kueue.x-k8s.io/queue-name`` label
  is Kueue's to admit. One that also carries ``starburst.io/queue`` is left to Kueue as long
  as Starburst has not acted on it (no ``starburst.io/state``): never queued, started or
  counted here, with one Warning Event saying so. Kueue, for its part, must run with
  ``manageJobsWithoutQueueName: false`` (its default), so Starburst's Jobs stay Starburst's.
- A *schedulable node*: Ready, not cordoned, and without NoSchedule/NoExecute taints other
  than the tolerated ones (``nvidia.com/gpu`` by default, the GPU operator's usual taint).
- *Pinning*: ``start_patch`` is one strategic-merge patch that unsuspends the Job, ANDs a
  required node-affinity ``kubernetes.io/hostname In [nodes]`` into every existing
  node-selector term of the template (as Kueue injects its flavors' selectors), gates its pods
  when it spans several nodes (``pinning.py``: why, and how the counts are kept), writes the
  annotations, and carries the resourceVersion the decision was made on, so a concurrent
  change makes it fail with 409 instead of starting a Job twice.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, NamedTuple

from starburst.adapters.kubernetes.pinning import pinned_scheduling
from starburst.adapters.kubernetes.podtask import cloud_fields
from starburst.adapters.kubernetes.quantity import quantity
from starburst.core.capacity import Node, Placement, describe_placement
from starburst.core.job import Job

Obj = Mapping[str, Any]

QUEUE_LABEL = "starburst.io/queue"
KUEUE_QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
LEFT_TO_KUEUE = (
    "left to Kueue: the Job carries kueue.x-k8s.io/queue-name={queue} as well as "
    "starburst.io/queue, and Starburst never queues a Job Kueue manages (remove one label)"
)
JOB_ID_LABEL = "starburst.io/job-id"
USER_LABEL = "starburst.io/user"
TEAM_LABEL = "starburst.io/team"
STATE = "starburst.io/state"
PLACEMENT = "starburst.io/placement"
REASON = "starburst.io/reason"
WAIT_BUDGET = "starburst.io/wait-budget"
PREDICTED_RUNTIME = "starburst.io/predicted-runtime"
BURST_TO = "starburst.io/burst-to"
CLOUD_JOB = "starburst.io/cloud-job"
PRICE = "starburst.io/price-per-hour"
GPU = "nvidia.com/gpu"
_MIB = 1024.0 * 1024.0
MAX_RUNTIME_S = 10 * 365 * 86400.0  # ten years, the API's longest runtime


@dataclass(frozen=True, slots=True)
class Conventions:
    """Cluster-specific names: which label says the GPU type, which taints GPU jobs tolerate."""

    gpu_type_label: str = "nvidia.com/gpu.product"
    tolerated_taints: frozenset[str] = field(default_factory=lambda: frozenset({GPU}))
    default_gpu_type: str = "gpu"
    #: namespace -> the teams its Jobs may name with ``starburst.io/team`` (besides its own)
    namespace_teams: Mapping[str, frozenset[str]] = field(default_factory=dict)


def parse_time(text: str | None) -> float:
    if not text:
        return 0.0
    return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(UTC).timestamp()


def maybe_time(text: str | None) -> float | None:
    """``parse_time`` of a user-writable value: None when it is missing or not a time."""
    try:
        return parse_time(text) if text else None
    except (TypeError, ValueError):
        return None


def rfc3339(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def job_id(obj: Obj) -> str:
    meta = obj["metadata"]
    return str(
        (meta.get("labels") or {}).get(JOB_ID_LABEL)
        or (meta.get("annotations") or {}).get(JOB_ID_LABEL)
        or f"{meta.get('namespace', '')}/{meta['name']}"
    )


def pod_resources(pod_spec: Obj) -> tuple[float, float, float]:
    """GPUs, CPUs and memory (MiB) one pod asks for."""
    gpus = cpus = mem = 0.0
    for container in pod_spec.get("containers") or ():
        resources = container.get("resources") or {}
        wanted = {**(resources.get("limits") or {}), **(resources.get("requests") or {})}
        gpus += quantity(wanted.get(GPU))
        cpus += quantity(wanted.get("cpu"))
        mem += quantity(wanted.get("memory")) / _MIB
    return gpus, cpus, mem


def job_from_k8s(obj: Obj, conv: Conventions) -> Job:
    meta, spec = obj["metadata"], obj.get("spec") or {}
    labels, annotations = meta.get("labels") or {}, meta.get("annotations") or {}
    pod_spec = (spec.get("template") or {}).get("spec") or {}
    width = int(spec.get("parallelism") or 1)
    gpus, cpus, mem = pod_resources(pod_spec)
    return Job(
        id=job_id(obj),
        submit_time=parse_time(meta.get("creationTimestamp")),
        gpus=round(gpus * width),
        cpus=cpus * width,
        memory_mb=mem * width,
        gpu_type=(pod_spec.get("nodeSelector") or {}).get(conv.gpu_type_label),
        estimate=estimate_of(annotations)[0],
        user=labels.get(USER_LABEL),
        team=labels.get(TEAM_LABEL) or meta.get("namespace"),
        name=meta["name"],
        pods=max(width, 1),
        extra={
            "namespace": meta.get("namespace", ""),
            "k8s_name": meta["name"],
            "uid": meta.get("uid", ""),
            "queue": labels.get(QUEUE_LABEL, ""),
            **cloud_fields(pod_spec),
        },
    )


def estimate_of(annotations: Obj) -> tuple[float | None, str | None]:
    """The ``starburst.io/predicted-runtime`` seconds, and why the value was ignored if it was."""
    text = annotations.get(PREDICTED_RUNTIME)
    if text is None or text == "":
        return None, None
    try:
        seconds = float(text)
    except (TypeError, ValueError):
        seconds = math.nan
    if math.isfinite(seconds) and 0 < seconds <= MAX_RUNTIME_S:
        return seconds, None
    return None, (
        f"ignored annotation {PREDICTED_RUNTIME}={str(text)[:64]!r}: not a number of seconds "
        "above 0 and at most ten years"
    )


def team_of(meta: Obj, conv: Conventions) -> tuple[str | None, str | None]:
    """A queued Job's team (the module docstring's rule), and why its label was ignored."""
    namespace = meta.get("namespace")
    wanted = (meta.get("labels") or {}).get(TEAM_LABEL)
    if not wanted or wanted == namespace:
        return namespace, None
    if namespace is not None and wanted in conv.namespace_teams.get(namespace, frozenset()):
        return str(wanted), None
    return namespace, (
        f"ignored label {TEAM_LABEL}={wanted!r}: namespace {namespace} may not name that team "
        f"(an admin allows it in kubernetes_namespace_teams); the job is in team {namespace}"
    )


def submission_from_k8s(obj: Obj, conv: Conventions) -> tuple[Job, list[str]]:
    """A queued Job as a submission: ``job_from_k8s`` with the team rule applied, and the
    problems found (each a Warning Event's message)."""
    job = job_from_k8s(obj, conv)
    meta = obj["metadata"]
    team, team_problem = team_of(meta, conv)
    _, estimate_problem = estimate_of(meta.get("annotations") or {})
    problems = [p for p in (estimate_problem, team_problem) if p is not None]
    return replace(job, team=team), problems


def finished(obj: Obj) -> tuple[bool, float, str] | None:
    """(succeeded, when, reason) once the Job has a Complete or Failed condition."""
    status = obj.get("status") or {}
    for cond in status.get("conditions") or ():
        if cond.get("status") != "True" or cond.get("type") not in ("Complete", "Failed"):
            continue
        at = parse_time(status.get("completionTime") or cond.get("lastTransitionTime"))
        if cond["type"] == "Complete":
            return True, at, ""
        return False, at, f"{cond.get('reason', 'Failed')}: {cond.get('message', '')}".strip()
    return None


def left_to_kueue(obj: Obj) -> str | None:
    """The Kueue LocalQueue of a Job that is Kueue's (see the module), else None."""
    meta = obj["metadata"]
    queue = (meta.get("labels") or {}).get(KUEUE_QUEUE_LABEL)
    if queue is None or STATE in (meta.get("annotations") or {}):
        return None
    return str(queue)


def job_state(obj: Obj) -> str | None:
    """queued | running | suspended | burst | cancelled | failed | None (not a Starburst Job).

    ``suspended``: Starburst started it, and someone else set ``spec.suspend: true`` since
    (``kubectl apply`` of the original manifest, Kueue): ``spec.suspend`` is the truth about
    whether it runs, not the state annotation."""
    meta = obj["metadata"]
    if QUEUE_LABEL not in (meta.get("labels") or {}):
        return None
    state = (meta.get("annotations") or {}).get(STATE)
    suspended = bool((obj.get("spec") or {}).get("suspend"))
    if state in ("burst", "cancelled", "failed"):
        return str(state)
    if state == "running":
        return "suspended" if suspended else "running"
    return "queued" if suspended else "running"


def schedulable(node: Obj, conv: Conventions) -> bool:
    spec = node.get("spec") or {}
    if spec.get("unschedulable") or meta_deleting(node):
        return False
    conditions = (node.get("status") or {}).get("conditions") or ()
    if not any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions):
        return False
    return not any(
        t.get("effect") in ("NoSchedule", "NoExecute") and t.get("key") not in conv.tolerated_taints
        for t in spec.get("taints") or ()
    )


def meta_deleting(obj: Obj) -> bool:
    return bool(obj["metadata"].get("deletionTimestamp"))


def node_from_k8s(node: Obj, conv: Conventions) -> Node:
    alloc = (node.get("status") or {}).get("allocatable") or {}
    labels = node["metadata"].get("labels") or {}
    return Node(
        name=node["metadata"]["name"],
        gpus=int(quantity(alloc.get(GPU))),
        cpus=quantity(alloc.get("cpu")),
        memory_mb=quantity(alloc.get("memory")) / _MIB,
        gpu_type=labels.get(conv.gpu_type_label, conv.default_gpu_type),
        schedulable=schedulable(node, conv),
    )


class PodUsage(NamedTuple):
    """What a bound, unfinished pod holds on its node."""

    node: str
    gpus: float
    cpus: float
    memory_mb: float


def pod_usage(pod: Obj) -> PodUsage | None:
    """What a bound, unfinished pod holds; None if it holds nothing."""
    node = (pod.get("spec") or {}).get("nodeName")
    phase = (pod.get("status") or {}).get("phase")
    if not node or phase in ("Succeeded", "Failed"):
        return None
    gpus, cpus, memory_mb = pod_resources(pod.get("spec") or {})
    return PodUsage(node, gpus=gpus, cpus=cpus, memory_mb=memory_mb)


def parse_placement(text: str) -> list[tuple[str, int]]:
    """``"n1×8, n2×2"`` → [("n1", 8), ("n2", 2)] (the annotation ``describe_placement`` writes)."""
    parts = []
    for piece in text.split(","):
        name, _, gpus = piece.strip().rpartition("×")
        if name and gpus.isdigit():  # user-writable: a piece that is not "node×N" is skipped
            parts.append((name, int(gpus)))
    return parts


def start_patch(
    obj: Obj,
    placement: Placement,
    reason: str,
    now: float,
    hostnames: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The patch that pins a queued Job to ``placement`` and unsuspends it (``pinning``);
    ``hostnames`` maps node names to their ``kubernetes.io/hostname`` labels."""
    names = hostnames or {}
    hosts = [names.get(part.node_name, part.node_name) for part in placement]
    pod_spec = ((obj.get("spec") or {}).get("template") or {}).get("spec") or {}
    return {
        "metadata": {
            "resourceVersion": obj["metadata"]["resourceVersion"],
            "annotations": {
                STATE: "running",
                PLACEMENT: describe_placement(placement),
                REASON: reason,
                "starburst.io/started-at": rfc3339(now),
            },
        },
        "spec": {"suspend": False, "template": {"spec": pinned_scheduling(pod_spec, hosts)}},
    }


def namespace_event_body(
    namespace: str, reason: str, message: str, now: float, kind: str = "Warning"
) -> dict[str, Any]:
    """An Event about a whole namespace (a team's budget), recorded in that namespace."""
    stamp = rfc3339(now)
    return {
        "metadata": {"generateName": "starburst-budget.", "namespace": namespace},
        # (its namespace too: a real server refuses it outside ``default`` otherwise)
        "involvedObject": {
            "apiVersion": "v1",
            "kind": "Namespace",
            "name": namespace,
            "namespace": namespace,
        },
        "reason": reason,
        "message": message[:1024],
        "type": kind,
        "source": {"component": "starburst"},
        "reportingComponent": "starburst.io/controller",
        "reportingInstance": "starburst",
        "firstTimestamp": stamp,
        "lastTimestamp": stamp,
        "count": 1,
    }


def event_body(
    obj: Obj, reason: str, message: str, now: float, kind: str = "Normal"
) -> dict[str, Any]:
    meta = obj["metadata"]
    stamp = rfc3339(now)
    return {
        "metadata": {"generateName": f"{meta['name']}.", "namespace": meta.get("namespace")},
        "involvedObject": {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "name": meta["name"],
            "namespace": meta.get("namespace"),
            "uid": meta.get("uid"),
            "resourceVersion": meta.get("resourceVersion"),
        },
        "reason": reason,
        "message": message[:1024],
        "type": kind,
        "source": {"component": "starburst"},
        "reportingComponent": "starburst.io/controller",
        "reportingInstance": "starburst",
        "firstTimestamp": stamp,
        "lastTimestamp": stamp,
        "count": 1,
    }
