"""Which node a pod may go to, as the fake kubelet binds pods when no scheduler runs.

``gpus_of(pod)``: the ``nvidia.com/gpu`` its containers ask for (limits, else requests).
``node_matches(pod, node)``: the node satisfies the pod's ``nodeSelector`` and its required
node affinity (any term; within a term every ``matchExpressions`` requirement on the node's
labels and every ``matchFields`` requirement on ``metadata.name``).
"""

from __future__ import annotations

from typing import Any

from starburst.adapters.kubernetes.quantity import quantity

Obj = dict[str, Any]


def gpus_of(pod: Obj) -> int:
    total = 0
    for container in pod["spec"].get("containers") or ():
        resources = container.get("resources") or {}
        value = (resources.get("limits") or {}).get("nvidia.com/gpu") or (
            resources.get("requests") or {}
        ).get("nvidia.com/gpu")
        total += int(quantity(str(value))) if value else 0
    return total


def _matches_expression(labels: dict[str, str], expr: Obj) -> bool:
    key, op, values = expr["key"], expr["operator"], expr.get("values") or []
    if op == "In":
        return labels.get(key) in values
    if op == "NotIn":
        return labels.get(key) not in values
    if op == "Exists":
        return key in labels
    if op == "DoesNotExist":
        return key not in labels
    return False


def node_matches(pod: Obj, node: Obj) -> bool:
    """Does ``node`` satisfy the pod's nodeSelector and required node affinity?"""
    meta = node["metadata"]
    labels = meta.get("labels") or {}
    spec = pod["spec"]
    if any(labels.get(k) != v for k, v in (spec.get("nodeSelector") or {}).items()):
        return False
    required = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ) or {}
    terms = required.get("nodeSelectorTerms") or []
    if not terms:
        return True
    fields = {"metadata.name": meta["name"]}
    return any(
        all(_matches_expression(labels, e) for e in term.get("matchExpressions") or ())
        and all(_matches_expression(fields, e) for e in term.get("matchFields") or ())
        for term in terms
    )
