"""The stand-in's kube-scheduler: binds pending Pods to Nodes with room.

A Pod is *pending* while it has no ``spec.nodeName`` and no scheduling gate (a gated Pod
waits, as ``SchedulingGated``, until its last gate is removed). A Node is *eligible* for it when the
node is Ready, not cordoned (``spec.unschedulable``), every NoSchedule/NoExecute taint is
tolerated, ``nodeSelector`` matches its labels, the required node affinity
(``nodeSelectorTerms``: any term, all of a term's ``matchExpressions``/``matchFields``, with
In/NotIn/Exists/DoesNotExist/Gt/Lt) holds, and its allocatable resources minus the requests of
the Pods bound to it and not finished cover the Pod's requests (cpu, memory,
``nvidia.com/gpu``, ...; a container's limit stands in for a missing request, as in
Kubernetes). Nodes are tried in name order; the first eligible one wins.

Invariants: usage per node is kept incrementally from each pod's stored state (no rescans;
a pod bound earlier in the same pass counts at once); a Pod that
fits nowhere stays Pending with condition ``PodScheduled=False, reason Unschedulable`` and is
retried whenever a Pod finishes or goes away or a Node changes; binding sets only
``spec.nodeName`` and the ``PodScheduled`` condition.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from tests.kubeapi.quantity import parse_quantity
from tests.kubeapi.resources import BY_PATH
from tests.kubeapi.store import Change, Obj, Store

PODS = BY_PATH[("", "v1", "pods")]
NODES = BY_PATH[("", "v1", "nodes")]
TERMINAL = ("Succeeded", "Failed")
Requests = dict[str, Decimal]


def pod_requests(pod: Obj) -> Requests:
    total: Requests = defaultdict(Decimal)
    for container in (pod.get("spec") or {}).get("containers") or []:
        resources = container.get("resources") or {}
        wanted = {**(resources.get("limits") or {}), **(resources.get("requests") or {})}
        for name, value in wanted.items():
            total[name] += parse_quantity(value)
    return dict(total)


def _holds_room(pod: Obj | None) -> bool:
    if pod is None or not (pod.get("spec") or {}).get("nodeName"):
        return False
    return (pod.get("status") or {}).get("phase") not in TERMINAL


def _tolerates(tolerations: list[dict[str, Any]], taint: Mapping[str, Any]) -> bool:
    for tol in tolerations:
        if tol.get("effect") and tol["effect"] != taint.get("effect"):
            continue
        if tol.get("operator") == "Exists" and not tol.get("key"):
            return True
        if tol.get("key") != taint.get("key"):
            continue
        if tol.get("operator") == "Exists" or tol.get("value", "") == taint.get("value", ""):
            return True
    return False


def _expression_holds(expr: Mapping[str, Any], value: str | None) -> bool:
    op, values = expr.get("operator"), expr.get("values") or []
    if op == "In":
        return value is not None and value in values
    if op == "NotIn":
        return value is None or value not in values
    if op == "Exists":
        return value is not None
    if op == "DoesNotExist":
        return value is None
    if op in ("Gt", "Lt") and value is not None and values:
        try:
            a, b = int(value), int(values[0])
        except ValueError:
            return False
        return a > b if op == "Gt" else a < b
    return False


def affinity_allows(pod: Obj, node: Obj) -> bool:
    spec = pod.get("spec") or {}
    labels = node["metadata"].get("labels") or {}
    selector = spec.get("nodeSelector") or {}
    if any(labels.get(k) != v for k, v in selector.items()):
        return False
    required = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    )
    if not required:
        return True
    fields = {"metadata.name": node["metadata"]["name"]}
    for term in required.get("nodeSelectorTerms") or []:
        exprs = term.get("matchExpressions") or []
        field_exprs = term.get("matchFields") or []
        if not exprs and not field_exprs:
            continue  # an empty term matches nothing
        if all(_expression_holds(e, labels.get(e.get("key"))) for e in exprs) and all(
            _expression_holds(e, fields.get(e.get("key"))) for e in field_exprs
        ):
            return True
    return False


def _gated(pod: Obj) -> bool:
    return bool((pod.get("spec") or {}).get("schedulingGates"))


def node_ready(node: Obj) -> bool:
    conditions = (node.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


class Scheduler:
    def __init__(self, store: Store) -> None:
        self.store = store
        self.usage: dict[str, Requests] = defaultdict(lambda: defaultdict(Decimal))
        self.pending: dict[tuple[str, str], None] = {}
        self.held: dict[tuple[str, str], tuple[str, Requests]] = {}

    def observe(self, change: Change) -> None:
        if change.rt is PODS:
            self._account(change)
            new = change.obj if change.type != "DELETED" else None
            if new is not None and self._is_pending(new):
                meta = new["metadata"]
                self.pending[(meta["namespace"], meta["name"])] = None
            frees = _holds_room(change.old) and not _holds_room(new)
            ungated = (
                change.old is not None
                and _gated(change.old)
                and new is not None
                and not _gated(new)
            )
            if frees or ungated or change.type == "ADDED":
                self.schedule()
        elif change.rt is NODES:
            self.schedule()

    @staticmethod
    def _is_pending(pod: Obj) -> bool:
        spec = pod.get("spec") or {}
        return (
            not spec.get("nodeName")
            and not pod["metadata"].get("deletionTimestamp")
            and not _gated(pod)
            and spec.get("schedulerName", "default-scheduler") == "default-scheduler"
            and (pod.get("status") or {}).get("phase", "Pending") == "Pending"
        )

    def _account(self, change: Change) -> None:
        meta = change.obj["metadata"]
        self._hold(meta["namespace"], meta["name"])

    def _hold(self, ns: str, name: str) -> None:
        """Bring the usage of one pod in line with its stored state (idempotent)."""
        pod = self.store.find(PODS, ns, name)
        held = self.held.pop((ns, name), None)
        if held is not None:
            for resource, amount in held[1].items():
                self.usage[held[0]][resource] -= amount
        if pod is not None and _holds_room(pod):
            wanted = pod_requests(pod)
            self.held[(ns, name)] = (pod["spec"]["nodeName"], wanted)
            for resource, amount in wanted.items():
                self.usage[pod["spec"]["nodeName"]][resource] += amount

    def schedule(self) -> None:
        if not self.pending:
            return
        nodes = sorted(self.store.items(NODES), key=lambda n: n["metadata"]["name"])
        for key in list(self.pending):
            pod = self.store.find(PODS, *key)
            if pod is None or not self._is_pending(pod):
                self.pending.pop(key, None)
                continue
            node = self._choose(pod, nodes)
            if node is not None:
                self.pending.pop(key, None)
                self._bind(pod, node)
            else:
                self._mark_unschedulable(pod, len(nodes))

    def _choose(self, pod: Obj, nodes: list[Obj]) -> str | None:
        wanted = pod_requests(pod)
        tolerations = (pod.get("spec") or {}).get("tolerations") or []
        for node in nodes:
            spec = node.get("spec") or {}
            if spec.get("unschedulable") or not node_ready(node):
                continue
            taints = [
                t
                for t in spec.get("taints") or []
                if t.get("effect") in ("NoSchedule", "NoExecute")
            ]
            if not all(_tolerates(tolerations, t) for t in taints):
                continue
            if not affinity_allows(pod, node):
                continue
            if self._fits(node, wanted):
                return str(node["metadata"]["name"])
        return None

    def _fits(self, node: Obj, wanted: Requests) -> bool:
        allocatable = (node.get("status") or {}).get("allocatable") or {}
        used = self.usage[node["metadata"]["name"]]
        for name, amount in wanted.items():
            if amount <= 0:
                continue
            have = parse_quantity(allocatable[name]) if name in allocatable else Decimal(0)
            if have - used.get(name, Decimal(0)) < amount:
                return False
        return True

    def _bind(self, pod: Obj, node: str) -> None:
        def bind(obj: Obj) -> None:
            obj["spec"]["nodeName"] = node
            status = obj.setdefault("status", {})
            others = [c for c in status.get("conditions") or [] if c.get("type") != "PodScheduled"]
            status["conditions"] = [*others, {"type": "PodScheduled", "status": "True"}]

        meta = pod["metadata"]
        self.store.mutate(PODS, meta["namespace"], meta["name"], bind, "binding", validate=False)
        self._hold(meta["namespace"], meta["name"])  # later pods in this pass must see it

    def _mark_unschedulable(self, pod: Obj, nodes: int) -> None:
        conditions = (pod.get("status") or {}).get("conditions") or []
        if any(c.get("type") == "PodScheduled" and c.get("status") == "False" for c in conditions):
            return

        def mark(obj: Obj) -> None:
            obj.setdefault("status", {})["conditions"] = [
                *conditions,
                {
                    "type": "PodScheduled",
                    "status": "False",
                    "reason": "Unschedulable",
                    "message": f"0/{nodes} nodes are available",
                },
            ]

        meta = pod["metadata"]
        self.store.mutate(PODS, meta["namespace"], meta["name"], mark, "status", validate=False)
