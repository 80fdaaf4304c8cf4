"""Starburst's container image, built for real here from Debian packages, offline.

``product_image_archive()`` returns an OCI archive (a tarred OCI image layout) of the image
``deploy/Dockerfile`` builds, named ``IMAGE_REF`` (what the Helm chart's default
``image.repository``/``tag`` resolve to), building what is missing in three cached steps:
1. **base** (``base_image_archive()``): ``debootstrap --variant=minbase`` of Debian
   ``bookworm`` with ``python3`` and ``python3-venv`` from the Debian mirror apt is configured
   with, trimmed (apt lists and caches, manuals, locales, docs but their copyright files) and
   committed by ``buildah`` as a one-layer image; the rootfs's Python describes the target
   interpreter (its PEP 508 marker environment and glibc) for step 2;
2. **wheelhouse** (``tests.support.image_wheels``): ``uv export --frozen`` of ``uv.lock`` for
   the Dockerfile's ``EXTRAS``, narrowed to that interpreter, then ``pip download`` of exactly
   those wheels (their hashes checked);
3. **product**: the project's own wheel (``uv build`` from a copy of the sources, its hot
   modules compiled and the migrations packed in as a user's install builds it, ``setup.py``)
   and the wheelhouse form the build context of ``buildah bud --isolation chroot
   -f deploy/Dockerfile --build-arg BASE_IMAGE=oci-archive:<base>``: no network inside the
   build, and no OCI runtime to install (buildah's default runc isolation works here too, as
   buildah asks runc for no ``oom_score_adj``; containerd's CRI did, hence its
   ``restrict_oom_score_adj``).

Invariants:
- cache: ``~/.cache/starburst/images/<step>-<hash of the step's inputs>/image.tar``
  (``STARBURST_IMAGE_CACHE`` overrides the directory); the product's hash covers the base's
  and the wheelhouse's keys, the Dockerfile, ``pyproject.toml``, ``setup.py``, ``uv.lock``
  and every file of ``starburst/`` and ``migrations/``. The ``KEEP`` newest used products and
  wheelhouses stay;
- concurrency: one exclusive file lock for the whole cache, so parallel workers (and
  worktrees) build once and the others wait and reuse; each step builds into a scratch
  directory renamed into place when complete, so a half-built entry is never seen;
- buildah works in a storage of its own under the scratch directory, removed afterwards:
  nothing is left in ``/var/lib/containers``; the checkout is never written to;
- tools: ``buildah`` and ``debootstrap`` are installed with ``apt-get`` when missing and the
  tests run as root (``--no-install-recommends``: no runc is needed). Without root, apt or
  ``uv``, ``NoImageTools`` says why (callers skip, or fail under ``CI``); a failed step raises
  ``ImageBuildError`` with the tool's output.

Loading the archive into a containerd: ``ctr -n k8s.io images import <archive>`` (the index
carries ``io.containerd.image.name``, so no ``--base-name`` is needed).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import shutil
import tarfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from starburst import __version__
from tests.support import image_wheels
from tests.support.image_tools import Buildah, ImageBuildError, building, ensure_tools, run
from tests.support.wheel import SOURCES, build_wheel

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "deploy" / "Dockerfile"
#: the name the chart's default values pull (``image.repository: starburst``, tag = version)
IMAGE_REF = f"docker.io/library/starburst:{__version__}"
SUITE = "bookworm"
BASE_PACKAGES = ("python3", "python3-venv")
#: what the base's rootfs loses before it is committed (paths relative to the rootfs)
TRIMMED = (
    "var/cache/apt",
    "var/lib/apt/lists",
    "usr/share/man",
    "usr/share/info",
    "usr/share/locale",
    "dev",
)
#: how many product images (and wheelhouses) the cache keeps, the newest used first
KEEP = 3
APT_SOURCES = Path("/etc/apt/sources.list")
PATH_ENV = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def cache_root() -> Path:
    configured = os.environ.get("STARBURST_IMAGE_CACHE")
    if configured:
        return Path(configured)
    return Path.home() / ".cache" / "starburst" / "images"


def product_image_archive(*, log: bool = True) -> Path:
    """The OCI archive of the product image (built first when the cache lacks it)."""
    with _cache_lock():
        uv = ensure_tools()
        base = _base(log=log)
        wheels = image_wheels.wheelhouse(
            uv=uv, environment=base.environment, cache=cache_root(),
            extras=dockerfile_extras(), log=log,
        )  # fmt: skip
        target = cache_root() / f"product-{_product_key(base, wheels)}"
        if not (target / "image.tar").is_file():
            _build_product(uv=uv, base=base, wheels=wheels, target=target, log=log)
        for used in (wheels.directory, target):
            os.utime(used)  # the newest used are the ones pruning keeps
            _prune(keep=used)
    return target / "image.tar"


def base_image_archive(*, log: bool = True) -> Path:
    """The OCI archive of the Debian base with Python (built first when missing)."""
    with _cache_lock():
        ensure_tools()
        return _base(log=log).archive


def debian_image_archive(
    kind: str,
    ref: str,
    packages: tuple[str, ...],
    *,
    prepare: Callable[[Path], None] | None = None,
    recipe: str = "",
    log: bool = True,
) -> Path:
    """An OCI archive of Debian ``SUITE`` (``minbase``) with ``packages``, named ``ref`` for
    ``ctr images import``, cached as ``<kind>-<hash of the recipe>`` (built first when
    missing; the time it took in ``BUILD_SECONDS``). ``prepare(rootfs)`` adds what Debian
    packages do not (``recipe`` names it in the cache key)."""
    with _cache_lock():
        ensure_tools()
        mirror = debian_mirror()
        parts: list[object] = [SUITE, packages, TRIMMED, PATH_ENV, mirror, "minbase", ref]
        if recipe:  # (an image without one keeps the key it had before recipes existed)
            parts.append(recipe)
        key = json.dumps(parts)
        target = cache_root() / f"{kind}-{hashlib.sha256(key.encode()).hexdigest()[:12]}"
        if not (target / "image.tar").is_file():
            _build_debian(
                ref=ref, packages=packages, prepare=prepare, mirror=mirror, target=target, log=log
            )
    return target / "image.tar"


def _build_debian(
    *,
    ref: str,
    packages: tuple[str, ...],
    prepare: Callable[[Path], None] | None,
    mirror: str,
    target: Path,
    log: bool,
) -> None:
    _say(log, f"debootstrapping Debian {SUITE} with {', '.join(packages)} as {ref}")
    began = time.monotonic()
    with building(target) as scratch:
        rootfs = scratch / "rootfs"
        run(["debootstrap", "--variant=minbase", f"--include={','.join(packages)}",
             SUITE, str(rootfs), mirror])  # fmt: skip
        if prepare is not None:
            prepare(rootfs)
        _trim(rootfs)
        layout = scratch / "layout"
        _commit_rootfs(rootfs, archive=None, layout=layout, workdir=scratch / "buildah")
        _remove(rootfs)
        _name_for_containerd(layout, ref)
        with tarfile.open(scratch / "image.tar", "w") as archive:
            for member in sorted(layout.iterdir()):
                archive.add(member, arcname=member.name)
        _remove(layout)
        (scratch / "BUILD_SECONDS").write_text(f"{time.monotonic() - began:.1f}\n")


def dockerfile_extras() -> tuple[str, ...]:
    """The extras the Dockerfile installs (its ``ARG EXTRAS=`` default)."""
    found = re.search(r"^ARG EXTRAS=([\w,]+)$", DOCKERFILE.read_text(), flags=re.M)
    if found is None:
        raise ImageBuildError(f"{DOCKERFILE} declares no ARG EXTRAS=...")
    return tuple(found.group(1).split(","))


@dataclass(frozen=True)
class Base:
    """A built base image: its archive, cache key and the interpreter it carries."""

    archive: Path
    key: str
    #: PEP 508 marker environment of the base's ``python3``, plus ``glibc`` ("2.36")
    environment: dict[str, str]


@contextmanager
def _cache_lock() -> Iterator[None]:
    root = cache_root()
    root.mkdir(parents=True, exist_ok=True)
    with open(root / "build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # other workers wait here while one builds
        yield


# --- step 1: the base ----------------------------------------------------------------------


def debian_mirror() -> str:
    """The Debian archive apt is configured with (deb822 ``.sources`` or ``sources.list``)."""
    files = [*sorted(Path("/etc/apt/sources.list.d").glob("*.sources")), APT_SOURCES]
    texts = [p.read_text() for p in files if p.is_file()]
    for text in texts:
        for uri in re.findall(r"^URIs:\s*(\S+)", text, flags=re.M) + re.findall(
            r"^deb\s+(?:\[[^]]*\]\s+)?(\S+)\s+\S+", text, flags=re.M
        ):
            if re.search(r"/debian/?$", uri):
                return uri.rstrip("/")
    return "http://deb.debian.org/debian"


def _base_key(mirror: str) -> str:
    recipe = json.dumps([SUITE, BASE_PACKAGES, TRIMMED, PATH_ENV, mirror, "minbase"])
    return hashlib.sha256(recipe.encode()).hexdigest()[:12]


def _base(*, log: bool) -> Base:
    mirror = debian_mirror()
    key = _base_key(mirror)
    target = cache_root() / f"base-{key}"
    if not (target / "image.tar").is_file():
        _build_base(mirror=mirror, target=target, log=log)
    environment = json.loads((target / "environment.json").read_text())
    return Base(archive=target / "image.tar", key=key, environment=environment)


#: run by the base's own python3: its PEP 508 marker environment and its glibc version
_ENVIRONMENT = """
import json, os, platform, sys
impl = sys.implementation
print(json.dumps({
    "implementation_name": impl.name,
    "implementation_version": "%d.%d.%d" % impl.version[:3],
    "os_name": os.name,
    "platform_machine": platform.machine(),
    "platform_python_implementation": platform.python_implementation(),
    "platform_system": platform.system(),
    "python_full_version": platform.python_version(),
    "python_version": "%d.%d" % sys.version_info[:2],
    "sys_platform": sys.platform,
    "glibc": platform.libc_ver()[1],
}))
"""


def _build_base(*, mirror: str, target: Path, log: bool) -> None:
    _say(log, f"debootstrapping Debian {SUITE} with {', '.join(BASE_PACKAGES)} from {mirror}")
    began = time.monotonic()
    with building(target) as scratch:
        rootfs = scratch / "rootfs"
        run(["debootstrap", "--variant=minbase", f"--include={','.join(BASE_PACKAGES)}",
             SUITE, str(rootfs), mirror])  # fmt: skip
        (scratch / "DEBOOTSTRAP_SECONDS").write_text(f"{time.monotonic() - began:.1f}\n")
        environment = run(["chroot", str(rootfs), "python3", "-c", _ENVIRONMENT]).stdout
        (scratch / "environment.json").write_text(environment)
        _trim(rootfs)
        _commit_rootfs(rootfs, archive=scratch / "image.tar", workdir=scratch / "buildah")
        _remove(rootfs)
        (scratch / "BUILD_SECONDS").write_text(f"{time.monotonic() - began:.1f}\n")


def _trim(rootfs: Path) -> None:
    for relative in TRIMMED:
        for child in (rootfs / relative).glob("*"):
            _remove(child)
    for doc in (rootfs / "usr/share/doc").rglob("*"):
        if doc.is_file() and doc.name != "copyright":
            doc.unlink()


def _commit_rootfs(
    rootfs: Path, *, archive: Path | None, workdir: Path, layout: Path | None = None
) -> None:
    """The rootfs as a one-layer image, written to ``archive`` (an OCI archive) or else to
    ``layout`` (an OCI image layout directory)."""
    buildah = Buildah(workdir)
    try:
        container = buildah("from", "scratch")
        mounted = buildah("mount", container)
        run(["cp", "-a", f"{rootfs}/.", f"{mounted}/"])
        buildah("umount", container)
        buildah("config", "--env", PATH_ENV, "--env", "LANG=C.UTF-8", "--cmd", "/bin/bash",
                container)  # fmt: skip
        where = f"oci-archive:{archive}" if archive is not None else f"oci:{layout}"
        buildah("commit", "--rm", container, f"{where}:starburst-base:{SUITE}")
    finally:
        buildah.remove()


# --- step 3: the product -------------------------------------------------------------------


def _source_files() -> list[Path]:
    files = [DOCKERFILE, *(ROOT / name for name in SOURCES), ROOT / "uv.lock"]
    for tree in (ROOT / "starburst", ROOT / "migrations"):
        files += sorted(
            p for p in tree.rglob("*")
            if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"
        )  # fmt: skip
    return files


def _product_key(base: Base, wheels: image_wheels.Wheelhouse) -> str:
    digest = hashlib.sha256(f"{base.key}\0{wheels.key}\0{IMAGE_REF}".encode())
    for path in _source_files():
        digest.update(str(path.relative_to(ROOT)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:12]


def _build_product(
    *, uv: str, base: Base, wheels: image_wheels.Wheelhouse, target: Path, log: bool
) -> None:
    _say(log, f"building the image {IMAGE_REF} into {target} (buildah, offline)")
    began = time.monotonic()
    with building(target) as scratch:
        context = _context(uv=uv, wheels=wheels, scratch=scratch)
        layout = scratch / "layout"
        buildah = Buildah(scratch / "buildah")
        tag = f"localhost/starburst-build:{target.name}"
        try:
            buildah("bud", "--isolation", "chroot", "--quiet", "-f", str(DOCKERFILE),
                    "--build-arg", f"BASE_IMAGE=oci-archive:{base.archive}", "-t", tag,
                    str(context))  # fmt: skip
            buildah("push", "--quiet", tag, f"oci:{layout}:{__version__}")
        finally:
            buildah.remove()
        _name_for_containerd(layout, IMAGE_REF)
        with tarfile.open(scratch / "image.tar", "w") as archive:
            for member in sorted(layout.iterdir()):
                archive.add(member, arcname=member.name)
        for path in (context, layout):
            _remove(path)
        (scratch / "BUILD_SECONDS").write_text(f"{time.monotonic() - began:.1f}\n")


def _context(*, uv: str, wheels: image_wheels.Wheelhouse, scratch: Path) -> Path:
    """The build context: ``wheelhouse/`` (the locked wheels, linked, and the project's wheel,
    built from a copy of the sources as a user's install builds it, ``tests.support.wheel``),
    as the Dockerfile expects."""
    context = scratch / "context"
    source = scratch / "source"
    try:
        build_wheel(uv, source, context / "wheelhouse")
    except RuntimeError as exc:
        raise ImageBuildError(str(exc)) from None
    for wheel in wheels.files():
        os.link(wheel, context / "wheelhouse" / wheel.name)
    _remove(source)
    return context


def _name_for_containerd(layout: Path, ref: str) -> None:
    """Name the image in the index as containerd's import reads it (the OCI ref name alone
    is a bare tag, which ``ctr images import`` would prefix with ``import-<date>``)."""
    index_path = layout / "index.json"
    index = json.loads(index_path.read_text())
    for manifest in index["manifests"]:
        manifest.setdefault("annotations", {})["io.containerd.image.name"] = ref
    index_path.write_text(json.dumps(index))


def _prune(*, keep: Path) -> None:
    """Keep the newest ``KEEP`` entries of ``keep``'s kind (``product-``, ``wheelhouse-``)."""
    kind = keep.name.split("-")[0]
    entries = sorted(
        (p for p in cache_root().glob(f"{kind}-*") if p.is_dir() and p.suffix != ".building"),
        key=lambda p: (p == keep, p.stat().st_mtime),
        reverse=True,
    )
    for old in entries[KEEP:]:
        _remove(old)


# --- cache entries -------------------------------------------------------------------------


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def _say(log: bool, message: str) -> None:
    if log:
        print(f"\n{message}: a cold build takes minutes, later runs reuse it", flush=True)
