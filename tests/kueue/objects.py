"""Kueue's API objects as an admin writes them (``kueue.x-k8s.io/v1beta2``), and reading a
Workload's state, for the Kueue tier."""

from __future__ import annotations

import json
import ssl
import urllib.error
import urllib.request
from datetime import datetime
from typing import Any

from tests.realkube.jobs import suspended_job
from tests.support.controlplane import RealKube

GROUP = "/apis/kueue.x-k8s.io/v1beta2"
QUEUE_NAME = "kueue.x-k8s.io/queue-name"


def resource_flavor(name: str) -> dict[str, Any]:
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
            "metadata": {"name": name}}  # fmt: skip


def cluster_queue(
    name: str, flavor: str, gpus: int, annotations: dict[str, str] | None = None
) -> dict[str, Any]:
    """A ClusterQueue for every namespace with ``gpus`` GPUs of quota (CPU and memory ample)."""
    quotas = {"nvidia.com/gpu": str(gpus), "cpu": "64", "memory": "256Gi"}
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ClusterQueue",
        "metadata": {"name": name, "annotations": annotations or {}},
        "spec": {
            "namespaceSelector": {},
            "resourceGroups": [
                {
                    "coveredResources": list(quotas),
                    "flavors": [
                        {
                            "name": flavor,
                            "resources": [
                                {"name": k, "nominalQuota": v} for k, v in quotas.items()
                            ],
                        }
                    ],
                }
            ],
        },
    }


def local_queue(name: str, cluster_queue_name: str) -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "LocalQueue",
        "metadata": {"name": name},
        "spec": {"clusterQueue": cluster_queue_name},
    }


def kueue_job(
    name: str,
    queue: str,
    gpus: int = 1,
    starburst: str | None = None,
    predicted_runtime: float | None = None,
) -> dict[str, Any]:
    """A Job for Kueue's LocalQueue ``queue`` (and with ``starburst``, Starburst's label too;
    ``predicted_runtime``: the user's declared runtime, Starburst's annotation)."""
    job = suspended_job(name, gpus=gpus, queue=starburst)
    job["metadata"]["labels"][QUEUE_NAME] = queue
    if predicted_runtime is not None:
        job["metadata"]["annotations"] = {
            "starburst.io/predicted-runtime": f"{predicted_runtime:g}"
        }
    return job


def workload(kube: RealKube, namespace: str, job_name: str) -> dict[str, Any]:
    (found,) = workloads_of(kube, namespace, job_name)
    return found


def create(kube: RealKube, body: dict[str, Any], namespace: str | None = None) -> Any:
    return kube.request("POST", collection(body["kind"], namespace), body)


def collection(kind: str, namespace: str | None = None) -> str:
    if kind == "Job":
        return f"/apis/batch/v1/namespaces/{namespace}/jobs"
    plural = {"ResourceFlavor": "resourceflavors", "ClusterQueue": "clusterqueues",
              "LocalQueue": "localqueues", "Workload": "workloads"}[kind]  # fmt: skip
    return f"{GROUP}/namespaces/{namespace}/{plural}" if namespace else f"{GROUP}/{plural}"


def workloads_of(kube: RealKube, namespace: str, job_name: str) -> list[dict[str, Any]]:
    """The Workloads Kueue made for the Job (by owner reference)."""
    items = kube.request("GET", f"{GROUP}/namespaces/{namespace}/workloads")["items"]
    return [
        w
        for w in items
        if any(o.get("name") == job_name for o in w["metadata"].get("ownerReferences", []))
    ]


def evaluated_workload(kube: RealKube, namespace: str, job_name: str) -> dict[str, Any] | None:
    """The Job's Workload once Kueue has set any condition on it (evaluated it), else None."""
    for workload in workloads_of(kube, namespace, job_name):
        if (workload.get("status") or {}).get("conditions"):
            return workload
    return None


def has_condition(obj: dict[str, Any], kind: str) -> bool:
    conditions = (obj.get("status") or {}).get("conditions") or []
    return any(c["type"] == kind and c["status"] == "True" for c in conditions)


def condition(obj: dict[str, Any], kind: str) -> dict[str, Any] | None:
    """The condition of type ``kind`` in ``obj``'s status (None: none)."""
    conditions = (obj.get("status") or {}).get("conditions") or []
    return next((c for c in conditions if c["type"] == kind), None)


def printed(kube: RealKube, namespace: str, name: str) -> dict[str, str]:
    """What ``kubectl get workload NAME`` prints: the API server's Table of the Workload,
    from Kueue's printer columns (Admitted and Finished: those conditions' status)."""
    req = urllib.request.Request(
        f"https://{kube.host}:{kube.port}{GROUP}/namespaces/{namespace}/workloads/{name}",
        headers={
            "Authorization": f"Bearer {kube.pki.admin_token}",
            "Accept": "application/json;as=Table;v=v1;g=meta.k8s.io",
        },
    )
    context = ssl.create_default_context(cafile=str(kube.pki.ca_cert))
    with urllib.request.urlopen(req, context=context, timeout=30) as reply:
        table = json.loads(reply.read())
    names = [c["name"] for c in table["columnDefinitions"]]
    (row,) = table["rows"]
    return {n: "" if v is None else str(v) for n, v in zip(names, row["cells"], strict=True)}


def job(kube: RealKube, namespace: str, name: str) -> dict[str, Any]:
    return kube.request("GET", f"/apis/batch/v1/namespaces/{namespace}/jobs/{name}")


def created(kube: RealKube, namespace: str, name: str) -> float:
    """The Job's ``creationTimestamp`` (the API server's clock), in epoch seconds."""
    stamp = job(kube, namespace, name)["metadata"]["creationTimestamp"]
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def delete_quietly(kube: RealKube, path: str) -> None:
    try:
        kube.request("DELETE", path)
    except urllib.error.HTTPError as err:
        if err.code != 404:
            raise
