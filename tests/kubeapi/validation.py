"""Object validation the stand-in shares with a real API server, ported from Kubernetes.

Rules (each answers 422 ``Invalid`` with Kubernetes' own field path and message):
- *node field selectors* (``ValidateNodeFieldSelectorRequirement``): a ``matchFields``
  requirement of a required node affinity term must use ``In`` or ``NotIn`` with exactly one
  value, on the key ``metadata.name``; checked on Pods and on Job pod templates, at create and
  at update.
- *scheduling gates of a Pod* (``validatePodSchedulingGates`` and the update rules of "mutable
  pod scheduling directives", GA in 1.30): gates may be removed after creation, never added;
  while a Pod is still gated, ``nodeSelector`` may gain keys (never change or lose one) and
  its node affinity may be set when it had none.
- *Events* (``legacyValidateEvent``): an Event's ``involvedObject.namespace`` is its own
  namespace (empty only in ``default``); one with an ``eventTime`` also names its reporting
  controller and instance, action and reason.
- *counts* (``ValidateJobSpec``, ``ValidateLeaseSpec``): a Job's ``parallelism``,
  ``completions`` and ``backoffLimit`` are not negative; a Lease's ``leaseDurationSeconds`` is
  positive and its ``leaseTransitions`` not negative.

Every 422 lists its field errors as ``details.causes`` (``status.invalid``), as a real server's.
PodSecurity (``podsecurity.py``) is admission, not validation: a refused object is 403.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

from tests.kubeapi.status import ApiError, invalid

Obj = dict[str, Any]
_AFFINITY = "affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
ONE_VALUE = "must be only one value when `operator` is 'In' or 'NotIn' for node field selector"


def _error(kind: str, name: str, message: str) -> ApiError:
    return invalid(kind, name, message)


def node_field_selector_errors(pod_spec: Obj, path: str) -> list[str]:
    """Kubernetes' messages for every invalid ``matchFields`` requirement of ``pod_spec``."""
    required = ((pod_spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ) or {}
    errors = []
    for t, term in enumerate(required.get("nodeSelectorTerms") or ()):
        for f, req in enumerate(term.get("matchFields") or ()):
            where = f"{path}.{_AFFINITY}.nodeSelectorTerms[{t}].matchFields[{f}]"
            op = req.get("operator")
            if op in ("In", "NotIn"):
                if len(req.get("values") or ()) != 1:
                    errors.append(f"{where}.values: Required value: {ONE_VALUE}")
            else:
                errors.append(
                    f'{where}.operator: Invalid value: "{op}": not a valid selector operator'
                )
            if req.get("key") != "metadata.name":
                errors.append(
                    f'{where}.key: Invalid value: "{req.get("key")}": not a valid '
                    "field selector key"
                )
    return errors


def _bounds(spec: Obj, path: str, keys: tuple[str, ...], least: int) -> list[str]:
    """Kubernetes' messages for integer fields below their minimum (``ValidateNonnegativeField``
    for 0, "must be greater than 0" for 1)."""
    bound = "greater than or equal to 0" if least == 0 else "greater than 0"
    return [
        f"{path}.{key}: Invalid value: {spec[key]}: must be {bound}"
        for key in keys
        if isinstance(spec.get(key), int) and spec[key] < least
    ]


def validate_object(kind: str, obj: Obj) -> None:
    """The rules that hold for an object whatever the write (create or update)."""
    name = obj["metadata"].get("name", "")
    spec = obj.get("spec") or {}
    if kind == "Pod":
        errors = node_field_selector_errors(spec, "spec")
        what = "Pod"
    elif kind == "Job":
        errors = _bounds(spec, "spec", ("parallelism", "completions", "backoffLimit"), 0)
        template = (spec.get("template") or {}).get("spec") or {}
        errors += node_field_selector_errors(template, "spec.template.spec")
        what = "Job.batch"
    elif kind == "Event" and obj.get("apiVersion") == "v1":  # (not events.k8s.io's)
        errors = _event_errors(obj)
        what = "Event"
    elif kind == "Lease":
        errors = _bounds(spec, "spec", ("leaseDurationSeconds",), 1)
        errors += _bounds(spec, "spec", ("leaseTransitions",), 0)
        what = "Lease.coordination.k8s.io"
    else:
        return
    if errors:
        raise _error(
            what, name, ", ".join(errors) if len(errors) == 1 else "[" + ", ".join(errors) + "]"
        )


def _event_errors(event: Obj) -> list[str]:
    """``legacyValidateEvent`` of core/v1 Events: the involved object's namespace is the
    Event's (empty only for an Event in ``default``, or, for one with an ``eventTime``, in
    ``kube-system``); an Event with an ``eventTime`` names its reporting controller and
    instance, its action and its reason."""
    namespace = event["metadata"].get("namespace") or ""
    involved = (event.get("involvedObject") or {}).get("namespace") or ""
    where = f'involvedObject.namespace: Invalid value: "{involved}": does not match event.namespace'
    if not event.get("eventTime"):
        if (not involved and namespace not in ("", "default")) or (
            involved and involved != namespace
        ):
            return [where]
        return []
    errors = [where] if not involved and namespace != "kube-system" else []
    for key in ("reportingController", "reportingInstance", "action", "reason"):
        if not event.get(key if key != "reportingController" else "reportingComponent"):
            errors.append(f"{key}: Required value")
    return errors


def gated_pod_update(old: Obj, new: Obj) -> tuple[Obj, Obj] | None:
    """The two pod specs with the changes a (formerly) gated Pod may make taken out, or None
    when the update touches no scheduling gate; 422 for a forbidden gate or selector change."""
    before, after = old.get("spec") or {}, new.get("spec") or {}
    gates_before = [g.get("name") for g in before.get("schedulingGates") or ()]
    gates_after = [g.get("name") for g in after.get("schedulingGates") or ()]
    if not gates_before and not gates_after:
        return None
    name = old["metadata"]["name"]
    for i, gate in enumerate(gates_after):
        if gate not in gates_before:
            raise _error(
                "Pod",
                name,
                f"spec.schedulingGates[{i}].name: Forbidden: only deletion is allowed, "
                f"but found new scheduling gate '{gate}'",
            )
    before, after = copy.deepcopy(before), copy.deepcopy(after)
    for spec in (before, after):
        spec.pop("schedulingGates", None)
    _take(before, after, "nodeSelector", _adds_keys, name)
    _take(before, after, "affinity", lambda b, a: not b, name)
    return before, after


def _adds_keys(before: Obj, after: Obj) -> bool:
    return all(after.get(k) == v for k, v in before.items())


def _take(
    before: Obj, after: Obj, key: str, allowed: Callable[[Any, Any], bool], name: str
) -> None:
    old, new = before.pop(key, None) or {}, after.pop(key, None) or {}
    if old != new and not allowed(old, new):
        value = json.dumps(new, separators=(",", ":"), sort_keys=True)
        raise _error(
            "Pod",
            name,
            f"spec.{key}: Invalid value: {value}: only additions to "
            f"spec.{key} are allowed (no mutations or deletions)",
        )
