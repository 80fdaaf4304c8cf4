"""The object store behind the stand-in: objects, resource versions, history and cascades.

Terms:
- *resourceVersion* (rv): one global counter, bumped by every write; an object's rv is the
  counter value of its last write, and a list's rv is the counter when it was taken.
- *history*: the last ``history`` changes (``Change``: rv, type ADDED/MODIFIED/DELETED, the
  new object and the old one). Watches replay it; a watch from an rv older than the history
  window (``compacted``) is expired (410 Gone), as after etcd compaction.
- *dependents*: objects whose ``ownerReferences`` name an owner's uid. Deleting the owner
  with ``Background`` (or ``Foreground``) propagation deletes them; ``Orphan`` strips the
  reference. The default propagation is ``Background``, except ``Orphan`` for batch/v1 Jobs
  (the real API default, kept for backwards compatibility).
- *finalizers*: a delete of an object with ``metadata.finalizers`` only sets
  ``deletionTimestamp``; the update that removes the last finalizer deletes it.

Invariants: one re-entrant lock guards everything; stored objects are never mutated in place
(writes store fresh dicts), so readers, list snapshots and watch history can share them; after
every top-level write the registered controllers see each change in order (they run in the
writer's thread, so a Job's Pods exist by the time the create returns); an update that changes
nothing does not bump the rv or emit an event.
"""

from __future__ import annotations

import bisect
import copy
import threading
import uuid
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from tests.kubeapi import admission, podsecurity
from tests.kubeapi.metadata import (
    check_finalizers,
    check_labels,
    check_name,
    generated_suffix,
    server_owned,
    timestamp,
)
from tests.kubeapi.resources import RESOURCE_TYPES, ResourceType
from tests.kubeapi.selectors import (
    FieldSelector,
    LabelSelector,
    fields_match,
    labels_match,
)
from tests.kubeapi.status import (
    ApiError,
    already_exists,
    bad_request,
    conflict,
    invalid,
    not_found,
)

Obj = dict[str, Any]
Ref = tuple[str, str, str]  # (resource key, namespace, name)
_MODIFIED = (
    "the object has been modified; please apply your changes to the latest version and try again"
)

#: kinds with a status subresource whose objects a real server gives no generation
_NO_GENERATION = ("namespaces", "nodes")


def _precondition_failed(
    rt: ResourceType, name: str, field: str, wanted: str, actual: str, tail: str
) -> ApiError:
    """A delete's precondition that does not hold, in a real server's words (409)."""
    kind = f"{rt.kind}.{rt.group}" if rt.group else rt.kind
    return ApiError(
        409,
        "Conflict",
        f'Operation cannot be fulfilled on {kind} "{name}": the '
        f"{field} in the precondition ({wanted}) does not match the {field} in "
        f"record ({actual}). The object might have been {tail}",
        {"name": name, "group": rt.group, "kind": rt.kind},
    )


@dataclass(frozen=True, slots=True)
class Change:
    rv: int
    rt: ResourceType
    type: str
    obj: Obj
    old: Obj | None


class Store:
    def __init__(self, history: int = 10_000, now: Callable[[], datetime] | None = None) -> None:
        self.lock = threading.RLock()
        self.changed = threading.Condition(self.lock)
        self.now = now or (lambda: datetime.now(UTC))
        self.window = history
        self.history: list[Change] = []
        self.compacted = 0
        self.closed = False
        self.controllers: list[Callable[[Change], None]] = []
        self._rv = 1
        self._objects: dict[str, dict[tuple[str, str], Obj]] = {r.key: {} for r in RESOURCE_TYPES}
        self._by_uid: dict[str, Ref] = {}
        self._dependents: dict[str, set[Ref]] = {}
        self._propagation: dict[str, str] = {}
        self._pending: deque[Change] = deque()
        self._draining = False
        self._last_removed: Obj = {}

    # -- reads -----------------------------------------------------------------------------
    @property
    def resource_version(self) -> int:
        return self._rv

    def get(self, rt: ResourceType, ns: str, name: str) -> Obj:
        with self.lock:
            obj = self._objects[rt.key].get((ns, name))
            if obj is None:
                raise not_found(rt.plural, rt.group, name)
            return obj

    def find(self, rt: ResourceType, ns: str, name: str) -> Obj | None:
        with self.lock:
            return self._objects[rt.key].get((ns, name))

    def by_uid(self, uid: str) -> tuple[ResourceType, Obj] | None:
        with self.lock:
            ref = self._by_uid.get(uid)
            if ref is None:
                return None
            rt = _TYPES[ref[0]]
            return rt, self._objects[rt.key][(ref[1], ref[2])]

    def items(self, rt: ResourceType) -> Iterable[Obj]:
        return list(self._objects[rt.key].values())

    def select(
        self,
        rt: ResourceType,
        ns: str | None,
        labels: LabelSelector = (),
        fields: FieldSelector = (),
    ) -> tuple[list[Obj], int]:
        with self.lock:
            found = [
                obj
                for (obj_ns, _), obj in self._objects[rt.key].items()
                if (not ns or obj_ns == ns)
                and labels_match(labels, obj)
                and fields_match(fields, obj, rt.fields)
            ]
            found.sort(key=lambda o: (o["metadata"].get("namespace", ""), o["metadata"]["name"]))
            return found, self._rv

    def dependents(self, uid: str) -> list[Obj]:
        with self.lock:
            refs = sorted(self._dependents.get(uid, ()))
            return [self._objects[r][(ns, n)] for r, ns, n in refs]

    # -- writes ----------------------------------------------------------------------------
    def create(self, rt: ResourceType, ns: str, body: Obj) -> Obj:
        with self.lock:
            obj = copy.deepcopy(body)
            meta = obj.setdefault("metadata", {})
            if rt.namespaced:
                self._check_namespace(ns, meta)
            name = meta.get("name") or ""
            if not name and meta.get("generateName"):
                name = meta["generateName"] + generated_suffix()
            if not name:
                raise invalid(
                    rt.kind, "", "metadata.name: Required value: name or generateName is required"
                )
            check_name(rt, name)
            check_labels(rt, meta)
            if (ns, name) in self._objects[rt.key]:
                raise already_exists(rt.plural, rt.group, name)
            if meta.get("resourceVersion"):
                raise bad_request("resourceVersion should not be set on objects to be created")
            for key in ("deletionTimestamp", "deletionGracePeriodSeconds", "selfLink"):
                meta.pop(key, None)
            meta.update(name=name, uid=str(uuid.uuid4()), creationTimestamp=timestamp(self.now()))
            if rt.namespaced:
                meta["namespace"] = ns
            else:
                meta.pop("namespace", None)
            if rt.status_subresource and rt.key not in _NO_GENERATION:
                meta["generation"] = 1
            obj["kind"], obj["apiVersion"] = rt.kind, rt.api_version
            admission.default_on_create(rt, obj)
            if rt.key == "pods":
                podsecurity.admit_pod(obj, self._objects["namespaces"].get(("", ns)))
            self._put(rt, obj, None, "ADDED")
        self._drain()
        return obj

    def _check_namespace(self, ns: str, meta: Obj) -> None:
        if meta.get("namespace") not in (None, "", ns):
            raise bad_request(
                "the namespace of the provided object does not match the "
                "namespace sent on the request"
            )
        space = self._objects["namespaces"].get(("", ns))
        if space is None:
            raise not_found("namespaces", "", ns)
        if space["metadata"].get("deletionTimestamp"):
            raise ApiError(
                403,
                "Forbidden",
                f"unable to create new content in namespace {ns} because it is being terminated",
            )

    def update(
        self,
        rt: ResourceType,
        ns: str,
        name: str,
        body: Obj,
        subresource: str | None = None,
        validate: bool = True,
    ) -> Obj:
        with self.lock:
            old = self.get(rt, ns, name)
            result = self._update(rt, old, copy.deepcopy(body), subresource, validate)
        self._drain()
        return result

    def mutate(
        self,
        rt: ResourceType,
        ns: str,
        name: str,
        change: Callable[[Obj], None],
        subresource: str | None = None,
        validate: bool = True,
    ) -> Obj:
        """Read-modify-write under the lock (patches and the controllers use it)."""
        with self.lock:
            old = self.get(rt, ns, name)
            new = copy.deepcopy(old)
            change(new)
            result = self._update(rt, old, new, subresource, validate)
        self._drain()
        return result

    def _update(
        self, rt: ResourceType, old: Obj, new: Obj, subresource: str | None, validate: bool
    ) -> Obj:
        name = old["metadata"]["name"]
        meta = new.setdefault("metadata", {})
        if meta.get("name", name) != name:
            raise bad_request(
                f"the name of the object ({meta.get('name')}) does not match "
                f"the name on the URL ({name})"
            )
        if meta.get("resourceVersion") not in (None, "", old["metadata"]["resourceVersion"]):
            raise conflict(rt.plural, rt.group, name, _MODIFIED)
        if meta.get("uid") not in (None, "", old["metadata"]["uid"]):
            raise conflict(
                rt.plural,
                rt.group,
                name,
                "Precondition failed: UID in precondition: "
                f"{meta.get('uid')}, UID in object meta: {old['metadata']['uid']}",
            )
        if subresource == "binding":  # internal: spec.nodeName and status in one write
            merged = new
        elif subresource == "status":
            merged = copy.deepcopy(old)
            if "status" in new:
                merged["status"] = new["status"]
            else:
                merged.pop("status", None)
        else:
            merged = new
            if rt.status_subresource:
                merged.pop("status", None)
                if "status" in old:
                    merged["status"] = copy.deepcopy(old["status"])
            if validate:
                admission.validate_update(rt, old, merged)
        merged["metadata"] = server_owned(old["metadata"], merged["metadata"])
        check_labels(rt, merged["metadata"])
        merged["kind"], merged["apiVersion"] = rt.kind, rt.api_version
        new_meta = merged["metadata"]
        check_finalizers(rt, old, new_meta)
        if (
            rt.status_subresource
            and rt.key not in _NO_GENERATION
            and merged.get("spec") != old.get("spec")
        ):
            new_meta["generation"] = old["metadata"].get("generation", 1) + 1
        if not new_meta.get("finalizers"):
            new_meta.pop("finalizers", None)
        if merged == old:
            return old
        if new_meta.get("deletionTimestamp") and not new_meta.get("finalizers"):
            self._remove(rt, merged, old)
            return merged
        self._put(rt, merged, old, "MODIFIED")
        return merged

    def delete(
        self,
        rt: ResourceType,
        ns: str,
        name: str,
        propagation: str | None = None,
        preconditions: Obj | None = None,
    ) -> tuple[Obj, bool]:
        """Delete (or start deleting) an object; True when it is gone already."""
        with self.lock:
            obj = self.get(rt, ns, name)
            pre = preconditions or {}
            for key, field, tail in (
                ("uid", "UID", "deleted and then recreated"),
                ("resourceVersion", "ResourceVersion", "modified"),
            ):
                if pre.get(key) not in (None, "", obj["metadata"][key]):
                    raise _precondition_failed(
                        rt, name, field, pre[key], obj["metadata"][key], tail
                    )
            policy = propagation or ("Orphan" if rt.key == "jobs.batch" else "Background")
            if policy not in ("Orphan", "Background", "Foreground"):
                raise bad_request(f"unsupported propagationPolicy {policy!r}")
            if rt.key == "namespaces":
                result = self._delete_namespace(obj)
            elif obj["metadata"].get("finalizers"):
                result = self._start_deleting(rt, obj, policy)
            else:
                if policy == "Foreground":
                    self._collect(obj["metadata"]["uid"], "Background")
                self._remove(rt, obj, obj, policy)
                result = (self._last_removed, True)
        self._drain()
        return result

    def _start_deleting(self, rt: ResourceType, obj: Obj, policy: str) -> tuple[Obj, bool]:
        self._propagation[obj["metadata"]["uid"]] = policy
        if policy == "Foreground":
            self._collect(obj["metadata"]["uid"], "Background")
        if obj["metadata"].get("deletionTimestamp"):
            return obj, False
        new = copy.deepcopy(obj)
        new["metadata"]["deletionTimestamp"] = timestamp(self.now())
        new["metadata"]["deletionGracePeriodSeconds"] = 0
        self._put(rt, new, obj, "MODIFIED")
        return new, False

    def _delete_namespace(self, space: Obj) -> tuple[Obj, bool]:
        rt, name = _TYPES["namespaces"], space["metadata"]["name"]
        terminating = copy.deepcopy(space)
        terminating["metadata"]["deletionTimestamp"] = timestamp(self.now())
        terminating["status"] = {"phase": "Terminating"}
        self._put(rt, terminating, space, "MODIFIED")
        for other in RESOURCE_TYPES:
            if other.namespaced:
                for (ns, obj_name), obj in list(self._objects[other.key].items()):
                    if ns == name and (ns, obj_name) in self._objects[other.key]:
                        self._remove(other, obj, obj, "Background")
        self._remove(rt, terminating, terminating)
        return self._last_removed, True

    def _remove(self, rt: ResourceType, obj: Obj, old: Obj, policy: str | None = None) -> None:
        meta = obj["metadata"]
        key = (meta.get("namespace", ""), meta["name"])
        if self._objects[rt.key].pop(key, None) is None:
            return
        uid = meta["uid"]
        self._by_uid.pop(uid, None)
        self._index_owners(rt, old, None)
        gone = copy.deepcopy(obj)
        self._rv += 1
        gone["metadata"]["resourceVersion"] = str(self._rv)
        self._last_removed = gone
        self._record(Change(self._rv, rt, "DELETED", gone, old))
        self._collect(uid, policy or self._propagation.pop(uid, None) or "Background")

    def _collect(self, uid: str, policy: str) -> None:
        for ref in sorted(self._dependents.pop(uid, set())):
            rt = _TYPES[ref[0]]
            dependent = self._objects[rt.key].get((ref[1], ref[2]))
            if dependent is None:
                continue
            refs = dependent["metadata"].get("ownerReferences") or []
            others = [r for r in refs if r.get("uid") != uid]
            if policy == "Orphan" or any(r.get("uid") in self._by_uid for r in others):
                stripped = copy.deepcopy(dependent)
                stripped["metadata"]["ownerReferences"] = others
                if not others:
                    del stripped["metadata"]["ownerReferences"]
                self._put(rt, stripped, dependent, "MODIFIED")
            elif dependent["metadata"].get("finalizers"):
                self._start_deleting(rt, dependent, "Background")
            else:
                self._remove(rt, dependent, dependent, "Background")

    def _put(self, rt: ResourceType, obj: Obj, old: Obj | None, kind: str) -> None:
        self._rv += 1
        meta = obj["metadata"]
        meta["resourceVersion"] = str(self._rv)
        self._objects[rt.key][(meta.get("namespace", ""), meta["name"])] = obj
        self._by_uid[meta["uid"]] = (rt.key, meta.get("namespace", ""), meta["name"])
        self._index_owners(rt, old, obj)
        self._record(Change(self._rv, rt, kind, obj, old))

    def _index_owners(self, rt: ResourceType, old: Obj | None, new: Obj | None) -> None:
        for obj, add in ((old, False), (new, True)):
            if obj is None:
                continue
            meta = obj["metadata"]
            ref = (rt.key, meta.get("namespace", ""), meta["name"])
            for owner in meta.get("ownerReferences") or ():
                deps = self._dependents.setdefault(owner.get("uid", ""), set())
                if add:
                    deps.add(ref)
                else:
                    deps.discard(ref)

    def _record(self, change: Change) -> None:
        self.history.append(change)
        if len(self.history) > 2 * self.window:
            drop = len(self.history) - self.window
            self.compacted = self.history[drop - 1].rv
            del self.history[:drop]
        self._pending.append(change)
        self.changed.notify_all()

    def compact(self) -> None:
        """Forget all history, as etcd compaction does: older watches get 410 Gone."""
        with self.lock:
            self.compacted = self._rv
            self.history.clear()

    def _drain(self) -> None:
        with self.lock:
            if self._draining:
                return
            self._draining = True
            try:
                while self._pending:
                    change = self._pending.popleft()
                    for controller in self.controllers:
                        controller(change)
            finally:
                self._draining = False

    def history_after(self, rv: int) -> list[Change]:
        with self.lock:
            start = bisect.bisect_right(self.history, rv, key=lambda c: c.rv)
            return self.history[start:]

    def close(self) -> None:
        with self.lock:
            self.closed = True
            self.changed.notify_all()


_TYPES = {r.key: r for r in RESOURCE_TYPES}
