"""HTTP routing of the stand-in: Kubernetes REST paths onto the store.

Paths: ``/api/v1/...`` (core group) and ``/apis/<group>/<version>/...``; a namespaced
collection is ``.../namespaces/<ns>/<plural>``, a cluster-scoped one ``.../<plural>``, an object
``.../<plural>/<name>``, its status ``.../<plural>/<name>/status``. Verbs: GET (get, list,
``watch=true``), POST (create), PUT (update), PATCH (merge/JSON/strategic-merge by
Content-Type), DELETE (delete, and deletecollection on a collection). Discovery (``/api``,
``/apis``, ``/version``) answers what ``kubectl`` asks first. ``POST`` of a
SelfSubjectAccessReview answers ``allowed`` unless the test denied that verb
(``standin.denied``).

Invariants: every failure answers with a ``Status`` body and its code; HTTP/1.1 keep-alive
(the official client pools connections); a watch is a chunked stream of JSON lines that ends
at ``timeoutSeconds``, when the client goes away, when the server stops, or after a 410
``ERROR`` event.
"""

from __future__ import annotations

import contextlib
import json
import select
import socket
import time
import traceback
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlsplit

from tests.kubeapi import patch, resources
from tests.kubeapi.paging import Page
from tests.kubeapi.resources import ResourceType
from tests.kubeapi.selectors import parse_field_selector, parse_label_selector
from tests.kubeapi.status import ApiError, bad_request, success
from tests.kubeapi.watch import Watcher

if TYPE_CHECKING:
    from tests.kubeapi.server import KubeApiServer

_ACCESS_REVIEWS = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"
_NOT_FOUND = ApiError(404, "NotFound", "the server could not find the requested resource")
_PATCHES = {
    "application/merge-patch+json": patch.merge_patch,
    "application/json-patch+json": patch.json_patch,
    "application/strategic-merge-patch+json": patch.strategic_merge_patch,
}


@dataclass(frozen=True, slots=True)
class Route:
    """A request's target: a collection (``name`` None), an object, or its ``status`` (or a
    pod's ``log``)."""

    rt: ResourceType
    ns: str | None
    name: str | None
    sub: str | None


def route(path: str) -> Route | dict[str, Any]:
    parts = [p for p in path.split("/") if p]
    if parts[:1] == ["api"]:
        group, version, rest = "", (parts[1] if len(parts) > 1 else None), parts[2:]
    elif parts[:1] == ["apis"] and len(parts) >= 3:
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        return _discovery(parts)
    if version is None or not rest:
        return _discovery(parts)
    ns = None
    if len(rest) >= 3 and rest[0] == "namespaces" and rest[2] not in ("status", "finalize"):
        ns, rest = rest[1], rest[2:]
    rt = resources.find(group, version, rest[0])
    if rt is None or len(rest) > 3 or (ns is not None and not rt.namespaced):
        raise _NOT_FOUND
    name, sub = (rest[1] if len(rest) > 1 else None), (rest[2] if len(rest) > 2 else None)
    if sub == "log" and rt.plural == "pods":
        if ns is None:
            raise _NOT_FOUND
        return Route(rt, ns, name, sub)
    if sub not in (None, "status") or (sub == "status" and not rt.status_subresource):
        raise _NOT_FOUND
    if rt.namespaced and name is not None and ns is None:
        raise _NOT_FOUND
    return Route(rt, ns, name, sub)


def _discovery(parts: list[str]) -> dict[str, Any]:
    found: dict[str, Any] | None = None
    if parts == ["version"]:
        found = resources.VERSION_INFO
    elif parts == ["api"]:
        found = resources.api_versions("127.0.0.1")
    elif parts == ["apis"]:
        found = resources.api_group_list()
    elif len(parts) == 2 and parts[0] == "api":
        found = resources.resource_list("", parts[1])
    elif len(parts) == 2 and parts[0] == "apis":
        found = resources.api_group(parts[1])
    elif len(parts) == 3 and parts[0] == "apis":
        found = resources.resource_list(parts[1], parts[2])
    if found is None:
        raise _NOT_FOUND
    return found


def audit_entry(
    method: str, r: Route, query: dict[str, str], agent: str
) -> tuple[str, str, str, str, str]:
    """(verb, API group, resource[/subresource], namespace, User-Agent) as RBAC and the audit
    log name a request: GET is get, list or watch; POST create; PUT update; PATCH patch;
    DELETE delete or deletecollection."""
    if method == "GET":
        verb = "get" if r.name else ("watch" if _flag(query.get("watch")) else "list")
    else:
        verb = {"POST": "create", "PUT": "update", "PATCH": "patch"}.get(method, "delete")
        if method == "DELETE" and not r.name:
            verb = "deletecollection"
    resource = f"{r.rt.plural}/{r.sub}" if r.sub else r.rt.plural
    return verb, r.rt.group, resource, r.ns or "", agent


class ApiHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out as two writes: no 40 ms stalls
    standin: KubeApiServer  # set on the subclass the server creates

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def setup(self) -> None:
        super().setup()
        self.standin.connections.add(self.connection)

    def finish(self) -> None:
        self.standin.connections.discard(self.connection)
        with contextlib.suppress(OSError):
            super().finish()

    def do_GET(self) -> None:
        self._serve("GET")

    def do_POST(self) -> None:
        self._serve("POST")

    def do_PUT(self) -> None:
        self._serve("PUT")

    def do_PATCH(self) -> None:
        self._serve("PATCH")

    def do_DELETE(self) -> None:
        self._serve("DELETE")

    # -- plumbing --------------------------------------------------------------------------
    def _serve(self, method: str) -> None:
        with self.standin.store.lock:
            self.standin.requests += 1
        url = urlsplit(self.path)
        query = {k: v[-1] for k, v in parse_qs(url.query).items()}
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            injected = self.standin.faults.take(_flag(query.get("watch")))
            if injected is not None:
                raise injected
            if method == "POST" and url.path == _ACCESS_REVIEWS:
                self._send(201, self._access_review(self._json(raw) if raw else {}))
                return
            target = route(url.path)
            if isinstance(target, dict):
                if method != "GET":
                    raise ApiError(405, "MethodNotAllowed", "method not allowed")
                self._send(200, target)
                return
            if query.get("dryRun"):
                raise bad_request("dryRun is not supported by the stand-in")
            agent = self.headers.get("User-Agent") or ""
            self.standin.audit.append(audit_entry(method, target, query, agent))
            body = self._json(raw) if raw else None
            self._dispatch(method, target, query, body)
        except ApiError as err:
            self._send(err.code, err.status(), err.headers)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
        except Exception as err:  # the stand-in must answer, never hang the client
            traceback.print_exc()
            self._send(500, ApiError(500, "InternalError", repr(err)).status())

    def _access_review(self, review: Any) -> dict[str, Any]:
        """A SelfSubjectAccessReview, answered from ``standin.denied``."""
        attrs = ((review or {}).get("spec") or {}).get("resourceAttributes") or {}
        resource = attrs.get("resource", "")
        if attrs.get("subresource"):
            resource += "/" + attrs["subresource"]
        allowed = (
            attrs.get("group", ""),
            resource,
            attrs.get("verb", ""),
        ) not in self.standin.denied
        return {
            **review,
            "status": {
                "allowed": allowed,
                **({} if allowed else {"reason": "denied by the stand-in's test settings"}),
            },
        }

    @staticmethod
    def _json(raw: bytes) -> Any:
        try:
            return json.loads(raw)
        except ValueError:
            raise bad_request("the body of the request was in an unknown format") from None

    def _send(self, code: int, body: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(body, separators=(",", ":")).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)

    def _send_text(self, text: str) -> None:
        data = text.encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _pod_log(self, r: Route, query: dict[str, str]) -> str:
        """``GET pods/<name>/log``: the container's output; 400 while it has not started."""
        assert r.name is not None and r.ns is not None
        pod = self.standin.store.get(r.rt, r.ns, r.name)  # 404 for an unknown pod
        if (pod.get("status") or {}).get("phase", "Pending") == "Pending":
            container = ((pod.get("spec") or {}).get("containers") or [{}])[0].get("name", "")
            raise bad_request(
                f'container "{container}" in pod "{r.name}" is waiting to start: ContainerCreating'
            )
        text = self.standin.pod_logs.get((r.ns, r.name), "")
        tail = query.get("tailLines")
        if tail is not None:
            if not tail.isdigit():
                raise bad_request(f"tailLines must be a non-negative integer, not {tail!r}")
            lines = text.splitlines(keepends=True)
            text = "".join(lines[-int(tail) :]) if int(tail) else ""
        return text

    def _dispatch(self, method: str, r: Route, query: dict[str, str], body: Any) -> None:
        store, rt = self.standin.store, r.rt
        ns = r.ns or ""
        if r.sub == "log":
            if method != "GET":
                raise ApiError(405, "MethodNotAllowed", f"{method} is not allowed here")
            self._send_text(self._pod_log(r, query))
            return
        if r.name is None:
            if method == "GET" and _flag(query.get("watch")):
                self._watch(r, query)
            elif method == "GET":
                self._send(200, self._list(r, query))
            elif method == "POST" and (r.ns is not None or not rt.namespaced):
                self._check_body(rt, body)
                self._send(201, store.create(rt, ns, body))
            elif method == "DELETE":
                self._delete_collection(r, query, body)
            else:
                raise ApiError(405, "MethodNotAllowed", f"{method} is not allowed here")
            return
        if method == "GET":
            self._send(200, store.get(rt, ns, r.name))
        elif method == "PUT":
            self._check_body(rt, body)
            self._send(200, store.update(rt, ns, r.name, body, r.sub))
        elif method == "PATCH":
            self._send(200, self._patch(r, body))
        elif method == "DELETE":
            options = {**(body or {}), **query}
            obj, gone = store.delete(
                rt, ns, r.name, options.get("propagationPolicy"), (body or {}).get("preconditions")
            )
            if not gone:
                self._send(202, obj)
            elif rt.returns_deleted:
                self._send(200, obj)
            else:
                self._send(200, success(r.name, rt.group, rt.plural, obj["metadata"]["uid"]))
        else:
            raise ApiError(405, "MethodNotAllowed", f"{method} is not allowed here")

    @staticmethod
    def _check_body(rt: ResourceType, body: Any) -> None:
        if not isinstance(body, dict):
            raise bad_request("the body of the request was in an unknown format")
        if body.get("kind") not in (None, rt.kind):
            raise bad_request(
                f"the kind of the object ({body['kind']}) does not match the resource ({rt.kind})"
            )

    def _selectors(self, rt: ResourceType, query: dict[str, str]) -> tuple[Any, Any]:
        return (
            parse_label_selector(query.get("labelSelector")),
            parse_field_selector(query.get("fieldSelector"), rt.fields),
        )

    def _list(self, r: Route, query: dict[str, str]) -> dict[str, Any]:
        labels, fields = self._selectors(r.rt, query)
        limit = int(query.get("limit") or 0)
        selected = bool(labels or fields)
        pager = self.standin.pager
        page: Page
        if query.get("continue"):
            page = pager.next(query["continue"], limit, selected)
        else:
            items, rv = self.standin.store.select(r.rt, r.ns, labels, fields)
            page = pager.first(items, rv, limit, selected)
        meta: dict[str, Any] = {"resourceVersion": str(page.resource_version)}
        if page.continue_token:
            meta["continue"] = page.continue_token
        if page.remaining is not None:
            meta["remainingItemCount"] = page.remaining
        return {
            "kind": f"{r.rt.kind}List",
            "apiVersion": r.rt.api_version,
            "metadata": meta,
            "items": page.items,
        }

    def _patch(self, r: Route, body: Any) -> dict[str, Any]:
        kind = (self.headers.get("Content-Type") or "").split(";")[0].strip()
        apply = _PATCHES.get(kind)
        if apply is None:
            raise ApiError(
                415,
                "UnsupportedMediaType",
                f"the body of the request was in an "
                f"unknown format - accepted media types include: {', '.join(_PATCHES)}",
            )
        if body is None:
            raise bad_request("the patch body is empty")

        def change(obj: dict[str, Any]) -> None:
            patched = apply(obj, body)
            if not isinstance(patched, dict):
                raise bad_request("the patch did not produce an object")
            obj.clear()
            obj.update(patched)

        store = self.standin.store
        return store.mutate(r.rt, r.ns or "", r.name or "", change, r.sub)

    def _delete_collection(self, r: Route, query: dict[str, str], body: Any) -> None:
        labels, fields = self._selectors(r.rt, query)
        store = self.standin.store
        items, rv = store.select(r.rt, r.ns, labels, fields)
        policy = {**(body or {}), **query}.get("propagationPolicy")
        for obj in items:
            meta = obj["metadata"]
            try:
                store.delete(r.rt, meta.get("namespace", ""), meta["name"], policy)
            except ApiError as err:
                if err.code != 404:  # deleted meanwhile (e.g. by a cascade): fine
                    raise
        self._send(
            200,
            {
                "kind": f"{r.rt.kind}List",
                "apiVersion": r.rt.api_version,
                "metadata": {"resourceVersion": str(rv)},
                "items": items,
            },
        )

    # -- watch -----------------------------------------------------------------------------
    def _watch(self, r: Route, query: dict[str, str]) -> None:
        labels, fields = self._selectors(r.rt, query)
        timeout = float(query.get("timeoutSeconds") or self.standin.max_watch_seconds)
        bookmarks = _flag(query.get("allowWatchBookmarks"))
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        watch_id = object()
        self.standin.watches.add(watch_id)
        try:
            try:
                watcher = Watcher(
                    self.standin.store, r.rt, r.ns, labels, fields, query.get("resourceVersion")
                )
            except ApiError as err:
                self._chunk({"type": "ERROR", "object": err.status()})
            else:
                self._stream(watcher, timeout, bookmarks, watch_id)
            self._chunk_end()
        except (BrokenPipeError, ConnectionResetError, OSError):
            self.close_connection = True
        finally:
            self.standin.watches.discard(watch_id)

    def _stream(self, watcher: Watcher, timeout: float, bookmarks: bool, watch_id: object) -> None:
        start = time.monotonic()
        deadline = start + timeout
        interval = self.standin.bookmark_interval
        next_bookmark = start + interval
        while True:
            now = time.monotonic()
            if now >= deadline:
                if bookmarks:
                    self._chunk(_event(watcher.bookmark()))
                return
            if bookmarks and now >= next_bookmark:
                self._chunk(_event(watcher.bookmark()))
                next_bookmark = now + interval
            try:
                events = watcher.next(min(deadline - now, 0.2, max(next_bookmark - now, 0.01)))
            except ApiError as err:
                self._chunk({"type": "ERROR", "object": err.status()})
                return
            for event in events:
                self._chunk(_event(event))
            if self.standin.store.closed or watch_id in self.standin.cut or self._client_gone():
                self.standin.cut.discard(watch_id)
                self.close_connection = True
                return

    def _client_gone(self) -> bool:
        try:
            readable, _, _ = select.select([self.connection], [], [], 0)
            return bool(readable) and self.connection.recv(1, socket.MSG_PEEK) == b""
        except OSError:
            return True

    def _chunk(self, payload: Any) -> None:
        data = json.dumps(payload, separators=(",", ":")).encode() + b"\n"
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _chunk_end(self) -> None:
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


def _flag(value: str | None) -> bool:
    """A boolean query parameter as Go's ``strconv.ParseBool`` reads it ("True" included)."""
    return value in ("1", "t", "T", "true", "TRUE", "True")


def _event(event: tuple[str, dict[str, Any]]) -> dict[str, Any]:
    return {"type": event[0], "object": event[1]}
