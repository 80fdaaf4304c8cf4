"""A real Kubernetes control plane for tests: etcd, kube-apiserver, controller manager, scheduler.

Usage (one control plane per pytest session/worker; start-up takes seconds once built)::

    from tests.support.controlplane import real_kube, real_namespace  # noqa: F401 (fixtures)

    def test_x(real_kube, real_namespace):
        api = real_kube.api_client()                 # admin (system:masters); close it
        creds = real_kube.service_account(real_namespace, "starburst",
                                          cluster_role="starburst")   # optional binding
        sa_api = real_kube.api_client(creds.token)   # acts as the ServiceAccount
        with real_kube.replica() as port: ...        # a second API server (HA, failover)
        creds.kubeconfig                             # a kubeconfig file for it
        real_kube.audit_events(user=creds.username)  # every request it made (audit log)

- ``real_kube`` (session): a ``RealKube``; ``real_kube.admin_kubeconfig`` is a kubeconfig file.
- ``real_namespace`` (per test): a fresh namespace labelled
  ``pod-security.kubernetes.io/enforce=restricted``, deleted after the test.
- GPU nodes and pod phases: ``tests.support.kubelet.FakeKubelet`` (``real_kube.kubelet(...)``).

What runs (binaries from ``tests.support.controlplane_build``, built when missing):
- etcd on a free loopback port (fsync off), data in the control plane's temp directory;
- kube-apiserver on a free loopback port with TLS from a fresh CA (clients verify it),
  authentication by a static admin token, static user tokens with groups
  (``kubepki.STATIC_USERS``, ``real_kube.pki.user_tokens``) and ServiceAccount tokens
  (TokenRequest, signed with a fresh key pair), ``--authorization-mode=Node,RBAC``,
  admission with the defaults plus ``NodeRestriction`` (PodSecurity among the defaults), an
  audit log of every request at ``Metadata`` level (``audit_events``);
- kube-controller-manager with the controllers the tests need (``CONTROLLERS``: Job, garbage
  collector, namespace, ServiceAccount, ClusterRole aggregation, ResourceQuota, Deployment and
  ReplicaSet, ...; no node lifecycle controller: the fake kubelet plays that part);
- kube-scheduler, when ``scheduler=True`` (the default).

With ``node_ip`` (the real node's tier, ``tests.support.realnode``) the API server listens on
that host address instead of loopback, keeps the ``kubernetes`` Service's endpoints, and can
call a real kubelet (``controlplane_process.node_args``); the controller manager also runs the
node lifecycle and EndpointSlice controllers.

Without Go the fixture skips, except with ``CI`` set (then it fails); a failed build or start
fails with the program's output.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import ssl
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.support import controlplane_build as build
from tests.support.controlplane_process import (
    AUDIT_POLICY,
    CONTROLLERS,
    NODE_CONTROLLERS,
    Process,
    StartError,
    apiserver_args,
    free_port,
    node_args,
)
from tests.support.kubepki import Pki, make_pki, sign
from tests.support.waiting import WaitTimeout, wait_for

RESTRICTED = {
    "pod-security.kubernetes.io/enforce": "restricted",
    "pod-security.kubernetes.io/enforce-version": "latest",
}


@dataclass(frozen=True)
class ServiceAccountCredentials:
    namespace: str
    name: str
    token: str
    kubeconfig: Path

    @property
    def username(self) -> str:
        return f"system:serviceaccount:{self.namespace}:{self.name}"


class RealKube:
    """A running control plane (see the module docstring). ``stop()`` ends every program."""

    def __init__(
        self, bindir: Path, workdir: Path, scheduler: bool = True, node_ip: str | None = None
    ) -> None:
        self.bindir, self.workdir = bindir, workdir
        self.version = build.kubernetes_version()
        self.node_ip = node_ip
        self.host = node_ip or "127.0.0.1"
        self.pki: Pki = make_pki(workdir / "pki", extra_ips=(node_ip,) if node_ip else ())
        self.audit_log = workdir / "audit.log"
        self.audit_log_replica = workdir / "audit-replica.log"
        self.etcd_url = ""
        self.port = 0
        self.scheduler = scheduler
        self._processes: list[Process] = []

    # -- lifecycle -------------------------------------------------------------------------
    def start(self) -> RealKube:
        try:
            etcd_url = self._start_etcd()
            self._start_apiserver(etcd_url)
            self.admin_kubeconfig = self.write_kubeconfig(
                self.workdir / "admin.kubeconfig", self.pki.admin_token, "admin"
            )
            common = [
                "--kubeconfig",
                str(self.admin_kubeconfig),
                "--leader-elect=false",
                "--secure-port=0",
                "-v=1",
            ]
            self._spawn(
                "kube-controller-manager",
                [
                    *common,
                    f"--controllers={NODE_CONTROLLERS if self.node_ip else CONTROLLERS}",
                    f"--root-ca-file={self.pki.ca_cert}",
                    "--concurrent-job-syncs=10",
                    "--concurrent-gc-syncs=10",
                    "--concurrent-namespace-syncs=5",
                ],
            )
            if self.scheduler:
                self._spawn("kube-scheduler", common)
            self._wait_for_default_service_account()
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        for process in reversed(self._processes):
            process.stop()
        self._processes.clear()

    def _spawn(self, name: str, args: list[str], program: str | None = None) -> Process:
        process = Process(name, [str(self.bindir / (program or name)), *args], self.workdir)
        self._processes.append(process)
        return process

    def _start_etcd(self) -> str:
        etcd = self._spawn("etcd", ["--data-dir", str(self.workdir / "etcd")])
        assert etcd.popen.stdout is not None
        line = etcd.popen.stdout.readline().decode().strip()  # "ready <url>", or EOF on failure
        if not line.startswith("ready "):
            etcd.popen.wait(10)
            raise StartError(f"etcd did not start:\n{etcd.log_tail()}")
        return line.split(" ", 1)[1]

    def _start_apiserver(self, etcd_url: str) -> None:
        self.etcd_url = etcd_url
        self.port = self._spawn_apiserver("kube-apiserver", self.audit_log)[1]

    def _spawn_apiserver(self, name: str, audit_log: Path) -> tuple[Process, int]:
        policy = self.workdir / "audit-policy.yaml"
        policy.write_text(AUDIT_POLICY)
        for attempt in range(3):  # a free port can be taken between probing and binding
            port = free_port()
            args = apiserver_args(self.pki, port, self.etcd_url, policy, audit_log)
            if self.node_ip:
                client = sign(
                    self.pki,
                    self.workdir / "pki" / "apiserver-kubelet-client",
                    common_name="kube-apiserver-kubelet-client",
                    organizations=("system:masters",),
                )
                args += node_args(
                    node_ip=self.node_ip, kubelet_client=client, ca_cert=self.pki.ca_cert
                )
            apiserver = self._spawn(name, args, program="kube-apiserver")
            if self._wait_ready(apiserver, port):
                return apiserver, port
            tail = apiserver.log_tail()
            apiserver.stop()
            self._processes.remove(apiserver)
            if "address already in use" not in tail or attempt == 2:
                raise StartError(f"{name} did not become ready:\n{tail}")
        raise AssertionError("unreachable")

    @contextlib.contextmanager
    def replica(self) -> Iterator[int]:
        """A second kube-apiserver on the same etcd, as in a highly available control plane
        (its own port, yielded; its own audit log), stopped afterwards. It starts with an
        empty watch cache filled from etcd's current revision, so it has forgotten every
        older resourceVersion: a watch from one gets 410 Gone, as after a failover."""
        replica, port = self._spawn_apiserver("kube-apiserver-replica", self.audit_log_replica)
        try:
            yield port
        finally:
            replica.stop()
            self._processes.remove(replica)

    def _wait_ready(self, apiserver: Process, port: int, timeout: float = 180.0) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and apiserver.alive():
            try:
                self.request("GET", "/readyz", port=port)
                return True
            except (OSError, urllib.error.HTTPError):
                time.sleep(0.2)
        return False

    def _wait_for_default_service_account(self, timeout: float = 120.0) -> None:
        def made() -> bool:
            try:
                self.request("GET", "/api/v1/namespaces/default/serviceaccounts/default")
                return True
            except urllib.error.HTTPError as err:
                if err.code != 404:
                    raise
            for process in self._processes:
                if not process.alive():
                    raise StartError(f"{process.name} exited:\n{process.log_tail()}")
            return False

        try:
            wait_for(made, timeout=timeout, interval=0.1)
        except WaitTimeout:
            raise StartError(
                "the controller manager made no default ServiceAccount in "
                f"{timeout:.0f}s:\n{self._processes[-1].log_tail()}"
            ) from None

    # -- clients ---------------------------------------------------------------------------
    @property
    def url(self) -> str:
        return f"https://{self.host}:{self.port}"

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        token: str | None = None,
        content_type: str = "application/json",
        port: int | None = None,
    ) -> Any:
        """One HTTP request as admin (or ``token``'s identity) to the API server (or the one
        on ``port``, a replica); the decoded JSON reply."""
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(
            f"https://{self.host}:{port or self.port}" + path,
            data=data,
            method=method,
            headers={
                "Authorization": f"Bearer {token or self.pki.admin_token}",
                "Content-Type": content_type,
                "Accept": "application/json",
            },
        )
        context = ssl.create_default_context(cafile=str(self.pki.ca_cert))
        with urllib.request.urlopen(req, context=context, timeout=30) as reply:
            raw = reply.read()
        return json.loads(raw) if raw.startswith(b"{") else raw.decode()

    def kubeconfig(self, token: str | None = None, user: str = "admin") -> dict[str, Any]:
        return {
            "apiVersion": "v1",
            "kind": "Config",
            "current-context": "real",
            "clusters": [
                {
                    "name": "real",
                    "cluster": {"server": self.url, "certificate-authority": str(self.pki.ca_cert)},
                }
            ],
            "users": [{"name": user, "user": {"token": token or self.pki.admin_token}}],
            "contexts": [{"name": "real", "context": {"cluster": "real", "user": user}}],
        }

    def write_kubeconfig(self, path: Path, token: str | None = None, user: str = "admin") -> Path:
        path.write_text(json.dumps(self.kubeconfig(token, user), indent=1))
        path.chmod(0o600)
        return path

    def api_client(self, token: str | None = None, url: str | None = None) -> Any:
        """An official ``kubernetes.client.ApiClient`` (admin, or ``token``'s identity), to
        the API server or to ``url`` (a proxy in front of it)."""
        from kubernetes import client

        config = client.Configuration()
        config.host = url or self.url
        config.ssl_ca_cert = str(self.pki.ca_cert)
        config.api_key = {"authorization": f"Bearer {token or self.pki.admin_token}"}
        return client.ApiClient(config)

    # -- helpers for tests -----------------------------------------------------------------
    def create_namespace(self, prefix: str = "t", restricted: bool = True) -> str:
        name = f"{prefix}-{secrets.token_hex(4)}"
        labels = RESTRICTED if restricted else {}
        self.request("POST", "/api/v1/namespaces", {"metadata": {"name": name, "labels": labels}})
        return name

    def delete_namespace(self, name: str, timeout: float = 60.0) -> None:
        """Delete a namespace and wait until its pods are gone (a fake kubelet must still be
        running to finish pods bound to its nodes); the namespace itself goes later."""
        # Jobs first (or their controller makes new pods), then the pods without grace
        # (quicker than the namespace controller's own rounds), then the namespace
        for path, body in ((f"/apis/batch/v1/namespaces/{name}/jobs", {
                                "propagationPolicy": "Background"}),
                           (f"/api/v1/namespaces/{name}/pods", {"gracePeriodSeconds": 0}),
                           (f"/api/v1/namespaces/{name}", None)):  # fmt: skip
            try:
                self.request("DELETE", path, body)
            except urllib.error.HTTPError as err:
                if err.code != 404:
                    raise
        wait_for(
            lambda: not self.request("GET", f"/api/v1/namespaces/{name}/pods?limit=1")["items"],
            timeout=timeout,
            interval=0.1,
            what=f"the pods of namespace {name} to be gone",
        )

    def service_account(
        self,
        namespace: str,
        name: str,
        cluster_role: str | None = None,
        role: str | None = None,
        expiration: int = 3600,
    ) -> ServiceAccountCredentials:
        """Create a ServiceAccount (optionally bound to a ClusterRole cluster-wide and/or a
        ClusterRole in ``namespace``), get it a token from the TokenRequest API and write a
        kubeconfig for it."""
        base = f"/api/v1/namespaces/{namespace}/serviceaccounts"
        self.request("POST", base, {"metadata": {"name": name}})
        subject = [{"kind": "ServiceAccount", "name": name, "namespace": namespace}]
        if cluster_role:
            self.request(
                "POST",
                "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
                {
                    "metadata": {"name": f"{namespace}-{name}-{cluster_role}"},
                    "subjects": subject,
                    "roleRef": {
                        "apiGroup": "rbac.authorization.k8s.io",
                        "kind": "ClusterRole",
                        "name": cluster_role,
                    },
                },
            )
        if role:
            self.request(
                "POST",
                f"/apis/rbac.authorization.k8s.io/v1/namespaces/{namespace}/rolebindings",
                {
                    "metadata": {"name": f"{name}-{role}"},
                    "subjects": subject,
                    "roleRef": {
                        "apiGroup": "rbac.authorization.k8s.io",
                        "kind": "ClusterRole",
                        "name": role,
                    },
                },
            )
        reply = self.request(
            "POST",
            f"{base}/{name}/token",
            {
                "apiVersion": "authentication.k8s.io/v1",
                "kind": "TokenRequest",
                "spec": {"expirationSeconds": expiration},
            },
        )
        token = reply["status"]["token"]
        path = self.write_kubeconfig(self.workdir / f"{namespace}-{name}.kubeconfig", token, name)
        return ServiceAccountCredentials(namespace, name, token, path)

    def apply_cluster_role(self, role: dict[str, Any]) -> None:
        """Create or update a ClusterRole (server-side apply, as ``kubectl apply`` would)."""
        name = role["metadata"]["name"]
        self.request(
            "PATCH",
            f"/apis/rbac.authorization.k8s.io/v1/clusterroles/{name}?fieldManager=tests&force=true",
            role,
            content_type="application/apply-patch+yaml",
        )

    def audit_events(self, user: str | None = None) -> list[dict[str, Any]]:
        """Every audited request so far (``user``: only that username's), oldest first.

        Events are written when a request completes; poll (``wait_for``) for the newest."""
        return read_audit(self.audit_log, user)

    def kubelet_serving(self) -> tuple[Path, Path, Path]:
        """A serving certificate for a fake kubelet on 127.0.0.1 (its key, and the CA), so it
        can serve its pods' logs (``FakeKubelet(serving=...)``)."""
        cert, key = sign(
            self.pki,
            self.workdir / "pki" / f"fake-kubelet-{secrets.token_hex(4)}",
            common_name="fake-kubelet",
            ips=("127.0.0.1",),
            server=True,
        )
        return cert, key, self.pki.ca_cert

    def kubelet(self, **kwargs: Any) -> Any:
        """A ``FakeKubelet`` on this control plane (see ``tests.support.kubelet``)."""
        from tests.support.kubelet import FakeKubelet

        return FakeKubelet(self.api_client(), binds=not self.scheduler, **kwargs)


def _on_ci() -> bool:
    return bool(os.environ.get("CI"))


@pytest.fixture(scope="session")
def real_kube() -> Iterator[RealKube]:
    try:
        bindir = build.binaries()
    except build.NoGo as err:
        if _on_ci():
            pytest.fail(f"CI is set and the real control plane cannot be built: {err}")
        pytest.skip(str(err))
    workdir = Path(tempfile.mkdtemp(prefix="starburst-kube-"))
    kube = RealKube(bindir, workdir).start()
    try:
        yield kube
    finally:
        kube.stop()
        shutil.rmtree(workdir, ignore_errors=True)


@pytest.fixture
def real_namespace(real_kube: RealKube) -> Iterator[str]:
    name = real_kube.create_namespace()
    yield name
    real_kube.delete_namespace(name)


def read_audit(path: Path, user: str | None = None) -> list[dict[str, Any]]:
    """The complete events of an audit log (``user``: only that username's), oldest first.

    The API server appends while a test reads: a last line without its newline is an event
    still being written, left for the next read (parsing it fails on a cut string)."""
    events = []
    with open(path, errors="replace") as log:
        for line in log:
            if not line.endswith("\n") or not line.strip():
                continue
            event = json.loads(line)
            if user is None or event.get("user", {}).get("username") == user:
                events.append(event)
    return events
