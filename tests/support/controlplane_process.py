"""The programs of a test control plane: their command lines, and each a child process with
its output in a log file.

``apiserver_args`` is kube-apiserver's command line (``node_args`` what it adds for a real
node); ``CONTROLLERS`` the controller manager's controllers (``NODE_CONTROLLERS`` with a real
node); ``AUDIT_POLICY`` records every request once, at ``Metadata`` level.

``Process`` starts one (etcd's stdout stays a pipe: it announces its address there) and stops
it (SIGTERM, then SIGKILL after 15 s); a child also gets SIGTERM when the process that
started it dies (Linux ``PR_SET_PDEATHSIG``); ``log_tail`` is what a start-up error shows.
``free_port`` probes a free loopback port (callers retry if it is taken before they bind).
"""

from __future__ import annotations

import ctypes
import signal
import socket
import subprocess
import sys
from pathlib import Path

from tests.support.kubepki import Pki

_PR_SET_PDEATHSIG = 1


class StartError(RuntimeError):
    """A control-plane program did not start (the message carries its log)."""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _die_with_parent() -> None:
    """In the child, before exec: SIGTERM it when the test process dies, even by SIGKILL
    (a killed pytest must not leave a control plane running on a shared machine)."""
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


class Process:
    def __init__(self, name: str, argv: list[str], workdir: Path) -> None:
        self.name = name
        self.log_path = workdir / f"{name}.log"
        self._log = open(self.log_path, "wb")  # noqa: SIM115 (closed in stop)
        self.popen = subprocess.Popen(
            argv,
            stdout=subprocess.PIPE if name == "etcd" else self._log,
            stderr=self._log,
            stdin=subprocess.DEVNULL,
            preexec_fn=_die_with_parent,
        )

    def alive(self) -> bool:
        return self.popen.poll() is None

    def log_tail(self, lines: int = 40) -> str:
        self._log.flush()
        text = self.log_path.read_text(errors="replace").splitlines()
        return "\n".join(text[-lines:])

    def stop(self) -> None:
        if self.alive():
            self.popen.terminate()
            try:
                self.popen.wait(15)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait()
        if self.popen.stdout is not None:
            self.popen.stdout.close()
        self._log.close()


CONTROLLERS = ",".join([
    "job-controller", "garbage-collector-controller", "namespace-controller",
    "serviceaccount-controller", "ttl-after-finished-controller",
    "pod-garbage-collector-controller", "root-ca-certificate-publisher-controller",
    "clusterrole-aggregation-controller", "resourcequota-controller",
    "deployment-controller", "replicaset-controller",
])  # fmt: skip
#: with a real node: the node lifecycle controller removes the ``not-ready`` taint a new node
#: is registered with (the fake kubelet removes it itself), and Services get EndpointSlices
#: (kube-proxy routes ClusterIPs by them)
NODE_CONTROLLERS = f"{CONTROLLERS},node-lifecycle-controller,endpointslice-controller"
AUDIT_POLICY = """apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: Metadata
"""


def apiserver_args(pki: Pki, port: int, etcd_url: str, policy: Path, audit_log: Path) -> list[str]:
    """kube-apiserver's command line: loopback, TLS, tokens, Node+RBAC, audit."""
    return [
        f"--etcd-servers={etcd_url}",
        "--bind-address=127.0.0.1",
        "--advertise-address=127.0.0.1",
        f"--secure-port={port}",
        f"--tls-cert-file={pki.serving_cert}",
        f"--tls-private-key-file={pki.serving_key}",
        f"--client-ca-file={pki.ca_cert}",
        f"--token-auth-file={pki.token_file}",
        f"--service-account-key-file={pki.sa_public_key}",
        f"--service-account-signing-key-file={pki.sa_private_key}",
        "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
        "--api-audiences=https://kubernetes.default.svc.cluster.local",
        "--authorization-mode=Node,RBAC",
        # a request for a kubelet (pods/exec, /log, port-forward) goes to the node's
        # InternalIP, which the fake kubelet reports as 127.0.0.1 (nothing listens there, so
        # it is refused at once), never to its name: no DNS lookup of a fake node's name
        "--kubelet-preferred-address-types=InternalIP",
        "--enable-admission-plugins=NodeRestriction",
        "--service-cluster-ip-range=10.0.0.0/24",
        "--allow-privileged=false",
        f"--audit-policy-file={policy}",
        f"--audit-log-path={audit_log}",
        "--audit-log-mode=blocking",
        "--endpoint-reconciler-type=none",
        "--enable-priority-and-fairness=false",
        "--profiling=false",
        "-v=1",
    ]


def node_args(*, node_ip: str, kubelet_client: tuple[Path, Path], ca_cert: Path) -> list[str]:
    """What kube-apiserver's command line changes for a real node (later flags win): it
    listens on the host's ``node_ip`` (pods reach it there through the ``kubernetes``
    Service, whose endpoints it now keeps), and it calls kubelets (logs, exec) with a client
    certificate, verifying theirs against the test CA."""
    return [
        f"--bind-address={node_ip}",
        f"--advertise-address={node_ip}",
        "--endpoint-reconciler-type=lease",
        f"--kubelet-client-certificate={kubelet_client[0]}",
        f"--kubelet-client-key={kubelet_client[1]}",
        f"--kubelet-certificate-authority={ca_cert}",
    ]
