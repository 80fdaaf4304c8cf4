"""A real SkyPilot API server for tests: ``sky api start`` in a throwaway HOME on a free port.

Terms:
- *endpoint*: ``http://127.0.0.1:<port>``; the SDK in this process reaches it through
  ``SKYPILOT_API_SERVER_ENDPOINT`` (and the CLI through ``SKYPILOT_API_SERVER_LOCAL_PORT``),
  with ``HOME`` pointing at the throwaway directory, where the server keeps its state
  (``~/.sky``) and its log (``~/.sky/api_server/server.log``).
- *warm*: the server answers ``sky api start`` before its request workers run; the first
  request it serves waits for them (tens of seconds on a loaded 2-core machine), so the
  fixture sends one request and waits for it before handing the server to tests.

Invariants: nothing here needs the network (usage collection is off); the server is stopped
by its own command (``sky api stop``) with the same environment, so it is this server that
stops, never another one on the machine.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

START_TIMEOUT_S = 240.0
# Offline stand-ins for what SkyPilot fetches or checks before it uses Kubernetes infra:
# - the accelerator-name catalog it downloads from GitHub on first use (validating a task with
#   GPUs needs it), reduced to the GPUs the tests name;
# - ``socat`` and ``nc``, which ``sky check`` requires even when the networking mode
#   (``nodeport``, set in the server's config) never runs them, and ``rsync``, whose
#   ``--version`` the provisioner runs before it creates any pod (it would copy files to the
#   pods, which no kubelet runs here): executable stubs on its PATH;
# - the Kubernetes image catalog it downloads too, which names the container image of the pods
#   it creates (its jobs controller's, a task's): placeholder images, no kubelet pulls them.
KUBERNETES_IMAGES_CSV = (
    "Tag,Region,ImageId\n"
    "skypilot:custom-cpu-ubuntu-2204-v1,,offline.invalid/skypilot/cpu:test\n"
    "skypilot:custom-gpu-ubuntu-2204-v1,,offline.invalid/skypilot/gpu:test\n"
)
SERVER_CONFIG = "kubernetes:\n  networking: nodeport\n"
ACCELERATORS_CSV = (
    "AcceleratorName,Clouds\n"
    "A100,\"['AWS', 'Azure', 'GCP', 'Kubernetes']\"\n"
    "H100,\"['AWS', 'Azure', 'GCP', 'Kubernetes']\"\n"
)


class SkyServerError(RuntimeError):
    """The API server could not be started (the message carries its log's tail)."""


def sky_binary() -> Path | None:
    candidate = Path(sys.executable).parent / "sky"
    return candidate if candidate.exists() else None


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def queue_port(port: int) -> int:
    """The port SkyPilot's server (0.14) binds its request queue on, derived from its own."""
    return 50000 + (11 + port - 46580) % 10000


def server_port() -> int:
    """A free port whose request-queue port is free too (else the server dies at start)."""
    for _ in range(50):
        port = free_port()
        with socket.socket() as sock:
            try:
                sock.bind(("localhost", queue_port(port)))
            except OSError:
                continue
        return port
    raise SkyServerError("no free port pair for a SkyPilot API server")


@dataclass
class SkyServer:
    """One API server; ``env`` is what a client (SDK or CLI) needs to reach it."""

    home: Path
    port: int
    binary: Path
    extra_env: dict[str, str] = field(default_factory=dict)
    #: the commands stubbed on its PATH (see above); without ``rsync`` the host's real one
    stubs: tuple[str, ...] = ("socat", "nc", "rsync")
    #: its Kubernetes image catalog (which image SkyPilot's pods run) and ``~/.sky/config.yaml``
    images_csv: str = KUBERNETES_IMAGES_CSV
    config: str = SERVER_CONFIG

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def env(self) -> dict[str, str]:
        return {
            "HOME": str(self.home),
            "SKYPILOT_API_SERVER_LOCAL_PORT": str(self.port),
            "SKYPILOT_API_SERVER_ENDPOINT": self.endpoint,
            "SKYPILOT_DISABLE_USAGE_COLLECTION": "1",
            # size the server for a shared test machine: one long-request worker, few short
            "SKYPILOT_POD_CPU_CORE_LIMIT": "1",
            "SKYPILOT_POD_MEMORY_GB_LIMIT": "2",
            **self.extra_env,
        }

    @property
    def log(self) -> Path:
        return self.home / ".sky" / "api_server" / "server.log"

    def cli(self, *args: str, timeout: float = 180.0) -> subprocess.CompletedProcess[str]:
        """Run ``sky ARGS`` as a user of this server would."""
        return subprocess.run(
            [str(self.binary), *args],
            env={**os.environ, **self.env},
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    def prepare(self) -> None:
        """What an offline test server needs before it starts (see ``KUBERNETES_READY``)."""
        stubs = self.home / "bin"
        stubs.mkdir(parents=True, exist_ok=True)
        for name in self.stubs:
            stub = stubs / name
            stub.write_text(
                "#!/bin/sh\n# SkyPilot checks this exists; here nothing it would reach "
                "runs (no kubelet, nodeport networking)\nexit 0\n"
            )
            stub.chmod(0o755)
        path = self.extra_env.get("PATH", os.environ.get("PATH", ""))
        self.extra_env["PATH"] = f"{stubs}{os.pathsep}{path}"
        sky_dir = self.home / ".sky"
        catalog = sky_dir / "catalogs" / "v8" / "common" / "accelerators.csv"
        catalog.parent.mkdir(parents=True, exist_ok=True)
        catalog.write_text(ACCELERATORS_CSV)
        images = sky_dir / "catalogs" / "v8" / "kubernetes" / "images.csv"
        images.parent.mkdir(parents=True, exist_ok=True)
        images.write_text(self.images_csv)
        (sky_dir / "config.yaml").write_text(self.config)

    def start(self) -> None:
        self.prepare()
        started = time.monotonic()
        done = self.cli(
            "api", "start", "--host", "127.0.0.1", "--port", str(self.port), timeout=START_TIMEOUT_S
        )
        # `sky api start` gives a server 60 s to answer; a loaded machine may need longer, and
        # the server keeps starting after the command gave up: wait for it here
        if done.returncode != 0 and not self._healthy_within(START_TIMEOUT_S):
            self.stop()
            raise SkyServerError(
                f"sky api start failed ({done.returncode}): "
                f"{done.stdout[-800:]}{done.stderr[-800:]}{self.log_tail()}"
            )
        self.started_in = time.monotonic() - started

    def _healthy_within(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"{self.endpoint}/api/health", timeout=5) as reply:
                    if reply.status == 200:
                        return True
            except OSError:
                pass
            time.sleep(1.0)
        return False

    def stop(self) -> None:
        self.cli("api", "stop", timeout=120.0)

    def log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""
