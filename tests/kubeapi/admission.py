"""What the API server does to objects on their way in: defaulting and update validation.

Defaulting on create (as the real registry strategies do):
- Pod spec and pod template (``default_pod_spec``): ``schedulerName: default-scheduler``,
  grace period 30s, ``dnsPolicy: ClusterFirst``, an empty ``securityContext``; each
  container's ``resources: {}``, ``terminationMessagePath``/``Policy`` and
  ``imagePullPolicy`` (``Always`` for an untagged or ``:latest`` image, else
  ``IfNotPresent``).
- Pod: ``restartPolicy: Always``; what admission plugins add: ``serviceAccountName`` (and
  ``serviceAccount``) ``default``, ``priority: 0``, ``preemptionPolicy``,
  ``enableServiceLinks``, tolerations of the not-ready/unreachable taints for 300s; status
  reset to ``phase: Pending``, with ``PodScheduled=False`` (``SchedulingGated``) for a pod
  created with scheduling gates; at least one container is required.
- Job (batch/v1): ``parallelism``/``completions`` 1 when both are unset, ``backoffLimit`` 6,
  ``suspend`` false, ``completionMode: NonIndexed``, ``manualSelector`` false,
  ``podReplacementPolicy: TerminatingOrFailed``; a generated ``selector`` on
  ``batch.kubernetes.io/controller-uid`` and the labels ``controller-uid``, ``job-name`` (and
  their ``batch.kubernetes.io/`` forms) on the pod template; ``restartPolicy`` must be
  ``Never`` or ``OnFailure``; status cleared.
- Node: ``status.daemonEndpoints`` (port 0) and an empty ``status.nodeInfo``, as a real
  server keeps them until a kubelet reports.
- core/v1 Event: ``eventTime``, ``firstTimestamp`` and ``lastTimestamp`` are null when unset
  (a real server writes them so, it does not leave them out).
- Namespace: ``spec.finalizers: [kubernetes]``, ``status.phase: Active``.

Update validation (422 Invalid):
- a Job's ``selector`` and ``completions`` are immutable; its pod ``template`` is immutable
  except that a *suspended Job that never started* (no ``status.startTime``) may change the
  template's node affinity, node selector, tolerations, scheduling gates, labels and
  annotations — the rule Kueue (and Starburst) rely on to pin pods before unsuspending.
- a Pod's spec may change only in container images and added tolerations, and, while it is
  gated, in its scheduling gates (removed) and node selector (keys added) (``validation``).

Validation shared by create and update (node field selectors) is in ``validation``.
"""

from __future__ import annotations

import copy
from typing import Any

from tests.kubeapi.resources import ResourceType
from tests.kubeapi.status import invalid
from tests.kubeapi.validation import gated_pod_update, validate_object

_SCHEDULING_DIRECTIVES = ("affinity", "nodeSelector", "tolerations", "schedulingGates")


def default_on_create(rt: ResourceType, obj: dict[str, Any]) -> None:
    if rt.key == "pods":
        _default_pod(obj)
    elif rt.key == "jobs.batch":
        _default_job(obj)
    elif rt.key == "nodes":
        _default_node(obj)
    elif rt.key == "events" and rt.group == "":
        for key in ("eventTime", "firstTimestamp", "lastTimestamp"):  # null, not left out
            obj.setdefault(key, None)
    elif rt.key == "namespaces":
        obj.setdefault("spec", {}).setdefault("finalizers", ["kubernetes"])
        name = obj["metadata"]["name"]  # the label a real server sets on every namespace
        obj["metadata"].setdefault("labels", {})["kubernetes.io/metadata.name"] = name
        obj["status"] = {"phase": "Active"}
    validate_object(rt.kind, obj)


def _default_pod(obj: dict[str, Any]) -> None:
    spec = obj.setdefault("spec", {})
    name = obj["metadata"].get("name", "")
    if not spec.get("containers"):
        raise invalid("Pod", name, "spec.containers: Required value")
    spec.setdefault("restartPolicy", "Always")
    default_pod_spec(spec)
    # what the admission plugins add: ServiceAccount, Priority, DefaultTolerationSeconds
    spec.setdefault("serviceAccountName", "default")
    spec.setdefault("serviceAccount", spec["serviceAccountName"])
    spec.setdefault("priority", 0)
    spec.setdefault("enableServiceLinks", True)
    spec.setdefault("preemptionPolicy", "PreemptLowerPriority")
    tolerations = spec.setdefault("tolerations", [])
    for key in ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"):
        if not any(t.get("key") == key and t.get("effect") in (None, "", "NoExecute")
                   for t in tolerations):  # fmt: skip
            tolerations.append(
                {"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}
            )
    requests = any((c.get("resources") or {}).get("requests") for c in spec["containers"])
    obj["status"] = {"phase": "Pending", "qosClass": "Burstable" if requests else "BestEffort"}
    if spec.get("schedulingGates"):  # the API server says so at once, not the scheduler
        obj["status"]["conditions"] = [
            {
                "type": "PodScheduled",
                "status": "False",
                "lastProbeTime": None,
                "lastTransitionTime": obj["metadata"].get("creationTimestamp"),
                "reason": "SchedulingGated",
                "message": "Scheduling is blocked due to non-empty scheduling gates",
            }
        ]


_NODE_INFO = (
    "machineID", "systemUUID", "bootID", "kernelVersion", "osImage", "containerRuntimeVersion",
    "kubeletVersion", "kubeProxyVersion", "operatingSystem", "architecture",
)  # fmt: skip


def _default_node(obj: dict[str, Any]) -> None:
    status = obj.setdefault("status", {})
    status.setdefault("daemonEndpoints", {"kubeletEndpoint": {"Port": 0}})
    info = status.setdefault("nodeInfo", {})
    for key in _NODE_INFO:
        info.setdefault(key, "")


def default_pod_spec(spec: dict[str, Any]) -> None:
    """``SetDefaults_PodSpec`` and its containers', for Pods and pod templates alike."""
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("securityContext", {})
    spec.setdefault("schedulerName", "default-scheduler")
    for container in [*(spec.get("initContainers") or ()), *(spec.get("containers") or ())]:
        container.setdefault("resources", {})
        container.setdefault("terminationMessagePath", "/dev/termination-log")
        container.setdefault("terminationMessagePolicy", "File")
        image = str(container.get("image") or "")
        tag = image.rpartition("/")[2].partition("@")[0]
        latest = "@" not in image and (":" not in tag or tag.endswith(":latest"))
        container.setdefault("imagePullPolicy", "Always" if latest else "IfNotPresent")


def _default_job(obj: dict[str, Any]) -> None:
    meta, spec = obj["metadata"], obj.setdefault("spec", {})
    name, uid = meta.get("name", ""), meta["uid"]
    template = spec.setdefault("template", {})
    pod_spec = template.setdefault("spec", {})
    errors = []  # all of them, in the real server's order
    if not pod_spec.get("containers"):
        errors.append("spec.template.spec.containers: Required value")
    if pod_spec.get("restartPolicy") not in ("Never", "OnFailure"):
        errors.append(
            'spec.template.spec.restartPolicy: Required value: valid values: "OnFailure", "Never"'
        )
    if errors:
        raise invalid("Job", name, errors[0] if len(errors) == 1 else f"[{', '.join(errors)}]")
    if spec.get("parallelism") is None and spec.get("completions") is None:
        spec["completions"] = 1
    spec.setdefault("parallelism", 1)
    spec.setdefault("backoffLimit", 6)
    spec.setdefault("suspend", False)
    spec.setdefault("completionMode", "NonIndexed")
    spec.setdefault("manualSelector", False)
    spec.setdefault("podReplacementPolicy", "TerminatingOrFailed")
    default_pod_spec(pod_spec)
    ids = {
        "batch.kubernetes.io/controller-uid": uid,
        "batch.kubernetes.io/job-name": name,
        "controller-uid": uid,
        "job-name": name,
    }
    spec.setdefault("selector", {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}})
    labels = template.setdefault("metadata", {}).setdefault("labels", {})
    labels.update(ids)
    obj["status"] = {}


def validate_update(rt: ResourceType, old: dict[str, Any], new: dict[str, Any]) -> None:
    if rt.key == "jobs.batch":
        _validate_job_update(old, new)
    elif rt.key == "pods":
        _validate_pod_update(old, new)
    validate_object(rt.kind, new)


def _without_directives(template: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(template)
    for key in _SCHEDULING_DIRECTIVES:
        (out.get("spec") or {}).pop(key, None)
    meta = out.get("metadata") or {}
    meta.pop("labels", None)
    meta.pop("annotations", None)
    return out


def _validate_job_update(old: dict[str, Any], new: dict[str, Any]) -> None:
    name = old["metadata"]["name"]
    before, after = old.get("spec") or {}, new.get("spec") or {}
    for key in ("selector", "completions", "completionMode"):
        if before.get(key) != after.get(key):
            raise invalid("Job", name, f"spec.{key}: Invalid value: field is immutable")
    if before.get("template") == after.get("template"):
        return
    never_started = before.get("suspend") and not (old.get("status") or {}).get("startTime")
    if never_started and _without_directives(before.get("template") or {}) == _without_directives(
        after.get("template") or {}
    ):
        return
    raise invalid("Job", name, "spec.template: Invalid value: field is immutable")


def _validate_pod_update(old: dict[str, Any], new: dict[str, Any]) -> None:
    gated = gated_pod_update(old, new)
    before, after = gated or (
        copy.deepcopy(old.get("spec") or {}),
        copy.deepcopy(new.get("spec") or {}),
    )
    for spec in (before, after):
        for container in spec.get("containers") or []:
            container.pop("image", None)
    added = after.pop("tolerations", None) or []
    kept = before.pop("tolerations", None) or []
    if before != after or any(t not in added for t in kept):
        raise invalid(
            "Pod",
            old["metadata"]["name"],
            "spec: Forbidden: pod updates may not change fields other than "
            "`spec.containers[*].image`, `spec.tolerations` "
            "(only additions to existing tolerations)",
        )
