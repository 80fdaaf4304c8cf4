"""Helpers of the install test (``test_install.py``): helm and Starburst processes, the
objects and identities the test reads from the real API server.

- ``Helm`` runs ``helm install``/``upgrade`` in the background (they wait for the hook Job);
- ``Processes`` runs ``starburst controller``/``api`` out of the cluster, logging to files;
- ``release_env`` is the pods' environment out of the cluster: the release's settings file
  and database URL, and a kubeconfig holding a token of the chart's ServiceAccount;
- ``run_container`` runs what one container of a pod would, with its env and mounted files
  (``podview``) read from the real API server (``data_in``).
"""

from __future__ import annotations

import base64
import os
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

from kubernetes import client

from tests.helm import podview
from tests.helm.conftest import CHART
from tests.support.controlplane import RealKube
from tests.support.controlplane_process import free_port
from tests.support.waiting import wait_for

RELEASE = "sb"
FULLNAME = "sb-starburst"
SECURE = {
    "allowPrivilegeEscalation": False,
    "runAsNonRoot": True,
    "runAsUser": 65534,
    "capabilities": {"drop": ["ALL"]},
    "seccompProfile": {"type": "RuntimeDefault"},
}


def suspended_job(name: str, gpus: int) -> dict[str, Any]:
    container = {
        "name": "main",
        "image": "trainer:1",
        "command": ["python", "train.py"],
        "securityContext": SECURE,
        "resources": {
            "requests": {"nvidia.com/gpu": str(gpus), "cpu": "1", "memory": "1Gi"},
            "limits": {"nvidia.com/gpu": str(gpus)},
        },
    }
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "labels": {"starburst.io/queue": "default"}},
        "spec": {
            "suspend": True,
            "backoffLimit": 0,
            "template": {"spec": {"restartPolicy": "Never", "containers": [container]}},
        },
    }


def secret_data(core: client.CoreV1Api, namespace: str, name: str) -> dict[str, str]:
    data = core.read_namespaced_secret(name, namespace).data or {}
    return {k: base64.b64decode(v).decode() for k, v in data.items()}


def data_in(core: client.CoreV1Api, namespace: str) -> podview.DataOf:
    """``podview``'s ``data_of`` over the ConfigMaps and Secrets of the real API server."""

    def data_of(kind: str, name: str) -> dict[str, str]:
        if kind == "Secret":
            return secret_data(core, namespace, name)
        return dict(core.read_namespaced_config_map(name, namespace).data or {})

    return data_of


def run_container(
    pod: dict[str, Any], container: dict[str, Any], root: Path, data_of: podview.DataOf
) -> subprocess.CompletedProcess[str]:
    """What the container would run, here: its command (the image's entrypoint is
    ``starburst``; ``python`` is this interpreter) with its env and mounted files."""
    view = podview.settings_view(pod, container, root, data_of)
    command = container.get("command") or ["starburst"]
    program = ["-m", "starburst.cli"] if command == ["starburst"] else command[1:]
    assert command[0] in ("starburst", "python"), command
    # The container's own state dir is a path inside its pod; here it is the run's own.
    starburst = {k: v for k, v in view.env.items() if k.startswith("STARBURST_")}
    env = clean_env(**{**starburst, "STARBURST_STATE_DIR": str(root / "state")})
    return subprocess.run(
        [sys.executable, *program, *view.argv(container.get("args") or [])],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def starburst(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "starburst.cli", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("STARBURST_")}
    env.update(extra)
    return env


class Helm:
    """``helm install`` / ``helm upgrade`` running in the background (they wait for the hook)."""

    def __init__(self, helm: Path, kube: RealKube, namespace: str) -> None:
        self.namespace, self.kube, self.helm = namespace, kube, helm
        self.process: subprocess.Popen[str] | None = None

    def start(self, verb: str, values: Path) -> None:
        args = [verb, RELEASE, str(CHART), "--namespace", self.namespace, "--timeout", "5m"]
        self.process = subprocess.Popen(
            [
                str(self.helm),
                *args,
                "--kubeconfig",
                str(self.kube.admin_kubeconfig),
                "-f",
                str(values),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def finish(self) -> tuple[int, str, str]:
        assert self.process is not None
        out, err = self.process.communicate(timeout=300)
        return self.process.returncode, out, err

    def uninstall(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.communicate()
        subprocess.run(
            [
                str(self.helm),
                "uninstall",
                RELEASE,
                "--namespace",
                self.namespace,
                "--kubeconfig",
                str(self.kube.admin_kubeconfig),
                "--wait=false",
            ],
            capture_output=True,
            timeout=120,
            check=False,
        )


def sa_kubeconfig(kube: RealKube, namespace: str, tmp: Path) -> Path:
    reply = kube.request(
        "POST",
        f"/api/v1/namespaces/{namespace}/serviceaccounts/{FULLNAME}/token",
        {
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenRequest",
            "spec": {"expirationSeconds": 3600},
        },
    )
    return kube.write_kubeconfig(tmp / "sa.kubeconfig", reply["status"]["token"], FULLNAME)


def pods_pass_podsecurity(admin: Any, namespace: str) -> None:
    """Each Deployment's pod, created with dryRun: the real PodSecurity admission (the
    namespace enforces ``restricted``) judges it; a violation is a 403 naming the rule."""
    deployments = client.AppsV1Api(admin).list_namespaced_deployment(namespace).items
    assert {d.metadata.name for d in deployments} == {f"{FULLNAME}-controller", f"{FULLNAME}-api"}
    for deployment in deployments:
        template = admin.sanitize_for_serialization(deployment.spec.template)
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "spec": template["spec"],
            "metadata": {"generateName": "podsecurity-", "labels": template["metadata"]["labels"]},
        }
        client.CoreV1Api(admin).create_namespaced_pod(namespace, pod, dry_run="All")


def tail(log: Path, lines: int = 30) -> str:
    return "controller log:\n" + "\n".join(log.read_text().splitlines()[-lines:])


def ready(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=5) as reply:
            return bool(reply.status == 200)
    except OSError:
        return False


class Processes:
    """Starburst processes run out of the cluster, each logging to a file; stopped by SIGTERM."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.running: list[tuple[subprocess.Popen[bytes], Any]] = []

    def start(self, command: str, env: dict[str, str]) -> tuple[int, Path]:
        port, log = free_port(), self.tmp / f"{command}.log"
        out = log.open("w")
        env = {**env, "STARBURST_API_HOST": "127.0.0.1", "STARBURST_API_PORT": str(port)}
        process = subprocess.Popen(
            [sys.executable, "-m", "starburst.cli", command],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=out,
        )
        self.running.append((process, out))
        assert wait_for(lambda: ready(port), timeout=120), tail(log)
        return port, log

    def stop(self) -> None:
        for process, out in self.running:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            out.close()


def release_env(
    kube: RealKube, core: client.CoreV1Api, namespace: str, tmp: Path
) -> dict[str, str]:
    """The pods' environment, out of the cluster: the release's settings file and database
    URL, and a kubeconfig holding a token of the chart's ServiceAccount."""
    settings = tmp / "settings.yaml"
    settings.write_text(core.read_namespaced_config_map(FULLNAME, namespace).data["settings.yaml"])
    return clean_env(
        STARBURST_CONFIG=str(settings),
        STARBURST_DATABASE_URL=secret_data(core, namespace, FULLNAME)["database-url"],
        STARBURST_KUBECONFIG=str(sa_kubeconfig(kube, namespace, tmp)),
        STARBURST_STATE_DIR=str(tmp / "state"),
    )
