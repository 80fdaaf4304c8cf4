"""Sending the same HTTP request to the stand-in and to the real API server, and comparing.

``Endpoint`` is one server reached over raw HTTP (no client library in between, so both see
byte-for-byte the same request). ``Pair.same(...)`` sends a request to both and returns the
two answers *normalised*: what legitimately differs between two servers is removed or
replaced by a placeholder before comparing:
- server-generated identity and time: ``uid`` (also where it is copied into labels and
  selectors), ``resourceVersion``, ``creationTimestamp`` and every other timestamp,
  ``managedFields``, ``continue`` tokens, ``generateName`` suffixes (a generated name reads
  ``<generateName><random>``; ``GENERATED`` does the same inside messages);
- the warnings header is not compared; response bodies are.

Anything else that differs is a difference of the stand-in: it is fixed there, or listed as
known in ``tests.kubeapi``'s docstring and normalised here by name.
"""

from __future__ import annotations

import json
import re
import ssl
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from typing import Any

GENERATED = re.compile(r'(pods "[a-z0-9-]+-)[bcdfghjklmnpqrstvwxz2456789]{5}"')
TIME_KEYS = re.compile(r".*(Timestamp|Time|At)$")
DROPPED = {"uid", "resourceVersion", "managedFields", "selfLink", "continue"}


@dataclass
class Endpoint:
    url: str
    token: str | None = None
    ca_file: str | None = None

    def call(
        self, method: str, path: str, body: Any = None, content_type: str = "application/json"
    ) -> tuple[int, Any]:
        data = None if body is None else json.dumps(body).encode()
        headers = {"Content-Type": content_type, "Accept": "application/json"}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        req = urllib.request.Request(self.url + path, data=data, method=method, headers=headers)
        context = ssl.create_default_context(cafile=self.ca_file) if self.ca_file else None
        try:
            with urllib.request.urlopen(req, context=context, timeout=30) as reply:
                return reply.status, _decode(reply.read())
        except urllib.error.HTTPError as err:
            return err.code, _decode(err.read())

    def watch(self, path: str) -> list[Any]:
        """The events of a watch that the server ends (``timeoutSeconds`` in ``path``)."""
        status, body = self.call("GET", path)
        if status != 200:
            return [{"status": status, "body": body}]
        return body if isinstance(body, list) else [body]


def _decode(raw: bytes) -> Any:
    text = raw.decode(errors="replace").strip()
    if not text:
        return None
    try:
        return json.loads(text)
    except json.JSONDecodeError:  # a watch: one JSON document per line
        return [json.loads(line) for line in text.splitlines() if line.strip()]


def normalise(value: Any, uids: set[str] | None = None) -> Any:
    """``value`` without what two servers legitimately disagree on (see the module)."""
    uids = uids if uids is not None else _uids(value, set())
    if isinstance(value, dict):
        out = {}
        prefix = value.get("generateName")
        if isinstance(prefix, str) and str(value.get("name", "")).startswith(prefix):
            value = {**value, "name": prefix + "<random>"}  # (a generated name)
        for key, item in value.items():
            if key in DROPPED or (TIME_KEYS.match(key) and isinstance(item, str)):
                continue
            out[key] = normalise(item, uids)
        return out
    if isinstance(value, list):
        return [normalise(item, uids) for item in value]
    if isinstance(value, str):
        value = GENERATED.sub(r'\1<random>"', value)
        for uid in uids:
            value = value.replace(uid, "<uid>")
    return value


def _uids(value: Any, found: set[str]) -> set[str]:
    if isinstance(value, dict):
        uid = value.get("uid")
        if isinstance(uid, str) and uid:
            found.add(uid)
        for item in value.values():
            _uids(item, found)
    elif isinstance(value, list):
        for item in value:
            _uids(item, found)
    return found


def differences(a: Any, b: Any, path: str = "") -> list[str]:
    """Where two normalised answers differ, as stable strings (list indices shown as ``[]``):
    ``only real: <path>``, ``only stand-in: <path>`` or ``differs: <path>``."""
    if isinstance(a, dict) and isinstance(b, dict):
        found = []
        for key in sorted(a.keys() | b.keys()):
            where = f"{path}.{key}" if path else key
            if key not in a:
                found.append(f"only real: {where}")
            elif key not in b:
                found.append(f"only stand-in: {where}")
            else:
                found += differences(a[key], b[key], where)
        return found
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [d for x, y in zip(a, b, strict=True) for d in differences(x, y, f"{path}[]")]
    return [] if a == b else [f"differs: {path}"]


@dataclass
class Pair:
    standin: Endpoint
    real: Endpoint
    namespace: str = ""
    #: the stand-in itself (a ``KubeApiServer``), for what only a test can do to it (compact)
    server: Any = None
    #: what differed, per request: (request, difference) pairs
    found: list[tuple[str, str]] = field(default_factory=list)

    def compare(self, request: str, a: Any, b: Any) -> None:
        if isinstance(a, tuple) and isinstance(b, tuple):  # (status, body) answers
            a, b = {"status": a[0], "body": a[1]}, {"status": b[0], "body": b[1]}
        self.found += [(request, d) for d in differences(normalise(a), normalise(b))]

    def same(
        self, method: str, path: str, body: Any = None, content_type: str = "application/json"
    ) -> Any:
        """Send to both; record every difference; the real answer's body."""
        a = self.standin.call(method, path, body, content_type)
        b = self.real.call(method, path, body, content_type)
        label = f"{method} {path.replace(self.namespace, '<ns>')}"
        self.compare(label, {"status": a[0], "body": a[1]}, {"status": b[0], "body": b[1]})
        return b[1]

    def unknown(self, known: frozenset[str]) -> list[str]:
        """The differences not in ``known`` (each with the request that showed it)."""
        return [f"{request}: {d}" for request, d in self.found if d not in known]
