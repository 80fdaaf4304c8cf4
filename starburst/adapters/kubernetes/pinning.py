"""Pinning a Job's pods to the nodes of its placement, in the placement's counts.

A real API server accepts only one value in a node *field* selector (``matchFields:
metadata.name In [a]``; ``ValidateNodeFieldSelectorRequirement``), so a Job split over several
nodes cannot be pinned by node name. And the pod template of a suspended Job may change only
in its *scheduling directives* (node affinity, node selector, tolerations, scheduling gates;
not topology spread constraints nor pod anti-affinity), so nothing in a user's template can
say "three pods on a, one on b". Starburst therefore pins as Kueue's topology-aware scheduling
does:

1. *The node set* — the template's required node affinity gains ``kubernetes.io/hostname In
   [a, b]`` (the nodes' hostname labels) in every term (terms are ORed, so the requirement is
   ANDed into each; a term Kueue or the user put there keeps its own requirements). No pod of
   the Job can land outside the placement, whoever schedules it.
2. *The counts* (only when the placement has several nodes) — the template also carries the
   scheduling gate ``starburst.io/placement``, so its pods are created but not scheduled.
   Starburst's pod watch releases each gated pod of a Job it started: it picks a node of the
   placement that still has room for one more of the Job's pods (placement GPUs on that node ÷
   GPUs per pod, minus pods already assigned there), adds ``nodeSelector:
   kubernetes.io/hostname: <node>`` to the pod and removes the gate, in one JSON patch (both
   are allowed on a gated pod since Kubernetes 1.27, GA in 1.30). The scheduler then binds
   each pod to exactly its node.

Why not the alternatives: topology spread (``maxSkew``) can force only even splits and cannot
be added to an existing Job's template; pod anti-affinity only one pod per node, and cannot be
added either; one Job per node group would split a Job the user created and watches.

Terms: *quota* — pods of the Job a node of the placement takes; *assigned* — its unfinished
pods bound to, or selected onto, a node. Invariant: a pod is released only while
``assigned < quota`` on its node, so the counts match the placement (a replaced pod is released
again when its predecessor finished).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

HOSTNAME = "kubernetes.io/hostname"
GATE = "starburst.io/placement"

Obj = Mapping[str, Any]


def pinned_scheduling(pod_spec: Obj, hostnames: Sequence[str]) -> dict[str, Any]:
    """The template's new ``affinity`` (and ``schedulingGates`` when several nodes): a merge
    onto ``pod_spec`` that pins its pods to ``hostnames``."""
    required = ((pod_spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ) or {}
    terms = copy.deepcopy(required.get("nodeSelectorTerms") or [{}])
    pin = {"key": HOSTNAME, "operator": "In", "values": sorted(set(hostnames))}
    for term in terms:
        kept = [e for e in term.get("matchExpressions") or () if e.get("key") != HOSTNAME]
        term["matchExpressions"] = [*kept, pin]
    out: dict[str, Any] = {
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}
            }
        }
    }
    if len(pin["values"]) > 1:
        gates = [g for g in pod_spec.get("schedulingGates") or () if g.get("name") != GATE]
        out["schedulingGates"] = [*copy.deepcopy(gates), {"name": GATE}]
    return out


def gated(pod: Obj) -> bool:
    """Whether the pod waits for Starburst to choose its node."""
    return any(g.get("name") == GATE for g in (pod.get("spec") or {}).get("schedulingGates") or ())


def assigned_node(pod: Obj, node_of_hostname: Mapping[str, str]) -> str | None:
    """The node an unfinished pod is bound to, or selected onto, if any."""
    spec = pod.get("spec") or {}
    if spec.get("nodeName"):
        return str(spec["nodeName"])
    host = (spec.get("nodeSelector") or {}).get(HOSTNAME)
    return node_of_hostname.get(host, host) if host else None


def quota(parts: Sequence[tuple[str, int]], gpus_per_pod: int) -> dict[str, int]:
    """Pods per node of a placement (node, GPUs) for pods of ``gpus_per_pod`` GPUs."""
    return {node: (gpus // gpus_per_pod if gpus_per_pod else 1) for node, gpus in parts}


def choose(quotas: Mapping[str, int], assigned: Mapping[str, int]) -> str | None:
    """The first node (in name order) with room for one more pod, else None."""
    for node in sorted(quotas):
        if assigned.get(node, 0) < quotas[node]:
            return node
    return None


def release_patch(pod: Obj, hostname: str) -> list[dict[str, Any]]:
    """A JSON patch that selects the pod onto ``hostname`` and removes Starburst's gate; it
    fails (422) rather than doing anything else if the gate moved meanwhile."""
    spec = pod.get("spec") or {}
    index = next(
        i for i, g in enumerate(spec.get("schedulingGates") or ()) if g.get("name") == GATE
    )
    ops: list[dict[str, Any]] = [
        {"op": "test", "path": f"/spec/schedulingGates/{index}/name", "value": GATE},
        {"op": "remove", "path": f"/spec/schedulingGates/{index}"},
    ]
    if spec.get("nodeSelector"):
        ops.append(
            {"op": "add", "path": "/spec/nodeSelector/kubernetes.io~1hostname", "value": hostname}
        )
    else:
        ops.append({"op": "add", "path": "/spec/nodeSelector", "value": {HOSTNAME: hostname}})
    return ops
