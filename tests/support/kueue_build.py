"""Building Kueue's manager once, into a cache outside the repository, and finding its CRDs.

Kueue is the published Go module ``sigs.k8s.io/kueue`` at one pinned version (``VERSION``,
checked against its go.sum line ``SUM``). Unlike the control plane (``controlplane_build``),
there is no source of ours to hash: the module's own go.mod/go.sum pin every dependency, so
the build runs *inside* the module as Go downloaded it (``go mod download -json`` names the
directory, read-only in Go's module cache) and the result is identified by what it was built
from, which the Go linker records in the binary itself (``go version -m``: the main package
``sigs.k8s.io/kueue/cmd/kueue``, the module version and its ``h1:`` sum).

``manager()`` returns the path of the built ``kueue`` program, building it when missing:
- cache: ``~/.cache/starburst/kueue/<version>-<hash>/kueue`` where the hash covers the
  version, the module sum and the build flags (``STARBURST_KUEUE_CACHE`` overrides the parent
  directory). An entry is used only if the binary's embedded build information names the
  pinned module and sum, so an entry under another hash (an earlier helper's layout, same
  module) is adopted rather than built again: a cold build takes ~25 minutes on 2 cores;
- concurrency: an exclusive file lock next to the entry, so parallel pytest workers build
  once and the others wait; the build goes to a scratch directory renamed into place;
- failure: ``BuildError`` with Go's output; no Go toolchain raises ``NoGo`` (the caller skips,
  except with ``CI`` set).

``crd_files()`` lists the CRDs of ``config/components/crd/bases`` in that same module
directory: the bases only, without the kustomize patches that point the CRDs' conversion at a
webhook Service (the tests use one API version, the storage version ``v1beta2``, so the API
server's ``None`` conversion is exact).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import time
from pathlib import Path

from tests.support.controlplane_build import BuildError, NoGo, find_go

MODULE = "sigs.k8s.io/kueue"
VERSION = "v0.17.0"
SUM = "h1:7hzb38M4eKGzYW+CFv2s1L+swzzacUCHOCXxZmAV90I="
PACKAGE = "./cmd/kueue"
LDFLAGS = "-s -w"

__all__ = ["BuildError", "NoGo", "crd_files", "manager", "module_dir"]


def cache_root() -> Path:
    configured = os.environ.get("STARBURST_KUEUE_CACHE")
    if configured:
        return Path(configured)
    return Path.home() / ".cache" / "starburst" / "kueue"


def cache_key() -> str:
    digest = hashlib.sha256(f"{MODULE}@{VERSION} {SUM} {PACKAGE} {LDFLAGS}".encode())
    return f"{VERSION}-{digest.hexdigest()[:12]}"


def _go_env() -> dict[str, str]:
    return {
        **os.environ,
        "GOTOOLCHAIN": "local",
        "GOFLAGS": "-buildvcs=false -mod=readonly",
        "CGO_ENABLED": "0",
    }


def module_dir() -> Path:
    """Where Go keeps the pinned module's source (downloading it through the proxy if need
    be); the download is checked against ``SUM``."""
    go = find_go()
    done = subprocess.run(
        [go, "mod", "download", "-json", f"{MODULE}@{VERSION}"],
        env={**_go_env(), "GOFLAGS": "-mod=mod"},
        capture_output=True,
        text=True,
        check=False,
        cwd=Path.home(),
    )
    if done.returncode != 0:
        raise BuildError(f"go mod download {MODULE}@{VERSION} failed:\n{done.stdout}{done.stderr}")
    info = json.loads(done.stdout)
    if info.get("Sum") != SUM:
        raise BuildError(f"{MODULE}@{VERSION} has sum {info.get('Sum')}, pinned {SUM}")
    return Path(info["Dir"])


def crd_files() -> list[Path]:
    return sorted((module_dir() / "config" / "components" / "crd" / "bases").glob("*.yaml"))


def built_from_pinned_module(binary: Path) -> bool:
    """Whether ``binary`` is Kueue's manager built from the pinned module (its embedded
    build information, read by ``go version -m``)."""
    if not binary.is_file():
        return False
    done = subprocess.run(
        [find_go(), "version", "-m", str(binary)], capture_output=True, text=True, check=False
    )
    lines = {tuple(line.split()) for line in done.stdout.splitlines()}
    return ("path", f"{MODULE}/cmd/kueue") in lines and ("mod", MODULE, VERSION, SUM) in lines


def manager(log: bool = True) -> Path:
    """The path of the built ``kueue`` program (built first when no cache entry has it)."""
    root = cache_root()
    target = root / cache_key()
    for entry in (target, *sorted(root.glob(f"{VERSION}-*"))):
        if entry.is_dir() and built_from_pinned_module(entry / "kueue"):
            return entry / "kueue"
    root.mkdir(parents=True, exist_ok=True)
    with open(root / f"{target.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # other workers wait here while one builds
        if not built_from_pinned_module(target / "kueue"):
            _build(target, log)
    return target / "kueue"


def _build(target: Path, log: bool) -> None:
    go = find_go()
    source = module_dir()
    scratch = target.with_name(target.name + ".building")
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir(parents=True)
    command = [go, "build", "-trimpath", f"-ldflags={LDFLAGS}", "-o", str(scratch / "kueue")]
    command.append(PACKAGE)
    if log:
        print(
            f"\nbuilding Kueue's manager ({MODULE}@{VERSION}) into {target}: a cold build"
            " takes many minutes, later runs reuse it",
            flush=True,
        )
    began = time.monotonic()
    done = subprocess.run(
        command, cwd=source, env=_go_env(), capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        shutil.rmtree(scratch, ignore_errors=True)
        raise BuildError(
            f"`{' '.join(command)}` in {source} failed (exit {done.returncode}):\n"
            f"{done.stdout}{done.stderr}"
        )
    (scratch / "BUILD_SECONDS").write_text(f"{time.monotonic() - began:.1f}\n")
    shutil.rmtree(target, ignore_errors=True)
    scratch.rename(target)
