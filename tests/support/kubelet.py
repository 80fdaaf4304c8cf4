"""A fake kubelet for the real control plane: GPU nodes that exist only as API objects.

No kubelet can run here, so this plays its part through the real API, as a kubelet would:
- ``add_node`` registers a Node (labels incl. ``kubernetes.io/hostname``; capacity and
  allocatable ``nvidia.com/gpu``, cpu, memory, ``ephemeral-storage`` (a real kubelet reports
  its disk; SkyPilot's jobs controller asks for 50 GB of it), pods), reports it Ready through the
  ``nodes/status`` subresource, removes the ``node.kubernetes.io/not-ready`` taint the
  admission chain put on it (the node lifecycle controller's job, which does not run here), and
  keeps a node Lease renewed;
- pods bound to its nodes go ``Running`` at once (``auto_run``) and ``Succeeded``/``Failed`` on
  command (``set_pod_phase``, ``finish_job``), through ``pods/status``; so the real Job
  controller counts completions and failures;
- a pod being deleted (``deletionTimestamp``) on one of its nodes is reported ``Failed`` (exit
  137, killed) unless it had ended, then removed for good (grace 0), as a kubelet does;
- with ``binds=True`` (no kube-scheduler running) it binds pending, ungated pods: the first
  node, in the order added, that matches the pod's node selector and required node affinity, is
  schedulable and has the GPUs free (``pods/binding``, as a scheduler would).

- with ``serving`` (a certificate for 127.0.0.1 from the cluster's CA, its key, and the CA),
  it serves what its pods printed as a kubelet does (``/containerLogs/...``, HTTPS, the API
  server's client certificate verified against the CA; the port in the node's
  ``daemonEndpoints``), so ``kubectl logs`` and ``pods/log`` readers see it: the output is
  what the test says a pod printed (``set_pod_phase(..., output=...)``), "" when it said
  nothing, as for a container that printed nothing. Without it, a request for a kubelet goes
  to 127.0.0.1:10250, where nothing listens (refused at once).

Pods on other nodes are left alone. It watches pods of every namespace with the project's
informer. ``close()`` stops it and deletes its nodes (so the next test sees none of them).
"""

from __future__ import annotations

import datetime
import http.server
import json
import logging
import ssl
import threading
import urllib.parse
from pathlib import Path
from typing import Any

from kubernetes import client

from starburst.adapters.kubernetes.informer import Informer
from starburst.adapters.kubernetes.quantity import quantity
from tests.support.podfit import gpus_of, node_matches

log = logging.getLogger(__name__)
Obj = dict[str, Any]
TERMINAL = ("Succeeded", "Failed")


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _data(response: Any) -> Obj:
    """The decoded answer; its connection goes back to the pool only once read (one handed
    back unread breaks the next request on it)."""
    try:
        return json.loads(response.data) if response.data else {}
    finally:
        response.release_conn()


class FakeKubelet:
    def __init__(
        self,
        api_client: Any,
        binds: bool = False,
        auto_run: bool = True,
        lease_period: float = 10.0,
        serving: tuple[Path, Path, Path] | None = None,
    ) -> None:
        self.api_client = api_client
        self.outputs: dict[tuple[str, str], str] = {}  # (namespace, pod) -> what it printed
        self._logs = _LogServer(serving, self.outputs) if serving else None
        self.core = client.CoreV1Api(api_client)
        self.coordination = client.CoordinationV1Api(api_client)
        self.binds, self.auto_run, self.lease_period = binds, auto_run, lease_period
        self.nodes: dict[str, Obj] = {}  # name -> the node as registered (in order added)
        self._lock = threading.RLock()
        self._stopping = threading.Event()
        # the watch has a connection pool of its own: stopping it shuts its socket down
        self._watch_client = client.ApiClient(api_client.configuration)
        self._pods = Informer(
            "fake-kubelet-pods",
            client.CoreV1Api(self._watch_client).list_pod_for_all_namespaces,
            self._on_pod,
        )
        self._leases = threading.Thread(
            target=self._renew_leases, name="fake-kubelet-leases", daemon=True
        )

    # -- lifecycle -------------------------------------------------------------------------
    def start(self) -> FakeKubelet:
        if self._logs is not None:
            threading.Thread(
                target=self._logs.serve_forever, name="fake-kubelet-logs", daemon=True
            ).start()
        self._pods.start()
        self._leases.start()
        if not self._pods.synced.wait(30):
            raise RuntimeError("the fake kubelet's pod watch did not sync in 30s")
        return self

    def close(self) -> None:
        self._stopping.set()
        self._pods.stop()
        if self._logs is not None:
            self._logs.shutdown()
            self._logs.server_close()
        if self._leases.is_alive():
            self._leases.join()
        for name in list(self.nodes):
            self.remove_node(name)
        self._watch_client.close()
        self.api_client.close()

    def __enter__(self) -> FakeKubelet:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- nodes -----------------------------------------------------------------------------
    def add_node(
        self,
        name: str,
        gpus: int = 8,
        cpu: str = "64",
        memory: str = "512Gi",
        ephemeral_storage: str = "500Gi",
        labels: dict[str, str] | None = None,
        taints: list[Obj] | None = None,
        unschedulable: bool = False,
    ) -> Obj:
        resources = {
            "cpu": cpu,
            "memory": memory,
            "ephemeral-storage": ephemeral_storage,
            "pods": "110",
            "nvidia.com/gpu": str(gpus),
        }
        _data(
            self.core.create_node(
                {
                    "metadata": {
                        "name": name,
                        "labels": {
                            "kubernetes.io/hostname": name,
                            "kubernetes.io/os": "linux",
                            "kubernetes.io/arch": "amd64",
                            **(labels or {}),
                        },
                    },
                    "spec": {"unschedulable": unschedulable},
                },
                _preload_content=False,
            )
        )
        with self._lock:
            self.nodes[name] = {}
        now = _now()
        _data(
            self.core.patch_node_status(
                name,
                {
                    "status": {
                        "capacity": resources,
                        "allocatable": dict(resources),
                        "conditions": [
                            {
                                "type": "Ready",
                                "status": "True",
                                "reason": "KubeletReady",
                                "message": "fake kubelet is posting ready status",
                                "lastHeartbeatTime": now,
                                "lastTransitionTime": now,
                            }
                        ],
                        "addresses": [
                            {"type": "InternalIP", "address": "127.0.0.1"},
                            {"type": "Hostname", "address": name},
                        ],
                        **(
                            {"daemonEndpoints": {"kubeletEndpoint": {"Port": self._logs.port}}}
                            if self._logs is not None
                            else {}
                        ),
                        "nodeInfo": {
                            "kubeletVersion": "v1.34.4-fake",
                            "operatingSystem": "linux",
                            "architecture": "amd64",
                            "containerRuntimeVersion": "fake://1",
                            "kernelVersion": "",
                            "osImage": "",
                            "kubeProxyVersion": "",
                            "machineID": "",
                            "systemUUID": "",
                            "bootID": "",
                        },
                    }
                },
                _preload_content=False,
            )
        )
        node = _data(
            self.core.patch_node(
                name,
                {"spec": {"taints": taints or None}},
                _preload_content=False,
            )
        )
        with self._lock:
            self.nodes[name] = node
        self._renew_lease(name)
        return node

    def remove_node(self, name: str) -> None:
        with self._lock:
            self.nodes.pop(name, None)
        for delete in (
            lambda: self.core.delete_node(name, _preload_content=False),
            lambda: self.coordination.delete_namespaced_lease(
                name, "kube-node-lease", _preload_content=False
            ),
        ):
            try:
                _data(delete())
            except client.ApiException as err:
                if err.status != 404:
                    raise

    def _renew_lease(self, name: str) -> None:
        now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        body = {
            "metadata": {"name": name},
            "spec": {"holderIdentity": name, "leaseDurationSeconds": 40, "renewTime": now},
        }
        try:
            _data(
                self.coordination.patch_namespaced_lease(
                    name, "kube-node-lease", body, _preload_content=False
                )
            )
        except client.ApiException as err:
            if err.status != 404:
                raise
            _data(
                self.coordination.create_namespaced_lease(
                    "kube-node-lease", body, _preload_content=False
                )
            )

    def _renew_leases(self) -> None:
        while not self._stopping.wait(self.lease_period):
            for name in list(self.nodes):
                try:
                    self._renew_lease(name)
                except Exception:  # a missed heartbeat is retried on the next period
                    log.warning("renewing the lease of node %s", name, exc_info=True)

    # -- pods ------------------------------------------------------------------------------
    def pods_of(self, namespace: str, job: str) -> list[Obj]:
        """The pods of Job ``job`` in ``namespace`` (as the API has them now)."""
        reply = _data(
            self.core.list_namespaced_pod(
                namespace,
                label_selector=f"batch.kubernetes.io/job-name={job}",
                _preload_content=False,
            )
        )
        return sorted(reply.get("items") or (), key=lambda p: p["metadata"]["name"])

    def set_pod_phase(
        self, namespace: str, name: str, phase: str, exit_code: int = 0, output: str | None = None
    ) -> Obj:
        """What a kubelet reports: the pod is Running, Succeeded or Failed (``output``: what
        its container printed, served as its log)."""
        if output is not None:
            self.outputs[(namespace, name)] = output
        pod = _data(self.core.read_namespaced_pod(name, namespace, _preload_content=False))
        return self._report(pod, phase, exit_code)

    def finish_job(self, namespace: str, job: str, succeeded: bool = True) -> int:
        """Every pod of the Job ends (exit 0, or 1); returns how many pods were ended."""
        pods = [p for p in self.pods_of(namespace, job) if p["status"].get("phase") not in TERMINAL]
        for pod in pods:
            self._report(pod, "Succeeded" if succeeded else "Failed", 0 if succeeded else 1)
        return len(pods)

    def _report(self, pod: Obj, phase: str, exit_code: int = 0) -> Obj:
        now, meta = _now(), pod["metadata"]
        running = phase == "Running"
        if running:
            state: Obj = {"running": {"startedAt": now}}
        else:
            state = {
                "terminated": {
                    "exitCode": exit_code,
                    "startedAt": now,
                    "finishedAt": now,
                    "reason": "Completed" if exit_code == 0 else "Error",
                }
            }
        containers = [
            {
                "name": c["name"],
                "image": c["image"],
                "imageID": "",
                "ready": running,
                "restartCount": 0,
                "started": running,
                "state": state,
            }
            for c in pod["spec"]["containers"]
        ]
        ready = "True" if running else "False"
        status = {
            "status": {
                "phase": phase,
                "startTime": pod["status"].get("startTime") or now,
                "hostIP": "127.0.0.1",
                "hostIPs": [{"ip": "127.0.0.1"}],
                "conditions": [
                    {"type": t, "status": s, "lastTransitionTime": now}
                    for t, s in (
                        ("PodScheduled", "True"),
                        ("Initialized", "True"),
                        ("ContainersReady", ready),
                        ("Ready", ready),
                    )
                ],
                "containerStatuses": containers,
            }
        }
        return _data(
            self.core.patch_namespaced_pod_status(
                meta["name"], meta["namespace"], status, _preload_content=False
            )
        )

    def _on_pod(self, kind: str, pod: Obj, old: Obj | None) -> None:
        if kind == "DELETED":
            return
        meta, spec = pod["metadata"], pod["spec"]
        node = spec.get("nodeName")
        with self._lock:
            mine = node in self.nodes
        if not node:
            if self.binds and not spec.get("schedulingGates"):
                self._bind(pod)
        elif not mine:
            return
        elif meta.get("deletionTimestamp"):
            self._remove(pod)
        elif self.auto_run and pod["status"].get("phase", "Pending") == "Pending":
            self._report(pod, "Running")

    def _remove(self, pod: Obj) -> None:
        """What a kubelet does with a pod being deleted: stop its containers, report it
        terminal (so the Job controller can let go of it), then delete it for good."""
        meta = pod["metadata"]
        try:
            if pod["status"].get("phase") not in TERMINAL:
                self._report(pod, "Failed", exit_code=137)
            _data(
                self.core.delete_namespaced_pod(
                    meta["name"],
                    meta["namespace"],
                    # with a body, the server reads the options from it, not from the query
                    body={"gracePeriodSeconds": 0, "preconditions": {"uid": meta["uid"]}},
                    _preload_content=False,
                )
            )
        except client.ApiException as err:
            if err.status not in (404, 409):
                raise

    def _free_gpus(self) -> dict[str, int]:
        with self._lock:
            free = {
                name: int(
                    quantity(
                        str(
                            ((node.get("status") or {}).get("allocatable") or {}).get(
                                "nvidia.com/gpu", "0"
                            )
                        )
                    )
                )
                for name, node in self.nodes.items()
            }
        for pod in list(self._pods.cache.values()):
            node = pod["spec"].get("nodeName")
            if node in free and pod["status"].get("phase") not in TERMINAL:
                free[node] -= gpus_of(pod)
        return free

    def _bind(self, pod: Obj) -> None:
        meta, wanted, free = pod["metadata"], gpus_of(pod), self._free_gpus()
        for name in free:
            node = _data(self.core.read_node(name, _preload_content=False))
            if node["spec"].get("unschedulable") or free[name] < wanted:
                continue
            if not node_matches(pod, node):
                continue
            _data(
                self.core.create_namespaced_pod_binding(
                    meta["name"],
                    meta["namespace"],
                    {
                        "apiVersion": "v1",
                        "kind": "Binding",
                        "metadata": {"name": meta["name"], "uid": meta["uid"]},
                        "target": {"apiVersion": "v1", "kind": "Node", "name": name},
                    },
                    _preload_content=False,
                )
            )
            return
        log.info("fake kubelet: no node for pod %s/%s yet", meta["namespace"], meta["name"])


class _LogServer(http.server.ThreadingHTTPServer):
    """The kubelet's ``containerLogs`` endpoint over HTTPS (see the module)."""

    daemon_threads = True

    def __init__(
        self, serving: tuple[Path, Path, Path], outputs: dict[tuple[str, str], str]
    ) -> None:
        super().__init__(("127.0.0.1", 0), _LogHandler)
        self.outputs = outputs
        self.port = int(self.server_address[1])
        cert, key, ca = serving
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH, cafile=str(ca))
        context.verify_mode = ssl.CERT_REQUIRED  # the API server's kubelet client certificate
        context.load_cert_chain(str(cert), str(key))
        self.socket = context.wrap_socket(self.socket, server_side=True)


class _LogHandler(http.server.BaseHTTPRequestHandler):
    server: _LogServer

    def do_GET(self) -> None:
        url = urllib.parse.urlsplit(self.path)
        parts = url.path.strip("/").split("/")
        if len(parts) != 4 or parts[0] != "containerLogs":
            self.send_error(404, "only containerLogs is served by the fake kubelet")
            return
        text = self.server.outputs.get((parts[1], parts[2]), "")
        tail = urllib.parse.parse_qs(url.query).get("tailLines")
        if tail:
            text = "".join(text.splitlines(keepends=True)[-int(tail[0]) :])
        body = text.encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("fake kubelet logs: " + format, *args)
