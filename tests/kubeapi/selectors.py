"""Label and field selectors, parsed and matched as the API server does.

Label selector grammar (comma-separated requirements, all must hold): ``key=value``,
``key==value``, ``key!=value``, ``key in (a,b)``, ``key notin (a,b)``, ``key`` (exists) and
``!key`` (does not exist). ``!=`` and ``notin`` also match objects without the label.

Field selectors support only ``=``, ``==`` and ``!=`` on the fields each resource declares
(``metadata.name`` and ``metadata.namespace`` everywhere); any other field is a 400 BadRequest
("field label not supported"), as on a real server. A missing field compares as "" and
booleans as "true"/"false".
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any

from tests.kubeapi.status import bad_request

_KEY = re.compile(
    r"^([a-z0-9A-Z]([-a-z0-9A-Z_.]*[a-z0-9A-Z])?/)?[a-zA-Z0-9]([-a-zA-Z0-9_.]*[a-zA-Z0-9])?$"
)
_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_SET = re.compile(r"^(\S+)\s+(in|notin)\s*\((.*)\)$")


@dataclass(frozen=True, slots=True)
class Requirement:
    key: str
    op: str  # "=", "!=", "in", "notin", "exists", "!exists"
    values: frozenset[str] = frozenset()

    def matches(self, labels: Mapping[str, str]) -> bool:
        present = self.key in labels
        if self.op == "exists":
            return present
        if self.op == "!exists":
            return not present
        if self.op in ("=", "in"):
            return present and labels[self.key] in self.values
        return not present or labels[self.key] not in self.values


LabelSelector = tuple[Requirement, ...]


def _split_top(text: str) -> list[str]:
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p.strip() for p in parts]


def _checked(key: str, values: Collection[str], text: str) -> tuple[str, frozenset[str]]:
    if not _KEY.match(key) or any(not _VALUE.match(v) for v in values):
        raise bad_request(f"unable to parse requirement: invalid label selector {text!r}")
    return key, frozenset(values)


def parse_label_selector(text: str | None) -> LabelSelector:
    if not text or not text.strip():
        return ()
    reqs: list[Requirement] = []
    for part in _split_top(text):
        if not part:
            raise bad_request(f"unable to parse requirement: empty requirement in {text!r}")
        if match := _SET.match(part):
            key, op, inner = match.groups()
            key, valueset = _checked(key, [v.strip() for v in inner.split(",")], text)
            reqs.append(Requirement(key, op, valueset))
            continue
        for op in ("!=", "==", "="):
            if op in part:
                key, value = (s.strip() for s in part.split(op, 1))
                key, values = _checked(key, [value], text)
                reqs.append(Requirement(key, "!=" if op == "!=" else "=", values))
                break
        else:
            if part.startswith("!"):
                reqs.append(Requirement(_checked(part[1:].strip(), (), text)[0], "!exists"))
            else:
                reqs.append(Requirement(_checked(part, (), text)[0], "exists"))
    return tuple(reqs)


def labels_match(selector: LabelSelector, obj: Mapping[str, Any]) -> bool:
    labels = (obj.get("metadata") or {}).get("labels") or {}
    return all(req.matches(labels) for req in selector)


FieldGetter = Callable[[Mapping[str, Any]], Any]
FieldSelector = tuple[tuple[str, bool, str], ...]  # (field, equal?, value)


def path_getter(path: str) -> FieldGetter:
    keys = path.split(".")

    def get(obj: Mapping[str, Any]) -> Any:
        cur: Any = obj
        for key in keys:
            if not isinstance(cur, Mapping):
                return None
            cur = cur.get(key)
        return cur

    return get


def parse_field_selector(text: str | None, allowed: Collection[str]) -> FieldSelector:
    if not text or not text.strip():
        return ()
    out: list[tuple[str, bool, str]] = []
    for part in _split_top(text):
        for op in ("!=", "==", "="):
            if op in part:
                field, value = (s.strip() for s in part.split(op, 1))
                break
        else:
            raise bad_request(f"invalid selector: '{text}'; can't understand '{part}'")
        if field not in allowed:
            raise bad_request(f"field label not supported: {field}")
        out.append((field, op != "!=", value))
    return tuple(out)


def _as_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def fields_match(
    selector: FieldSelector, obj: Mapping[str, Any], getters: Mapping[str, FieldGetter]
) -> bool:
    return all(
        (_as_text(getters[field](obj)) == value) == equal for field, equal, value in selector
    )
