"""The resource types the stand-in serves and the discovery documents that describe them.

Terms: a *resource type* is one REST collection (``pods``, ``jobs.batch``) with its group,
version, kind, scope (namespaced or cluster), whether it has a ``status`` subresource, the
field selectors it supports, and what a delete answers (the deleted object, or a ``Status``).

Served: namespaces, nodes, pods, events (core/v1 and events.k8s.io/v1), batch/v1 jobs and
coordination.k8s.io/v1 leases. Discovery (``/api``, ``/apis``, ``/api/v1``, ...) lists exactly
these, so ``kubectl`` can find them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tests.kubeapi.selectors import FieldGetter, path_getter

_META = ("metadata.name", "metadata.namespace")


def _getters(*paths: str) -> dict[str, FieldGetter]:
    return {p: path_getter(p) for p in (*_META, *paths)}


@dataclass(frozen=True, slots=True)
class ResourceType:
    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool
    status_subresource: bool = False
    returns_deleted: bool = False
    short_names: tuple[str, ...] = ()
    fields: Mapping[str, FieldGetter] = field(default_factory=lambda: _getters())

    @property
    def key(self) -> str:
        return f"{self.plural}.{self.group}" if self.group else self.plural

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version


_EVENT_FIELDS = (
    "involvedObject.kind",
    "involvedObject.namespace",
    "involvedObject.name",
    "involvedObject.uid",
    "involvedObject.apiVersion",
    "involvedObject.resourceVersion",
    "involvedObject.fieldPath",
    "reason",
    "reportingComponent",
    "source",
    "type",
)

RESOURCE_TYPES: tuple[ResourceType, ...] = (
    ResourceType(
        "", "v1", "namespaces", "Namespace", False, True, True, ("ns",), _getters("status.phase")
    ),
    ResourceType(
        "", "v1", "nodes", "Node", False, True, False, ("no",), _getters("spec.unschedulable")
    ),
    ResourceType(
        "",
        "v1",
        "pods",
        "Pod",
        True,
        True,
        True,
        ("po",),
        _getters(
            "spec.nodeName",
            "spec.restartPolicy",
            "spec.schedulerName",
            "spec.serviceAccountName",
            "status.phase",
            "status.podIP",
            "status.nominatedNodeName",
        ),
    ),
    ResourceType(
        "", "v1", "events", "Event", True, False, False, ("ev",), _getters(*_EVENT_FIELDS)
    ),
    ResourceType(
        "events.k8s.io",
        "v1",
        "events",
        "Event",
        True,
        False,
        False,
        ("ev",),
        _getters(
            "regarding.kind",
            "regarding.namespace",
            "regarding.name",
            "regarding.uid",
            "reason",
            "type",
            "reportingController",
        ),
    ),
    ResourceType(
        "batch", "v1", "jobs", "Job", True, True, False, (), _getters("status.successful")
    ),
    ResourceType("coordination.k8s.io", "v1", "leases", "Lease", True, False, False),
)

BY_PATH: dict[tuple[str, str, str], ResourceType] = {
    (r.group, r.version, r.plural): r for r in RESOURCE_TYPES
}


def find(group: str, version: str, plural: str) -> ResourceType | None:
    return BY_PATH.get((group, version, plural))


_VERBS = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]


def resource_list(group: str, version: str) -> dict[str, Any] | None:
    types = [r for r in RESOURCE_TYPES if r.group == group and r.version == version]
    if not types:
        return None
    resources: list[dict[str, Any]] = []
    for r in types:
        resources.append(
            {
                "name": r.plural,
                "singularName": r.kind.lower(),
                "namespaced": r.namespaced,
                "kind": r.kind,
                "verbs": _VERBS,
                "shortNames": list(r.short_names),
            }
        )
        if r.status_subresource:
            resources.append(
                {
                    "name": f"{r.plural}/status",
                    "singularName": "",
                    "namespaced": r.namespaced,
                    "kind": r.kind,
                    "verbs": ["get", "patch", "update"],
                }
            )
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": f"{group}/{version}" if group else version,
        "resources": resources,
    }


def api_group(group: str) -> dict[str, Any] | None:
    versions = sorted({r.version for r in RESOURCE_TYPES if r.group == group})
    if not group or not versions:
        return None
    entries = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
    return {
        "kind": "APIGroup",
        "apiVersion": "v1",
        "name": group,
        "versions": entries,
        "preferredVersion": entries[0],
    }


def api_group_list() -> dict[str, Any]:
    groups = sorted({r.group for r in RESOURCE_TYPES if r.group})
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": [api_group(g) for g in groups]}


def api_versions(address: str) -> dict[str, Any]:
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": address}],
    }


VERSION_INFO = {
    "major": "1",
    "minor": "31",
    "gitVersion": "v1.31.0-starburst-standin",
    "gitCommit": "",
    "gitTreeState": "clean",
    "buildDate": "2026-01-01T00:00:00Z",
    "goVersion": "go1.22",
    "compiler": "gc",
    "platform": "linux/amd64",
}
