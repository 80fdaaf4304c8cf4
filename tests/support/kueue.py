"""Kueue on a real test control plane: its CRDs installed, its manager running out of cluster
with its admission webhooks registered as ``url:`` webhooks.

Usage::

    def test_x(kueue_kube):                      # a RealKube with Kueue (session fixture)
        kueue_kube.kube.request(...)             # the control plane (tests.support.controlplane)
        kueue_kube.restart()                     # stop and start Kueue's manager again

What runs (``tests.support.kueue_build`` builds the manager, ``sigs.k8s.io/kueue`` v0.17.0):
- a control plane of its own (not the session's ``real_kube``): Kueue's webhooks see every
  Job create, and a webhook left registered after its server stopped would fail the Jobs of
  tests that never asked for Kueue;
- the CRDs of ``config/components/crd/bases`` (server-side apply), storage version only;
- the manager (``kueue --config``) with ``manageJobsWithoutQueueName: false`` (only Jobs with
  ``kueue.x-k8s.io/queue-name`` are Kueue's: the coexistence rule Starburst relies on), the
  ``batch/job`` integration, no leader election, its webhook server on a free loopback port
  with a certificate from the control plane's CA (``internalCertManagement`` off, since that
  would write certificates for an in-cluster Service);
- Kueue's webhook configurations (``config/components/webhook/manifests.yaml``) with every
  ``service:`` replaced by ``url: https://127.0.0.1:<port><path>`` and the CA as
  ``caBundle``, kept to the webhooks of the integrations that run (Jobs and Kueue's own
  kinds; a webhook of a disabled integration would 404 with ``failurePolicy: Fail``).

One quirk of running out of cluster: with ``internalCertManagement`` off, Kueue v0.17.0 reads
its metrics server's certificate from the fixed path ``/etc/kueue/metrics/certs`` (and exits
if it is missing), whatever the metrics address. ``metrics_certificate()`` writes a
self-signed one there once per machine (the metrics server is switched off; nothing reads it).
"""

from __future__ import annotations

import contextlib
import datetime
import fcntl
import json
import os
import shutil
import tempfile
import urllib.error
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support import controlplane_build, kueue_build
from tests.support.controlplane import RealKube
from tests.support.controlplane_process import Process, StartError, free_port
from tests.support.kubepki import sign
from tests.support.waiting import WaitTimeout, wait_for

NAMESPACE = "kueue-system"
METRICS_CERTS = Path("/etc/kueue/metrics/certs")
#: the webhooks kept: Jobs (the ``batch/job`` integration) and Kueue's own kinds
WEBHOOK_PATHS = ("-batch-v1-job", "-kueue-x-k8s-io-")
WEBHOOK_NAMES = {
    "MutatingWebhookConfiguration": "kueue-mutating-webhook-configuration",
    "ValidatingWebhookConfiguration": "kueue-validating-webhook-configuration",
}
CRD_GROUP = "kueue.x-k8s.io"


class KueueKube:
    """A control plane with Kueue (see the module docstring); ``stop()`` ends both."""

    def __init__(self, kube: RealKube, program: Path, workdir: Path) -> None:
        self.kube, self.program, self.workdir = kube, program, workdir
        self.webhook_port = 0
        self._process: Process | None = None
        self._starts = 0

    # -- lifecycle -------------------------------------------------------------------------
    def start(self) -> KueueKube:
        install_crds(self.kube)
        self._ensure_namespace()
        metrics_certificate()
        self._serving = sign(
            self.kube.pki,
            self.workdir / "kueue-webhook",
            common_name="kueue-webhook",
            ips=("127.0.0.1",),
            server=True,
        )
        self.webhook_port = free_port()
        self._start_manager()
        self._register_webhooks()
        return self

    def stop(self) -> None:
        if self._process is not None:
            self._process.stop()
            self._process = None

    def restart(self) -> None:
        """Stop Kueue's manager and start it again (same webhook port and certificate)."""
        self.stop()
        self._start_manager()

    @property
    def log(self) -> str:
        return self._process.log_tail(80) if self._process else ""

    def _ensure_namespace(self) -> None:
        with contextlib.suppress(urllib.error.HTTPError):  # 409: a restarted fixture
            self.kube.request("POST", "/api/v1/namespaces", {"metadata": {"name": NAMESPACE}})

    def _start_manager(self) -> None:
        certs = self.workdir / "webhook-certs"
        certs.mkdir(exist_ok=True)
        shutil.copy(self._serving[0], certs / "tls.crt")
        shutil.copy(self._serving[1], certs / "tls.key")
        health = free_port()
        config = self.workdir / "kueue-config.yaml"
        config.write_text(json.dumps(manager_config(self.webhook_port, certs, health)))
        self._starts += 1
        kubeconfig = self.kube.admin_kubeconfig
        argv = [
            str(self.program),
            f"--config={config}",
            f"--kubeconfig={kubeconfig}",
            "--zap-log-level=2",
        ]
        self._process = Process(f"kueue-{self._starts}", argv, self.workdir)
        self._wait_ready(health)

    def _wait_ready(self, health_port: int, timeout: float = 120.0) -> None:
        import urllib.request

        process = self._process
        assert process is not None

        def ready() -> bool:
            if not process.alive():
                raise StartError(f"Kueue's manager exited:\n{process.log_tail()}")
            try:
                with urllib.request.urlopen(
                    f"http://127.0.0.1:{health_port}/readyz", timeout=2
                ) as reply:
                    return bool(reply.status == 200)
            except OSError:
                return False

        try:
            wait_for(ready, timeout=timeout, interval=0.2, what="Kueue's manager to be ready")
        except WaitTimeout:
            raise StartError(f"Kueue's manager not ready:\n{process.log_tail()}") from None

    def _register_webhooks(self) -> None:
        ca = self.kube.pki.ca_cert.read_bytes()
        manifests = kueue_build.module_dir() / "config/components/webhook/manifests.yaml"
        for document in yaml.safe_load_all(manifests.read_text()):
            body = url_webhooks(document, self.webhook_port, ca)
            kind = body["kind"]
            plural = kind.lower() + "s"
            self.kube.request(
                "PATCH",
                f"/apis/admissionregistration.k8s.io/v1/{plural}/"
                f"{body['metadata']['name']}?fieldManager=tests&force=true",
                body,
                content_type="application/apply-patch+yaml",
            )


def manager_config(webhook_port: int, cert_dir: Path, health_port: int) -> dict[str, Any]:
    """Kueue's ``Configuration`` (config.kueue.x-k8s.io/v1beta2) for an out-of-cluster run."""
    return {
        "apiVersion": "config.kueue.x-k8s.io/v1beta2",
        "kind": "Configuration",
        "namespace": NAMESPACE,
        "manageJobsWithoutQueueName": False,
        "health": {"healthProbeBindAddress": f"127.0.0.1:{health_port}"},
        "metrics": {"bindAddress": "0"},
        "webhook": {"port": webhook_port, "host": "127.0.0.1", "certDir": str(cert_dir)},
        "leaderElection": {"leaderElect": False},
        "internalCertManagement": {"enable": False},
        "integrations": {"frameworks": ["batch/job"]},
        # the on-demand visibility API is an aggregated API server of its own, with its
        # certificate at a fixed in-cluster path; Starburst reads Workloads directly
        "featureGates": {"VisibilityOnDemand": False},
    }


def url_webhooks(document: dict[str, Any], port: int, ca: bytes) -> dict[str, Any]:
    """One of Kueue's webhook configurations, pointed at ``https://127.0.0.1:<port>``."""
    import base64

    kept = []
    for webhook in document["webhooks"]:
        path = webhook["clientConfig"]["service"]["path"]
        if not any(part in path for part in WEBHOOK_PATHS):
            continue
        webhook["clientConfig"] = {
            "url": f"https://127.0.0.1:{port}{path}",
            "caBundle": base64.b64encode(ca).decode(),
        }
        kept.append(webhook)
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": document["kind"],
        "metadata": {"name": WEBHOOK_NAMES[document["kind"]]},
        "webhooks": kept,
    }


def install_crds(kube: RealKube, timeout: float = 60.0) -> None:
    """Apply Kueue's CRDs and wait until the API server serves them (``Established``)."""
    names = []
    for path in kueue_build.crd_files():
        crd = yaml.safe_load(path.read_text())
        name = crd["metadata"]["name"]
        names.append(name)
        kube.request(
            "PATCH",
            f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}"
            "?fieldManager=tests&force=true",
            crd,
            content_type="application/apply-patch+yaml",
        )

    def established() -> bool:
        for name in names:
            path = f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}"
            crd = kube.request("GET", path)
            conditions = (crd.get("status") or {}).get("conditions") or []
            if not any(c["type"] == "Established" and c["status"] == "True" for c in conditions):
                return False
        return True

    wait_for(established, timeout=timeout, interval=0.2, what="Kueue's CRDs established")

    def served() -> bool:  # Established comes a moment before the handler serves (429)
        try:
            kube.request("GET", f"/apis/{CRD_GROUP}/v1beta2/workloads?limit=1")
            return True
        except urllib.error.HTTPError as err:
            if err.code not in (404, 429, 503):
                raise
            return False

    wait_for(served, timeout=timeout, interval=0.2, what="Kueue's kinds served")


def metrics_certificate() -> None:
    """A self-signed certificate at Kueue's fixed metrics path, written once per machine."""
    if (METRICS_CERTS / "tls.key").is_file():
        return
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    METRICS_CERTS.mkdir(parents=True, exist_ok=True)
    with open(METRICS_CERTS.parent / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (METRICS_CERTS / "tls.key").is_file():
            return
        key = ec.generate_private_key(ec.SECP256R1())
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kueue-metrics")])
        now = datetime.datetime.now(datetime.UTC)
        cert = (
            x509.CertificateBuilder()
            .subject_name(name)
            .issuer_name(name)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(hours=1))
            .not_valid_after(now + datetime.timedelta(days=3650))
            .sign(key, hashes.SHA256())
        )
        (METRICS_CERTS / "tls.crt").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        scratch = METRICS_CERTS / "tls.key.new"
        scratch.write_bytes(
            key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            )
        )
        os.replace(scratch, METRICS_CERTS / "tls.key")


@pytest.fixture(scope="session")
def kueue_kube() -> Iterator[KueueKube]:
    try:
        bindir = controlplane_build.binaries()
        program = kueue_build.manager()
    except controlplane_build.NoGo as err:
        if os.environ.get("CI"):
            pytest.fail(f"CI is set and Kueue cannot be built: {err}")
        pytest.skip(str(err))
    workdir = Path(tempfile.mkdtemp(prefix="starburst-kueue-"))
    kube = RealKube(bindir, workdir).start()
    kueue = KueueKube(kube, program, workdir)
    try:
        kueue.start()
        yield kueue
    finally:
        kueue.stop()
        kube.stop()
        shutil.rmtree(workdir, ignore_errors=True)
