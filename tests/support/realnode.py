"""A real node in the test cluster: containerd, kubelet, kube-proxy and a GPU device plugin.

``RealNode(kube, bindir, workdir).start()`` joins one node (``NODE``) to ``kube``, a
``RealKube`` started with ``node_ip`` (its API server on this host's address, so pods reach it
through the ``kubernetes`` Service). What runs, every program a child of the test process:
- containerd with its own config, root, state and socket under ``workdir``: runc, the
  ``cgroupfs`` driver, ``restrict_oom_score_adj = true`` (root here lacks CAP_SYS_RESOURCE, and
  runc fails to raise a container's ``oom_score_adj`` without it), the sandbox image built
  here (``tests.support.nodeimages``; it and the busybox image are imported into the
  ``k8s.io`` namespace, where CRI looks), network namespaces under its state directory;
- CNI: a ``bridge`` (``BRIDGE``, the pods' gateway) with ``host-local`` addresses from
  ``POD_SUBNET`` and a default route (without it pods cannot reach ClusterIPs), and
  ``portmap``;
- the kubelet (from the pinned release): registered as ``NODE`` with a client certificate of
  ``system:node:<NODE>``, serving on the host's address with a certificate from the test CA
  (the API server verifies it, and calls it for logs and exec with its own client
  certificate), x509 and webhook authentication, webhook authorization;
- kube-proxy in iptables mode (ClusterIPs), told not to touch conntrack sysctls or
  ``route_localnet``;
- ``gpu-device-plugin`` (``tests/controlplane/cmd``): ``gpus`` fake ``nvidia.com/gpu``
  devices; the kubelet hands a container the ones it chose as ``NVIDIA_VISIBLE_DEVICES``.

``start`` returns once the node is Ready with its GPUs allocatable. ``stop`` deletes the pods
left on the node, stops the programs, and has ``tests.support.nodehost`` put the host back as
it was (``leftovers`` lists what it could not). Some host paths are fixed (the kubelet's
device-plugin directory, ``/var/log/containers``, the shims' ``/run/containerd``), so there is
one real node per machine: ``real_node`` holds the machine-wide ``LOCK`` while its node lives.

Terms: *node IP*, this host's first global IPv4 address (the kubelet's, and the API server's).
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import tempfile
import time
import urllib.error
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.support import controlplane_build as build
from tests.support import nodehost, nodeimages
from tests.support.controlplane import RealKube
from tests.support.controlplane_process import Process, StartError, free_port
from tests.support.kubepki import sign
from tests.support.waiting import wait_for

NODE = "real-node"
BRIDGE = "starburst0"
NETWORK = "starburst"  # the CNI network's name
POD_SUBNET = "10.244.0.0/24"
LOCK = Path.home() / ".cache" / "starburst" / "realnode.lock"
#: the kubelet and the device plugin meet in this fixed directory (the kubelet's constant)
DEVICE_PLUGINS = Path("/var/lib/kubelet/device-plugins")


def node_ip() -> str:
    """This host's first global IPv4 address (see the module's terms)."""
    done = subprocess.run(
        ["ip", "-4", "-o", "addr", "show", "scope", "global"],
        capture_output=True,
        text=True,
        check=True,
    )
    for line in done.stdout.splitlines():
        return line.split()[3].split("/")[0]
    raise StartError("this host has no global IPv4 address for the node and the API server")


@dataclass(frozen=True)
class Timings:
    """Seconds spent on the one-time work and on this node's start (printed by the fixture)."""

    install: float
    build: float
    images: float = 0.0
    start: float = 0.0

    def describe(self) -> str:
        return (
            f"packages installed in {self.install:.1f} s, programs built in {self.build:.1f} s "
            f"(0: cached), images built and imported in {self.images:.1f} s, control plane "
            f"and node up in {self.start:.1f} s"
        )


class RealNode:
    def __init__(self, kube: RealKube, bindir: Path, workdir: Path, gpus: int = 4) -> None:
        self.kube, self.bindir, self.workdir, self.gpus = kube, bindir, workdir, gpus
        self.socket = workdir / "containerd" / "containerd.sock"
        self.leftovers: list[str] = []
        self.images_seconds = 0.0
        self._processes: list[Process] = []
        self._host: nodehost.HostState | None = None

    # -- lifecycle -------------------------------------------------------------------------
    def start(self) -> RealNode:
        self._host = nodehost.HostState.capture()
        try:
            self._start_containerd()
            self._import_images()
            self._write_cni()
            self._start_kubelet()
            self._wait_ready()
            self._spawn("kube-proxy", self._proxy_args())
            self._spawn(
                "gpu-device-plugin", ["-count", str(self.gpus), "-dir", str(DEVICE_PLUGINS)]
            )
            self._wait_for_gpus()
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        if self._processes:
            self._drain()
        for process in reversed(self._processes):
            if process.name != "containerd":  # it goes last, once its containers are removed
                process.stop()
        proxy = self.bindir / "kube-proxy"
        subprocess.run([str(proxy), "--cleanup"], capture_output=True, check=False, timeout=60)
        if any(p.name == "containerd" and p.alive() for p in self._processes):
            self._remove_containers()
        for process in self._processes:
            process.stop()
        self._processes.clear()
        if self._host is not None:
            self.leftovers = self._host.restore(
                directories=(self.workdir,), socket=self.socket, bridge=BRIDGE, network=NETWORK
            )
            self._host = None

    def _spawn(self, name: str, args: list[str], program: str | None = None) -> Process:
        binary = program or str(self.bindir / name)
        process = Process(name, [binary, *args], self.workdir)
        self._processes.append(process)
        return process

    def log(self, name: str) -> str:
        return next(p.log_tail(80) for p in self._processes if p.name == name)

    # -- containerd ------------------------------------------------------------------------
    def ctr(self, *args: str, check: bool = True) -> str:
        """``ctr`` on the node's containerd, in CRI's ``k8s.io`` namespace."""
        done = subprocess.run(
            ["ctr", "-a", str(self.socket), "-n", "k8s.io", *args],
            capture_output=True,
            text=True,
            check=False,
            timeout=120,
        )
        if check and done.returncode != 0:
            raise StartError(f"ctr {' '.join(args)} failed: {done.stderr}")
        return done.stdout

    def _containerd_config(self) -> str:
        base = self.workdir / "containerd"
        cri = 'plugins."io.containerd.grpc.v1.cri"'
        return f"""version = 2
root = "{base / "root"}"
state = "{base / "state"}"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper"]
[grpc]
  address = "{self.socket}"
[ttrpc]
  address = "{self.socket}.ttrpc"
[plugins."io.containerd.internal.v1.opt"]
  path = "{base / "opt"}"
[{cri}]
  sandbox_image = "{nodeimages.PAUSE}"
  restrict_oom_score_adj = true
  disable_apparmor = true
  netns_mounts_under_state_dir = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "{free_port()}"
  enable_selinux = false
  [{cri}.containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [{cri}.containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [{cri}.containerd.runtimes.runc.options]
        SystemdCgroup = false
  [{cri}.cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "{self.workdir / "cni"}"
"""

    def _start_containerd(self) -> None:
        config = self.workdir / "containerd.toml"
        self.socket.parent.mkdir(parents=True)
        config.write_text(self._containerd_config())
        containerd = self._spawn("containerd", ["--config", str(config)], "containerd")
        try:
            wait_for(
                lambda: self.socket.exists() or not containerd.alive(),
                timeout=60,
                interval=0.1,
                what="containerd's socket",
            )
        finally:
            if not containerd.alive():
                raise StartError(f"containerd exited:\n{containerd.log_tail()}")

    def _import_images(self) -> None:
        began = time.monotonic()
        images = self.workdir / "images"
        images.mkdir()
        for tarball in (nodeimages.pause_image(images), nodeimages.busybox_image(images)):
            self.ctr("images", "import", str(tarball))
        self.images_seconds = time.monotonic() - began

    def _write_cni(self) -> None:
        conf = self.workdir / "cni"
        conf.mkdir(exist_ok=True)  # (containerd makes it to watch it)
        network = {
            "cniVersion": "0.4.0",
            "name": NETWORK,
            "plugins": [
                {
                    "type": "bridge",
                    "bridge": BRIDGE,
                    "isGateway": True,
                    "ipMasq": False,
                    "hairpinMode": True,
                    "ipam": {
                        "type": "host-local",
                        "ranges": [[{"subnet": POD_SUBNET}]],
                        "routes": [{"dst": "0.0.0.0/0"}],
                        "dataDir": str(self.workdir / "ipam"),
                    },
                },
                {"type": "portmap", "capabilities": {"portMappings": True}},
            ],
        }
        (conf / "10-starburst.conflist").write_text(json.dumps(network, indent=1))

    # -- kubelet ---------------------------------------------------------------------------
    def _kubelet_files(self, ip: str) -> tuple[Path, Path]:
        """The kubelet's kubeconfig (a client certificate of ``system:node:<NODE>``) and its
        KubeletConfiguration."""
        pki = self.workdir / "pki"
        pki.mkdir()
        cert, key = sign(
            self.kube.pki,
            pki / "kubelet-client",
            common_name=f"system:node:{NODE}",
            organizations=("system:nodes",),
        )
        serving = sign(self.kube.pki, pki / "kubelet", common_name=NODE, ips=(ip,), server=True)
        kubeconfig = self.kube.kubeconfig()
        kubeconfig["users"] = [
            {"name": "admin", "user": {"client-certificate": str(cert), "client-key": str(key)}}
        ]
        kubeconfig_path = self.workdir / "kubelet.kubeconfig"
        kubeconfig_path.write_text(json.dumps(kubeconfig))
        endpoint = f"unix://{self.socket}"
        config = {
            "apiVersion": "kubelet.config.k8s.io/v1beta1",
            "kind": "KubeletConfiguration",
            "cgroupDriver": "cgroupfs",
            "failSwapOn": False,
            "failCgroupV1": False,
            "containerRuntimeEndpoint": endpoint,
            "imageServiceEndpoint": endpoint,
            "address": ip,
            "port": free_port(),
            "readOnlyPort": 0,
            "healthzPort": 0,
            "tlsCertFile": str(serving[0]),
            "tlsPrivateKeyFile": str(serving[1]),
            "authentication": {
                "anonymous": {"enabled": False},
                "webhook": {"enabled": True},
                "x509": {"clientCAFile": str(self.kube.pki.ca_cert)},
            },
            "authorization": {"mode": "Webhook"},
            "makeIPTablesUtilChains": False,
            "podLogsDir": str(self.workdir / "pod-logs"),
            "evictionHard": {
                "memory.available": "1Mi",
                "nodefs.available": "1%",
                "imagefs.available": "1%",
                "nodefs.inodesFree": "1%",
            },
            "imageGCHighThresholdPercent": 100,
            "imageGCLowThresholdPercent": 99,
            "serializeImagePulls": False,
        }
        config_path = self.workdir / "kubelet.json"
        config_path.write_text(json.dumps(config, indent=1))
        return kubeconfig_path, config_path

    def _start_kubelet(self) -> None:
        ip = self.kube.host
        kubeconfig, config = self._kubelet_files(ip)
        self._spawn(
            "kubelet",
            [
                f"--config={config}",
                f"--kubeconfig={kubeconfig}",
                f"--root-dir={self.workdir / 'kubelet'}",
                f"--cert-dir={self.workdir / 'pki'}",
                f"--hostname-override={NODE}",
                f"--node-ip={ip}",
                "-v=1",
            ],
        )

    def _node(self) -> dict[str, Any] | None:
        try:
            node: dict[str, Any] = self.kube.request("GET", f"/api/v1/nodes/{NODE}")
            return node
        except urllib.error.HTTPError as err:
            if err.code == 404:
                return None
            raise

    def _alive(self) -> None:
        for process in self._processes:
            if not process.alive():
                raise StartError(f"{process.name} exited:\n{process.log_tail()}")

    def _wait_ready(self, timeout: float = 120.0) -> None:
        def ready() -> bool:
            self._alive()
            node = self._node()
            conditions = (node or {}).get("status", {}).get("conditions") or ()
            taints = (node or {}).get("spec", {}).get("taints") or ()
            return not taints and any(
                c["type"] == "Ready" and c["status"] == "True" for c in conditions
            )

        wait_for(ready, timeout=timeout, interval=0.2, what=f"node {NODE} to be Ready")

    def _wait_for_gpus(self, timeout: float = 60.0) -> None:
        def advertised() -> bool:
            self._alive()
            allocatable = ((self._node() or {}).get("status") or {}).get("allocatable") or {}
            return allocatable.get("nvidia.com/gpu") == str(self.gpus)

        wait_for(advertised, timeout=timeout, interval=0.2, what=f"{self.gpus} GPUs on {NODE}")

    def _proxy_args(self) -> list[str]:
        return [
            f"--kubeconfig={self.kube.admin_kubeconfig}",
            f"--hostname-override={NODE}",
            "--proxy-mode=iptables",
            f"--cluster-cidr={POD_SUBNET}",
            "--iptables-localhost-nodeports=false",
            "--conntrack-max-per-core=0",
            "--conntrack-tcp-timeout-established=0",
            "--conntrack-tcp-timeout-close-wait=0",
            f"--healthz-bind-address=127.0.0.1:{free_port()}",
            f"--metrics-bind-address=127.0.0.1:{free_port()}",
            "-v=1",
        ]

    # -- teardown --------------------------------------------------------------------------
    def _drain(self, timeout: float = 60.0) -> None:
        """Delete every pod left on the node (grace 1 s: the kubelet stops its containers and
        confirms) and wait until they are gone."""
        path = f"/api/v1/pods?fieldSelector=spec.nodeName%3D{NODE}"
        try:
            for pod in self.kube.request("GET", path)["items"]:
                meta = pod["metadata"]
                self.kube.request(
                    "DELETE",
                    f"/api/v1/namespaces/{meta['namespace']}/pods/{meta['name']}",
                    {"gracePeriodSeconds": 1},
                )
            wait_for(
                lambda: not self.kube.request("GET", path)["items"],
                timeout=timeout,
                interval=0.2,
                what=f"the pods on {NODE} to be gone",
            )
        except Exception as err:  # the host is cleaned up below all the same
            self.leftovers.append(f"drain: {err}")

    def _remove_containers(self) -> None:
        """Kill and remove what containerd still has (sandboxes the kubelet left)."""
        for task in self.ctr("tasks", "list", "-q", check=False).split():
            self.ctr("tasks", "kill", "-s", "SIGKILL", task, check=False)
        for task in self.ctr("tasks", "list", "-q", check=False).split():
            self.ctr("tasks", "delete", "-f", task, check=False)
        for container in self.ctr("containers", "list", "-q", check=False).split():
            self.ctr("containers", "delete", container, check=False)


def _skip_or_fail(reason: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"CI is set and the real node cannot run: {reason}")
    pytest.skip(reason)


def _timed_binaries() -> tuple[Path, float]:
    began = time.monotonic()
    bindir = build.binaries()
    took = time.monotonic() - began
    recorded = bindir / "BUILD_SECONDS"
    return bindir, float(recorded.read_text()) if took > 5 and recorded.exists() else took


@pytest.fixture(scope="session")
def real_node() -> Iterator[RealNode]:
    """The machine's real node in a control plane of its own (see the module), for the
    session; its one-time install and build times and its start time are printed."""
    if os.geteuid() != 0:
        _skip_or_fail("not root: containerd, the kubelet and kube-proxy need root")
    try:
        install = nodehost.install_packages()
        bindir, built = _timed_binaries()
    except (build.NoGo, nodehost.InstallError) as err:
        _skip_or_fail(str(err))
    LOCK.parent.mkdir(parents=True, exist_ok=True)
    with LOCK.open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one real node per machine (see the module)
        workdir = Path(tempfile.mkdtemp(prefix="starburst-node-"))
        began = time.monotonic()
        kube = node = None
        try:
            (workdir / "control-plane").mkdir()
            kube = RealKube(bindir, workdir / "control-plane", node_ip=node_ip())
            kube.start()
            node = RealNode(kube, bindir, workdir / "node")
            node.workdir.mkdir()
            node.start()
            timings = Timings(install, built, node.images_seconds, time.monotonic() - began)
            print(f"\nreal node: {timings.describe()}", flush=True)
            yield node
        finally:
            if node is not None:
                node.stop()
            if kube is not None:
                kube.stop()
            shutil.rmtree(workdir, ignore_errors=True)
            if node is not None and node.leftovers:
                print(f"\nreal node: not undone on the host: {node.leftovers}", flush=True)
