"""The three patch formats the API server accepts for JSON objects.

- *merge patch* (RFC 7386, ``application/merge-patch+json``): maps merge recursively, ``null``
  deletes a key, lists are replaced whole.
- *JSON patch* (RFC 6902, ``application/json-patch+json``): a list of ``add``/``remove``/
  ``replace``/``move``/``copy``/``test`` operations on JSON pointers; a failed ``test`` or a
  missing path rejects the whole patch.
- *strategic merge patch* (``application/strategic-merge-patch+json``): like a merge patch,
  but lists of objects with a *patch merge key* merge element by element (``containers``,
  ``env``, ``volumes`` by ``name``, ``conditions`` by ``type``, ``ownerReferences`` by
  ``uid``, ...), ``finalizers`` merge as a set, and the directives ``$patch: replace|delete``,
  ``$deleteFromPrimitiveList/<list>``, ``$retainKeys`` and ``$setElementOrder/<list>`` work.
  Lists without a merge key (``nodeSelectorTerms``, ``matchExpressions``, ``tolerations``,
  ``taints``, ``args``) are replaced whole, as their Go types declare.

Invariant: patch functions never modify their inputs; they return new values.
"""

from __future__ import annotations

import copy
from typing import Any

from tests.kubeapi.status import ApiError

MERGE_KEYS = {
    "containers": "name",
    "initContainers": "name",
    "ephemeralContainers": "name",
    "env": "name",
    "volumes": "name",
    "volumeMounts": "mountPath",
    "volumeDevices": "devicePath",
    "ports": "containerPort",
    "imagePullSecrets": "name",
    "conditions": "type",
    "ownerReferences": "uid",
    "hostAliases": "ip",
    "addresses": "type",
    "resourceClaims": "name",
}
SET_LISTS = frozenset({"finalizers"})


def _unprocessable(message: str) -> ApiError:
    return ApiError(422, "Invalid", f"the server rejected our request due to an error: {message}")


def merge_patch(target: Any, patch: Any) -> Any:
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


# -- JSON patch ----------------------------------------------------------------------------
def _pointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise _unprocessable(f"invalid JSON pointer {path!r}")
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _walk(doc: Any, parts: list[str]) -> Any:
    for part in parts:
        if isinstance(doc, dict) and part in doc:
            doc = doc[part]
        elif isinstance(doc, list) and part.isdigit() and int(part) < len(doc):
            doc = doc[int(part)]
        else:
            raise _unprocessable(f"path /{'/'.join(parts)} does not exist")
    return doc


def _remove(doc: Any, parts: list[str]) -> Any:
    parent, last = _walk(doc, parts[:-1]), parts[-1]
    if isinstance(parent, dict) and last in parent:
        return parent.pop(last)
    if isinstance(parent, list) and last.isdigit() and int(last) < len(parent):
        return parent.pop(int(last))
    raise _unprocessable(f"unable to remove nonexistent key: {last}")


def _add(doc: Any, parts: list[str], value: Any, replace: bool = False) -> Any:
    if not parts:
        return value
    parent, last = _walk(doc, parts[:-1]), parts[-1]
    if isinstance(parent, dict):
        if replace and last not in parent:
            raise _unprocessable(f"replace operation does not apply: doc is missing key: {last}")
        parent[last] = value
    elif isinstance(parent, list):
        if last == "-" and not replace:
            parent.append(value)
        elif last.isdigit() and int(last) <= len(parent) - (1 if replace else 0):
            if replace:
                parent[int(last)] = value
            else:
                parent.insert(int(last), value)
        else:
            raise _unprocessable(f"index out of range: {last}")
    else:
        raise _unprocessable(f"cannot add to a scalar at {'/'.join(parts)}")
    return doc


def json_patch(target: Any, ops: Any) -> Any:
    if not isinstance(ops, list):
        raise ApiError(400, "BadRequest", "json patch must be a list of operations")
    doc = copy.deepcopy(target)
    for op in ops:
        if not isinstance(op, dict) or "op" not in op or "path" not in op:
            raise _unprocessable(f"invalid operation {op!r}")
        kind, parts = op["op"], _pointer(op["path"])
        if kind == "add":
            doc = _add(doc, parts, copy.deepcopy(op.get("value")))
        elif kind == "remove":
            _remove(doc, parts)
        elif kind == "replace":
            doc = _add(doc, parts, copy.deepcopy(op.get("value")), replace=True)
        elif kind in ("move", "copy"):
            source = _pointer(op.get("from", ""))
            value = _remove(doc, source) if kind == "move" else copy.deepcopy(_walk(doc, source))
            doc = _add(doc, parts, value)
        elif kind == "test":
            if _walk(doc, parts) != op.get("value"):
                raise _unprocessable(f"testing value {op['path']} failed")
        else:
            raise _unprocessable(f"unexpected kind: {kind}")
    return doc


# -- strategic merge patch -----------------------------------------------------------------
def strategic_merge_patch(target: Any, patch: Any) -> Any:
    if not isinstance(patch, dict):
        raise ApiError(400, "BadRequest", "strategic merge patch must be a JSON object")
    return _merge_map(target if isinstance(target, dict) else {}, patch)


def _merge_map(target: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    directive = patch.get("$patch")
    if directive == "replace":
        return {k: copy.deepcopy(v) for k, v in patch.items() if k != "$patch"}
    result = dict(target)
    retain = patch.get("$retainKeys")
    for key, value in patch.items():
        if key.startswith("$setElementOrder/") or key in ("$retainKeys", "$patch"):
            continue
        if key.startswith("$deleteFromPrimitiveList/"):
            name = key.split("/", 1)[1]
            result[name] = [v for v in result.get(name) or [] if v not in value]
            continue
        if value is None:
            result.pop(key, None)
        elif isinstance(value, dict):
            if value.get("$patch") == "delete":
                result.pop(key, None)
            else:
                old = result.get(key)
                result[key] = _merge_map(old if isinstance(old, dict) else {}, value)
        elif isinstance(value, list):
            result[key] = _merge_list(key, result.get(key), value)
        else:
            result[key] = value
    if isinstance(retain, list):
        result = {k: v for k, v in result.items() if k in retain}
    return result


def _merge_list(name: str, old: Any, patch: list[Any]) -> list[Any]:
    old_list = old if isinstance(old, list) else []
    if any(isinstance(e, dict) and e.get("$patch") == "replace" for e in patch):
        return [copy.deepcopy(e) for e in patch if not (isinstance(e, dict) and "$patch" in e)]
    if name in SET_LISTS:
        return list(old_list) + [v for v in patch if v not in old_list]
    key = MERGE_KEYS.get(name)
    if key is None or not all(isinstance(e, dict) for e in patch):
        return copy.deepcopy(patch)
    result = [copy.deepcopy(e) for e in old_list]
    for element in patch:
        where = next(
            (
                i
                for i, e in enumerate(result)
                if isinstance(e, dict) and e.get(key) == element.get(key)
            ),
            None,
        )
        if element.get("$patch") == "delete":
            if where is not None:
                del result[where]
        elif where is None:
            result.append(_merge_map({}, element))
        else:
            result[where] = _merge_map(result[where], element)
    return result
