"""Building the real control plane's binaries once, into a cache outside the repository.

The Go module ``tests/controlplane/`` pins one Kubernetes release (``k8s.io/kubernetes`` in its
``go.mod``, every staging module replaced by its published ``v0.X.Y``) and has these commands:
``etcd`` (a few lines around ``go.etcd.io/etcd/server/v3/embed``), ``kube-apiserver``,
``kube-controller-manager`` and ``kube-scheduler``, each the upstream ``cmd/<name>/app``; for
the real node (``tests.support.realnode``) ``kubelet`` and ``kube-proxy`` (upstream too) and
``gpu-device-plugin`` (ours: fake ``nvidia.com/gpu`` devices over the device-plugin API).

``binaries()`` returns the directory holding the programs, building them when missing:
- cache key: ``~/.cache/starburst/controlplane/<k8s version>-<hash>/`` where the hash covers
  the link flags, ``go.mod``, ``go.sum`` and every ``.go`` file of the module
  (``STARBURST_CONTROLPLANE_CACHE`` overrides the parent directory); Go's own module and
  build caches stay where Go keeps them;
- concurrency: an exclusive file lock, so parallel pytest workers build once and the others
  wait and reuse; the build goes to a scratch directory renamed into place when complete, so
  a half-built cache entry is never seen;
- failure: a build error raises ``BuildError`` with Go's output (a failed test, not a skip).
  Without a Go toolchain the caller skips, except with ``CI`` set (then it fails).
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

MODULE = Path(__file__).resolve().parent.parent / "controlplane"
PROGRAMS = (
    "etcd",
    "kube-apiserver",
    "kube-controller-manager",
    "kube-scheduler",
    "kubelet",
    "kube-proxy",
    "gpu-device-plugin",
)


class BuildError(RuntimeError):
    """The control plane could not be built (the message carries Go's output)."""


class NoGo(RuntimeError):
    """No Go toolchain on this machine."""


def kubernetes_version(module: Path = MODULE) -> str:
    found = re.search(r"k8s\.io/kubernetes (v\S+)", (module / "go.mod").read_text())
    if not found:
        raise BuildError(f"{module / 'go.mod'} does not require k8s.io/kubernetes")
    return found.group(1)


def ldflags(module: Path = MODULE) -> str:
    """Small binaries (no symbol tables), reporting the pinned release as their version."""
    version = kubernetes_version(module)
    major, minor = version.lstrip("v").split(".")[:2]
    pkg = "k8s.io/component-base/version"
    return (
        f"-s -w -X {pkg}.gitVersion={version} -X {pkg}.gitMajor={major} "
        f"-X {pkg}.gitMinor={minor} -X {pkg}.gitTreeState=clean"
    )


def source_hash(module: Path = MODULE) -> str:
    digest = hashlib.sha256(ldflags(module).encode())
    files = [module / "go.mod", module / "go.sum", *sorted(module.rglob("*.go"))]
    for path in files:
        digest.update(str(path.relative_to(module)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:12]


def cache_root() -> Path:
    configured = os.environ.get("STARBURST_CONTROLPLANE_CACHE")
    if configured:
        return Path(configured)
    return Path.home() / ".cache" / "starburst" / "controlplane"


def find_go() -> str:
    for candidate in (shutil.which("go"), "/usr/local/go/bin/go", "/usr/lib/go/bin/go"):
        if candidate and Path(candidate).is_file():
            return candidate
    raise NoGo(
        "no Go toolchain found (go on PATH, /usr/local/go/bin/go): the real "
        "control plane is built from source with it"
    )


def binaries(module: Path = MODULE, log: bool = True) -> Path:
    """The directory holding the built programs (built first when the cache lacks them)."""
    target = cache_root() / f"{kubernetes_version(module)}-{source_hash(module)}"
    if _complete(target):
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.parent / f"{target.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # other workers wait here while one builds
        if not _complete(target):
            _build(module, target, log)
    return target


def _complete(target: Path) -> bool:
    return all((target / name).is_file() for name in PROGRAMS)


def _build(module: Path, target: Path, log: bool) -> None:
    go = find_go()
    scratch = target.with_name(target.name + ".building")
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir(parents=True)
    env = {
        **os.environ,
        "GOTOOLCHAIN": "local",
        "GOFLAGS": "-buildvcs=false -mod=readonly",
        "CGO_ENABLED": "0",
    }
    flags = f"-ldflags={ldflags(module)}"
    command = [go, "build", "-trimpath", flags, "-o", str(scratch), "./cmd/..."]
    if log:
        print(
            f"\nbuilding the real control plane ({kubernetes_version(module)}) into {target}:"
            " a cold build takes minutes, later runs reuse it",
            flush=True,
        )
    began = time.monotonic()
    done = subprocess.run(command, cwd=module, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        shutil.rmtree(scratch, ignore_errors=True)
        raise BuildError(
            f"`{' '.join(command)}` in {module} failed "
            f"(exit {done.returncode}):\n{done.stdout}{done.stderr}"
        )
    (scratch / "BUILD_SECONDS").write_text(f"{time.monotonic() - began:.1f}\n")
    shutil.rmtree(target, ignore_errors=True)
    scratch.rename(target)
