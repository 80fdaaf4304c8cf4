"""Rules for object metadata: names, labels, server-owned fields, finalizers, timestamps.

- Names are lowercase RFC 1123 subdomains (≤ 253 characters); Namespaces are RFC 1123 labels
  (≤ 63, no dots); Job names are at most 63 characters (they become the ``job-name`` label).
- Label keys are an optional DNS-subdomain prefix and ``/`` plus a name of ≤ 63 characters
  (alphanumerics, ``-``, ``_``, ``.``; alphanumeric at both ends); values are empty or such a
  name. Violations are 422 Invalid, as on a real server.
- *Server-owned* metadata (uid, creationTimestamp, deletionTimestamp, generation, namespace,
  resourceVersion) always comes from the stored object, whatever a client sends.
- No finalizer may be added to an object that is being deleted.
- A ``generateName`` gets five random characters of the real server's alphabet (no vowels,
  no look-alike digits), e.g. ``train-x7kqp``.
"""

from __future__ import annotations

import random
import re
from datetime import UTC, datetime
from typing import Any

from tests.kubeapi.resources import ResourceType
from tests.kubeapi.status import invalid

Obj = dict[str, Any]
_SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # apimachinery's utilrand alphabet


def generated_suffix() -> str:
    """What a real server appends to a ``generateName``."""
    return "".join(random.choice(_SUFFIX_ALPHABET) for _ in range(5))


_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_SUBDOMAIN = re.compile(rf"^{_LABEL}(\.{_LABEL})*$")
_DNS_LABEL = re.compile(rf"^{_LABEL}$")
_QUALIFIED = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
SERVER_OWNED = (
    "uid",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "generation",
    "namespace",
    "resourceVersion",
)


def timestamp(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def check_name(rt: ResourceType, name: str) -> None:
    if rt.key == "namespaces":
        ok = len(name) <= 63 and bool(_DNS_LABEL.match(name))
    else:
        ok = len(name) <= (63 if rt.key == "jobs.batch" else 253) and bool(_SUBDOMAIN.match(name))
    if not ok:
        raise invalid(
            rt.kind,
            name,
            f'metadata.name: Invalid value: "{name}": a lowercase '
            "RFC 1123 name must consist of lower case alphanumeric characters, '-' "
            "or '.', and must start and end with an alphanumeric character",
        )


def check_labels(rt: ResourceType, meta: Obj) -> None:
    for key, value in (meta.get("labels") or {}).items():
        prefix, _, name = str(key).rpartition("/")
        bad_key = (
            not name
            or len(name) > 63
            or not _QUALIFIED.match(name)
            or (prefix and (len(prefix) > 253 or not _SUBDOMAIN.match(prefix)))
        )
        bad_value = (
            not isinstance(value, str) or len(value) > 63 or (value and not _QUALIFIED.match(value))
        )
        if bad_key or bad_value:
            raise invalid(
                rt.kind, meta.get("name", ""), f'metadata.labels: Invalid value: "{key}={value}"'
            )


def server_owned(old: Obj, new: Obj) -> Obj:
    """Metadata the server owns comes from the stored object, whatever the client sent."""
    return {
        **{k: v for k, v in new.items() if k not in SERVER_OWNED},
        **{k: v for k, v in old.items() if k in SERVER_OWNED},
    }


def check_finalizers(rt: ResourceType, old: Obj, new_meta: Obj) -> None:
    if not old["metadata"].get("deletionTimestamp"):
        return
    added = set(new_meta.get("finalizers") or ()) - set(old["metadata"].get("finalizers") or ())
    if added:
        raise invalid(
            rt.kind,
            old["metadata"]["name"],
            "metadata.finalizers: Forbidden: no new "
            "finalizers can be added if the object is being deleted",
        )
