"""The host under the real node: what it needs installed, and leaving it as it was.

A kubelet, containerd and kube-proxy change the machine beyond their own directories (the
``Footprint``): some paths are fixed (``/var/lib/kubelet/device-plugins``,
``/var/log/containers``, ``/var/lib/cni``, ``/run/containerd`` for the shims' sockets and
runc's state), the kubelet makes a ``/kubepods`` cgroup tree in every hierarchy and sets
kernel tunables (``vm.overcommit_memory``, ``kernel.panic``, ...), the bridge CNI plugin makes
a bridge and turns on ``ip_forward``, kube-proxy and the CNI plugins add iptables chains, and
containerd mounts (rootfs overlays, network namespaces, shm) and starts shims that outlive it.

- ``install_packages()``: Debian's ``containerd``, ``runc``, ``containernetworking-plugins``,
  ``iptables``, ``conntrack``, ``busybox-static`` and ``gcc`` when missing (root, ``apt-get``,
  once per machine under a file lock, as ``tests.support.browser`` installs Chromium); returns
  the seconds it took (0 when nothing was missing).
- ``HostState.capture(...)`` before the node starts; ``restore(...)`` after its programs
  stopped removes what the node added and only that: the kubelet's and containerd's paths
  that did not exist, the node's network's entries in CNI's cache (``/var/lib/cni``, shared
  with podman), kube-proxy's ``KUBE-*`` chains that did not exist (and the rules jumping to
  them), the node's bridge and its veths, mounts under the node's directories, the shims of
  the node's containerd (found by its socket in their command line), the ``kubepods``
  cgroups, and the tunables' old values (``ip_forward`` stays on if another network appeared
  meanwhile, as podman's bridge: it may need it). It returns what it could not undo or left
  on purpose (an empty list is a clean host).

Other programs on the machine use some of the same things (podman's CNI bridge, cache and
``CNI-*`` chains): nothing of theirs is touched.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

LOCK = Path.home() / ".cache" / "starburst" / "realnode-install.lock"
#: Debian package -> a file it installs (present: nothing to install)
PACKAGES = {
    "containerd": "/usr/bin/containerd",
    "runc": "/usr/sbin/runc",
    "containernetworking-plugins": "/usr/lib/cni/bridge",
    "iptables": "/usr/sbin/iptables",
    "conntrack": "/usr/sbin/conntrack",
    "busybox-static": "/bin/busybox",
    "gcc": "/usr/bin/gcc",
    # SkyPilot's command runner copies files into its pods with rsync through kubectl exec
    "rsync": "/usr/bin/rsync",
}
#: paths only a kubelet and containerd use (only the node runs them on these machines)
FIXED_PATHS = (
    "/var/lib/kubelet",
    "/var/log/containers",
    "/var/log/pods",
    "/run/containerd",
    "/opt/containerd",
)
#: CNI's result cache, shared with other CNI users (podman): only the node's network's files
CNI_CACHE = Path("/var/lib/cni")
SYSCTLS = (
    "net/ipv4/ip_forward",
    "net/ipv4/conf/all/route_localnet",
    "vm/overcommit_memory",
    "vm/panic_on_oom",
    "kernel/panic",
    "kernel/panic_on_oops",
    "kernel/keys/root_maxkeys",
    "kernel/keys/root_maxbytes",
    "net/bridge/bridge-nf-call-iptables",
)
CGROUPS = Path("/sys/fs/cgroup")
TABLES = ("filter", "nat", "mangle")
#: kube-proxy's chains (the node's CNI plugins add none: no pod asks for a host port, and
#: ``CNI-*`` chains may be another CNI user's, such as podman's firewall plugin)
OURS = ("KUBE-",)


class InstallError(RuntimeError):
    """The node's packages could not be installed (the message says why)."""


def missing_packages() -> list[str]:
    return [name for name, path in PACKAGES.items() if not Path(path).exists()]


def install_packages() -> float:
    """Install the missing packages (see the module); the seconds it took."""
    if not missing_packages():
        return 0.0
    if os.geteuid() != 0:
        raise InstallError(
            f"not root, so `apt-get install {' '.join(missing_packages())}` cannot run"
        )
    if shutil.which("apt-get") is None:
        raise InstallError("no apt-get on this machine")
    LOCK.parent.mkdir(parents=True, exist_ok=True)
    began = time.monotonic()
    with LOCK.open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        wanted = missing_packages()
        if not wanted:
            return 0.0
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        wait = ["-o", "DPkg::Lock::Timeout=900"]  # another apt-get may be running
        for command in (
            ["apt-get", *wait, "update", "-qq"],
            ["apt-get", *wait, "install", "-y", "-qq", "--no-install-recommends", *wanted],
        ):
            done = subprocess.run(
                command, capture_output=True, text=True, env=env, check=False, timeout=1800
            )
            if done.returncode != 0:
                raise InstallError(
                    f"{' '.join(command)} failed: {(done.stderr or done.stdout)[-800:]}"
                )
    if missing_packages():
        raise InstallError(f"still missing after apt-get install: {missing_packages()}")
    return time.monotonic() - began


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def _chains(table: str) -> set[str]:
    done = subprocess.run(
        ["iptables", "-t", table, "-S"], capture_output=True, text=True, check=False
    )
    return {line.split()[1] for line in done.stdout.splitlines() if line.startswith("-N ")}


def _mounts_under(prefixes: tuple[str, ...]) -> list[str]:
    points = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        point = line.split()[4].replace("\\040", " ")
        if point.startswith(prefixes):
            points.append(point)
    return sorted(points, key=len, reverse=True)  # deepest first


@dataclass
class HostState:
    existing_paths: set[str]
    sysctls: dict[str, str]
    chains: dict[str, set[str]]
    cgroups: set[Path]
    links: set[str] = field(default_factory=set)

    @classmethod
    def capture(cls) -> HostState:
        return cls(
            existing_paths={p for p in (*FIXED_PATHS, str(CNI_CACHE)) if os.path.lexists(p)},
            sysctls={k: v for k in SYSCTLS if (v := _read(Path("/proc/sys") / k)) is not None},
            chains={t: _chains(t) for t in TABLES},
            cgroups={p for p in CGROUPS.glob("*/kubepods")},
            links=set(os.listdir("/sys/class/net")),
        )

    def restore(
        self, *, directories: tuple[Path, ...], socket: Path, bridge: str, network: str
    ) -> list[str]:
        """Undo the node's footprint (see the module); what could not be undone."""
        _kill_shims(socket)
        _remove_cni_cache(network, existed="/var/lib/cni" in self.existing_paths)
        left = _unmount((*(str(d) for d in directories), "/run/containerd", "/var/lib/kubelet"))
        left += self._remove_links(bridge)
        for table in TABLES:
            left += _remove_chains(table, _chains(table) - self.chains[table])
        for hierarchy in CGROUPS.glob("*/kubepods"):
            if hierarchy not in self.cgroups:
                left += _remove_cgroup(hierarchy)
        left += self._restore_sysctls(bridge)
        for fixed in FIXED_PATHS:
            if fixed not in self.existing_paths and os.path.lexists(fixed):
                shutil.rmtree(fixed, ignore_errors=True)
                if os.path.lexists(fixed):
                    left.append(f"path {fixed}")
        for directory in directories:
            shutil.rmtree(directory, ignore_errors=True)
        return left

    def _remove_links(self, bridge: str) -> list[str]:
        if bridge not in self.links and Path("/sys/class/net", bridge).exists():
            # the pods' veths go with their network namespaces, in the kernel's own time
            for port in os.listdir(Path("/sys/class/net", bridge, "brif")):
                subprocess.run(["ip", "link", "delete", port], capture_output=True, check=False)
            subprocess.run(["ip", "link", "delete", bridge], capture_output=True, check=False)
        return [f"link {bridge}"] if Path("/sys/class/net", bridge).exists() else []

    def _restore_sysctls(self, bridge: str) -> list[str]:
        left = []
        others = set(os.listdir("/sys/class/net")) - self.links - {bridge}
        for key, value in self.sysctls.items():
            path = Path("/proc/sys") / key
            if key == "net/ipv4/ip_forward" and others:
                # a network made meanwhile (podman's bridge) may need forwarding now
                left.append(f"sysctl {key} left on: new links {sorted(others)}")
                continue
            if _read(path) != value:
                try:
                    path.write_text(value)
                except OSError as err:
                    left.append(f"sysctl {key}: {err}")
        return left


def _unmount(roots: tuple[str, ...]) -> list[str]:
    for point in _mounts_under(roots):
        if subprocess.run(["umount", point], capture_output=True, check=False).returncode:
            subprocess.run(["umount", "-l", point], capture_output=True, check=False)
    return [f"mount {p}" for p in _mounts_under(roots)]


def _remove_cni_cache(network: str, *, existed: bool) -> None:
    """The node's network's entries in CNI's result cache; the cache itself if the node made
    it and nobody else put anything there."""
    for entry in (CNI_CACHE / "results").glob(f"{network}-*"):
        entry.unlink(missing_ok=True)
    if not existed:
        for directory in sorted(CNI_CACHE.glob("**/"), key=lambda p: len(p.parts), reverse=True):
            with contextlib.suppress(OSError):
                directory.rmdir()  # only when empty


def _kill_shims(socket: Path) -> None:
    """SIGKILL the containerd shims (and so their containers) of the node's containerd: a
    shim is its own session, so it outlives the containerd that started it."""
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if argv and argv[0].endswith(b"containerd-shim-runc-v2") and str(socket).encode() in argv:
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(proc.name), signal.SIGKILL)


def _remove_chains(table: str, chains: set[str]) -> list[str]:
    chains = {c for c in chains if c.startswith(OURS)}
    if not chains:
        return []
    rules = subprocess.run(
        ["iptables", "-t", table, "-S"], capture_output=True, text=True, check=False
    ).stdout.splitlines()
    for rule in rules:
        words = rule.split()
        if words[:1] == ["-A"] and any(w in chains for w in words):
            subprocess.run(
                ["iptables", "-t", table, "-D", *words[1:]], capture_output=True, check=False
            )
    for chain in chains:
        subprocess.run(["iptables", "-t", table, "-F", chain], capture_output=True, check=False)
    for chain in chains:
        subprocess.run(["iptables", "-t", table, "-X", chain], capture_output=True, check=False)
    return [f"iptables -t {table} chain {c}" for c in chains & _chains(table)]


def _remove_cgroup(root: Path) -> list[str]:
    """rmdir a cgroup tree, deepest first (a cgroup with processes cannot go: reported)."""
    for _attempt in range(20):
        for path in sorted(root.rglob("*"), key=lambda p: len(p.parts), reverse=True):
            if path.is_dir():
                with contextlib.suppress(OSError):
                    path.rmdir()
        try:
            root.rmdir()
            return []
        except OSError:
            time.sleep(0.25)  # processes killed a moment ago are still leaving
    return [f"cgroup {root}"]
