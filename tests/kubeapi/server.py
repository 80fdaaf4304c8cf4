"""The stand-in server object: an HTTP API server on 127.0.0.1 with a small cluster inside.

``KubeApiServer`` owns the store, the HTTP server (a ``ThreadingHTTPServer`` in a background
thread) and the in-cluster controllers (``jobs.JobController``: Jobs → Pods and Job status;
``scheduling.Scheduler``: binds pending Pods to Nodes with room). Tests drive the cluster's
"physical" side through helper methods: ``add_node``, ``set_pod_phase``, ``write_pod_log``
(what a container printed, served by the ``pods/log`` subresource); and its failure
modes: ``compact`` (expire every resourceVersion), ``cut_watches`` (drop every open watch
stream), ``inject_errors`` (the next requests answer 429 or 5xx).

Invariants: it listens on 127.0.0.1 only; ``stop()`` ends every watch, closes every
connection and joins every thread it started, so tests stay free of ResourceWarnings.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any

import yaml

from tests.kubeapi.handler import ApiHandler
from tests.kubeapi.jobs import JobController
from tests.kubeapi.paging import Pager
from tests.kubeapi.resources import BY_PATH
from tests.kubeapi.scheduling import Scheduler
from tests.kubeapi.status import ApiError
from tests.kubeapi.store import Obj, Store

NAMESPACE = BY_PATH[("", "v1", "namespaces")]
NODES = BY_PATH[("", "v1", "nodes")]
PODS = BY_PATH[("", "v1", "pods")]
JOBS = BY_PATH[("batch", "v1", "jobs")]
_SYSTEM_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")


class Faults:
    """Errors to answer instead of serving the next requests (for backoff tests).

    A fault marked ``only_watches`` is taken only by a watch request, so a test can keep the
    watches failing (an unreachable apiserver, as a watcher sees it) while it changes objects.
    """

    def __init__(self) -> None:
        self._queue: list[tuple[ApiError, bool]] = []
        self._lock = threading.Lock()

    def add(self, error: ApiError, count: int, only_watches: bool = False) -> None:
        with self._lock:
            self._queue.extend([(error, only_watches)] * count)

    def take(self, is_watch: bool = False) -> ApiError | None:
        with self._lock:
            for i, (error, only_watches) in enumerate(self._queue):
                if is_watch or not only_watches:
                    del self._queue[i]
                    return error
            return None

    def clear(self) -> None:
        with self._lock:
            self._queue.clear()


class _HttpServer(ThreadingHTTPServer):
    daemon_threads = False
    block_on_close = True
    allow_reuse_address = True


@dataclass(frozen=True, slots=True)
class Taint:
    key: str
    effect: str = "NoSchedule"
    value: str = ""


class KubeApiServer:
    def __init__(
        self,
        port: int = 0,
        history: int = 10_000,
        bookmark_interval: float = 60.0,
        max_watch_seconds: float = 1800.0,
        controllers: bool = True,
    ) -> None:
        self.store = Store(history)
        self.pager = Pager()
        self.faults = Faults()
        self.bookmark_interval = bookmark_interval
        self.max_watch_seconds = max_watch_seconds
        self.requests = 0  # served so far (benchmarks check that a pass does not hit the API)
        #: every API request as (verb, group, resource[/sub], namespace, User-Agent): what
        #: RBAC must grant to whoever sent it
        self.audit: list[tuple[str, str, str, str, str]] = []
        self.pod_logs: dict[tuple[str, str], str] = {}  # (namespace, pod) -> its output
        #: (group, resource[/subresource], verb) a SelfSubjectAccessReview answers "not
        #: allowed" for (no RBAC is enforced: every request is served; tests deny verbs here)
        self.denied: set[tuple[str, str, str]] = set()
        self.connections: set[socket.socket] = set()
        self.watches: set[object] = set()
        self.cut: set[object] = set()
        self._port = port
        self._httpd: _HttpServer | None = None
        self._thread: threading.Thread | None = None
        for name in _SYSTEM_NAMESPACES:
            self.store.create(NAMESPACE, "", {"metadata": {"name": name}})
        if controllers:
            self.scheduler = Scheduler(self.store)
            self.jobs = JobController(self.store)
            self.store.controllers.extend([self.jobs.observe, self.scheduler.observe])

    # -- lifecycle -------------------------------------------------------------------------
    def start(self) -> KubeApiServer:
        handler = type("BoundApiHandler", (ApiHandler,), {"standin": self})
        self._httpd = _HttpServer(("127.0.0.1", self._port), handler)
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="kubeapi-standin",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is None:
            return
        self.store.close()
        self._httpd.shutdown()
        for conn in list(self.connections):
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join()
        self._httpd = None

    def __enter__(self) -> KubeApiServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        assert self._httpd is not None, "start() the server first"
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def kubeconfig(self) -> dict[str, Any]:
        name = "starburst-standin"
        return {
            "apiVersion": "v1",
            "kind": "Config",
            "current-context": name,
            "clusters": [{"name": name, "cluster": {"server": self.url}}],
            "users": [{"name": name, "user": {"token": "standin"}}],
            "contexts": [
                {"name": name, "context": {"cluster": name, "user": name, "namespace": "default"}}
            ],
        }

    def write_kubeconfig(self, path: Path) -> Path:
        path.write_text(yaml.safe_dump(self.kubeconfig(), sort_keys=False))
        return path

    def api_client(self) -> Any:
        """An official ``kubernetes.client.ApiClient`` for this server (close it when done)."""
        from kubernetes import client

        config = client.Configuration()
        config.host = self.url
        return client.ApiClient(config)

    # -- the cluster's physical side -------------------------------------------------------
    def add_node(
        self,
        name: str,
        gpus: int = 8,
        cpu: str = "64",
        memory: str = "512Gi",
        labels: dict[str, str] | None = None,
        taints: Iterable[Taint] = (),
        unschedulable: bool = False,
        ready: bool = True,
    ) -> Obj:
        resources = {"cpu": cpu, "memory": memory, "pods": "110", "nvidia.com/gpu": str(gpus)}
        node: Obj = {
            "metadata": {
                "name": name,
                "labels": {"kubernetes.io/hostname": name, **(labels or {})},
            },
            "spec": {
                "taints": [{"key": t.key, "value": t.value, "effect": t.effect} for t in taints]
            },
            "status": {
                "capacity": resources,
                "allocatable": dict(resources),
                "conditions": [
                    {
                        "type": "Ready",
                        "status": "True" if ready else "False",
                        "reason": "KubeletReady" if ready else "KubeletNotReady",
                    }
                ],
            },
        }
        if unschedulable:
            node["spec"]["unschedulable"] = True
        if not node["spec"]["taints"]:
            del node["spec"]["taints"]
        return self.store.create(NODES, "", node)

    def set_pod_phase(self, namespace: str, name: str, phase: str, exit_code: int = 0) -> Obj:
        """What a kubelet reports: the pod is Running, Succeeded or Failed."""
        return self.jobs.kubelet_report(namespace, name, phase, exit_code)

    def write_pod_log(self, namespace: str, name: str, text: str) -> None:
        """What the pod's container printed so far (a kubelet's log file), appended."""
        key = (namespace, name)
        self.pod_logs[key] = self.pod_logs.get(key, "") + text

    def pods_of(self, namespace: str, job: str) -> list[Obj]:
        from tests.kubeapi.selectors import parse_label_selector

        items, _ = self.store.select(PODS, namespace, parse_label_selector(f"job-name={job}"))
        return items

    # -- failure modes ---------------------------------------------------------------------
    def compact(self) -> None:
        """Expire every resourceVersion seen so far (watches from them get 410 Gone)."""
        self.store.compact()
        self.pager.forget_all()

    def cut_watches(self) -> int:
        """End every open watch stream now, as a dropped connection or apiserver restart does."""
        open_watches = set(self.watches)
        self.cut.update(open_watches)
        with self.store.lock:
            self.store.changed.notify_all()
        return len(open_watches)

    def inject_errors(
        self, count: int, code: int = 429, retry_after: int = 1, only_watches: bool = False
    ) -> None:
        reason = {
            429: "TooManyRequests",
            500: "InternalError",
            503: "ServiceUnavailable",
            504: "Timeout",
        }.get(code, "InternalError")
        headers = {"Retry-After": str(retry_after)} if code == 429 else {}
        error = ApiError(code, reason, f"injected {reason}", headers=headers)
        self.faults.add(error, count, only_watches)
