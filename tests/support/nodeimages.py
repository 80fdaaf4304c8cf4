"""The real node's container images, built here: no container registry is reachable.

- ``pause``: the sandbox image every pod starts with, from the pinned Kubernetes release's own
  ``build/pause/linux/pause.c`` (in Go's module cache), compiled with ``gcc -static``;
- ``busybox``: Debian's ``busybox-static`` with a link per applet in ``/bin`` (``sh``,
  ``echo``, ``sleep``, ``env``, ``nc``, ...), for the test pods.

Each is written as an OCI image layout tarball (one uncompressed layer, a config, a manifest,
``index.json``) that ``ctr -n k8s.io images import`` loads under its name (``PAUSE``,
``BUSYBOX``; the ``starburst.local`` registry does not exist, and with the image present the
kubelet never pulls). The layers are reproducible: every file owned by root, mtime 0.

Invariants: nothing is downloaded; a missing compiler or ``busybox-static`` raises
``ImageError`` with what is missing.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import subprocess
import tarfile
from pathlib import Path
from typing import Any

from tests.support import controlplane_build as build

PAUSE = "starburst.local/pause:3.10"
BUSYBOX = "starburst.local/busybox:1"
BUSYBOX_BINARY = Path("/bin/busybox")


class ImageError(RuntimeError):
    """An image could not be built (the message says what is missing)."""


def _module_file(relative: str) -> Path:
    """A file of the pinned ``k8s.io/kubernetes`` module, from Go's module cache."""
    go = build.find_go()
    env = {**os.environ, "GOTOOLCHAIN": "local", "GOFLAGS": "-mod=readonly"}
    done = subprocess.run(
        [go, "mod", "download", "-json", f"k8s.io/kubernetes@{build.kubernetes_version()}"],
        cwd=build.MODULE,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise ImageError(f"go mod download k8s.io/kubernetes failed:\n{done.stdout}{done.stderr}")
    return Path(json.loads(done.stdout)["Dir"]) / relative


def _entry(
    name: str, *, mode: int, kind: bytes = tarfile.REGTYPE, link: str = ""
) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.mode, info.type, info.linkname, info.mtime = mode, kind, link, 0
    return info


def _layer(files: dict[str, bytes], links: dict[str, str], dirs: tuple[str, ...]) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name in dirs:
            tar.addfile(_entry(name, mode=0o1777 if name == "tmp" else 0o755, kind=tarfile.DIRTYPE))
        for name, data in sorted(files.items()):
            info = _entry(name, mode=0o755)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        for name, target in sorted(links.items()):
            tar.addfile(_entry(name, mode=0o777, kind=tarfile.SYMTYPE, link=target))
    return out.getvalue()


def write_oci_tarball(path: Path, *, name: str, layer: bytes, config: dict[str, Any]) -> Path:
    """An OCI image layout with one layer, as a tarball ``ctr images import`` reads."""
    blobs: dict[str, bytes] = {}

    def blob(data: bytes, media_type: str) -> dict[str, object]:
        digest = "sha256:" + hashlib.sha256(data).hexdigest()
        blobs[digest] = data
        return {"mediaType": media_type, "digest": digest, "size": len(data)}

    layer_desc = blob(layer, "application/vnd.oci.image.layer.v1.tar")
    image_config = {
        "architecture": "amd64",
        "os": "linux",
        "config": config,
        "rootfs": {"type": "layers", "diff_ids": [layer_desc["digest"]]},
    }
    config_desc = blob(
        json.dumps(image_config).encode(), "application/vnd.oci.image.config.v1+json"
    )
    manifest = {
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": config_desc,
        "layers": [layer_desc],
    }
    manifest_desc = blob(
        json.dumps(manifest).encode(), "application/vnd.oci.image.manifest.v1+json"
    )
    manifest_desc["annotations"] = {
        "io.containerd.image.name": name,
        "org.opencontainers.image.ref.name": name.rpartition(":")[2],
    }
    index = {"schemaVersion": 2, "manifests": [manifest_desc]}
    documents = {
        "oci-layout": json.dumps({"imageLayoutVersion": "1.0.0"}).encode(),
        "index.json": json.dumps(index).encode(),
    }
    with tarfile.open(path, "w") as tar:
        tar.addfile(_entry("blobs", mode=0o755, kind=tarfile.DIRTYPE))
        tar.addfile(_entry("blobs/sha256", mode=0o755, kind=tarfile.DIRTYPE))
        for digest, data in blobs.items():
            documents[f"blobs/sha256/{digest.partition(':')[2]}"] = data
        for member, data in documents.items():
            info = _entry(member, mode=0o644)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def pause_image(directory: Path) -> Path:
    """The sandbox image, compiled from the pinned release's ``pause.c``."""
    source = _module_file("build/pause/linux/pause.c")
    binary = directory / "pause"
    done = subprocess.run(
        [
            "gcc",
            "-Os",
            "-Wall",
            "-static",
            "-DVERSION=v3.10-starburst",
            "-o",
            str(binary),
            str(source),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise ImageError(f"gcc -static pause.c failed (is gcc installed?):\n{done.stderr}")
    layer = _layer({"pause": binary.read_bytes()}, {}, ())
    return write_oci_tarball(
        directory / "pause.tar", name=PAUSE, layer=layer, config={"Entrypoint": ["/pause"]}
    )


def busybox_image(directory: Path) -> Path:
    """Debian's static busybox, one ``/bin`` link per applet."""
    if not BUSYBOX_BINARY.is_file():
        raise ImageError(f"{BUSYBOX_BINARY} is missing (Debian's busybox-static)")
    applets = subprocess.run(
        [str(BUSYBOX_BINARY), "--list"], capture_output=True, text=True, check=True
    ).stdout.split()
    links = {f"bin/{a}": "busybox" for a in applets if a != "busybox"}
    files = {
        "bin/busybox": BUSYBOX_BINARY.read_bytes(),
        "etc/passwd": b"root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/tmp:/bin/sh\n",
        "etc/group": b"root:x:0:\nnogroup:x:65534:\n",
    }
    layer = _layer(files, links, ("bin", "etc", "tmp"))
    config = {"Cmd": ["sh"], "Env": ["PATH=/bin"]}
    return write_oci_tarball(directory / "busybox.tar", name=BUSYBOX, layer=layer, config=config)


#: the image of SkyPilot's pods on the real node (its Kubernetes image catalog names it)
SKYPILOT_POD = "starburst.local/skypilot-pod:1"
#: what SkyPilot's pod start script (``sky/templates/kubernetes-ray.yml.j2``, STEP 1) installs
#: with apt when missing (``rsync curl wget netcat gcc patch pciutils openssh-server``): all
#: present, so it installs nothing (no mirror is reachable from a pod); bash is its shell;
#: ``sudo`` and ``python3`` for its runtime steps
SKYPILOT_POD_PACKAGES = (
    "bash", "ca-certificates", "curl", "gcc", "netcat-openbsd", "openssh-server", "patch",
    "pciutils", "procps", "python3", "rsync", "sudo", "wget",
)  # fmt: skip


#: SkyPilot's runtime, which its pod start script (STEP 2, ``runtime-setup``) would fetch:
#: ``uv`` (from astral.sh, into ``~/.local/bin``) and a venv ``~/skypilot-runtime`` with what
#: it installs from PyPI (``sky/skylet/constants.py``); each install is skipped or satisfied
#: when present, so baked in, the step needs no network
SKYPILOT_RUNTIME = (
    "skypilot[kubernetes,remote]==0.14.1", "ray[default]==2.9.3", "pydantic-core==2.41.1",
    "setuptools<70", "click<8.3.0", "uv==0.13.9",
)  # fmt: skip


def _skypilot_runtime(rootfs: Path) -> None:
    """Bake ``SKYPILOT_RUNTIME`` into ``/root`` of ``rootfs``: a venv of its own Python, then
    ``pip install`` in a chroot (this host's network, resolver and CA bundle; some of Ray's
    dependencies are source-only, so they build there)."""
    from tests.support.image_tools import run

    venv = "/root/skypilot-runtime"
    resolv = rootfs / "etc" / "resolv.conf"
    resolv.unlink(missing_ok=True)
    shutil.copy("/etc/resolv.conf", resolv)
    shutil.copy("/etc/ssl/certs/ca-certificates.crt", rootfs / "tmp" / "host-ca.crt")
    try:
        run(["chroot", str(rootfs), "python3", "-m", "venv", venv])
        # a clean environment: this host's PIP_*/SSL_* variables name files of its own
        clean = ["env", "-i", "PATH=/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/root",
                 "PIP_CERT=/tmp/host-ca.crt", "SSL_CERT_FILE=/tmp/host-ca.crt"]  # fmt: skip
        run(["chroot", str(rootfs), *clean, f"{venv}/bin/pip", "install", "--quiet",
             "--disable-pip-version-check", "--no-cache-dir", *SKYPILOT_RUNTIME],
            timeout=3600)  # fmt: skip
    finally:
        resolv.unlink(missing_ok=True)
        (rootfs / "tmp" / "host-ca.crt").unlink(missing_ok=True)
    (rootfs / "root" / ".local" / "bin").mkdir(parents=True)
    (rootfs / "root" / ".local" / "bin" / "uv").symlink_to(f"{venv}/bin/uv")


def skypilot_pod_image(*, runtime: bool = False) -> Path:
    """The OCI archive of ``SKYPILOT_POD``: Debian with ``SKYPILOT_POD_PACKAGES`` (and with
    ``runtime``, ``SKYPILOT_RUNTIME`` baked in), built by ``tests.support.image``
    (debootstrap and buildah, cached; minutes the first time)."""
    from tests.support.image import debian_image_archive

    if not runtime:
        return debian_image_archive("skypilot-pod", SKYPILOT_POD, SKYPILOT_POD_PACKAGES)
    return debian_image_archive(
        "skypilot-pod",
        SKYPILOT_POD,
        (*SKYPILOT_POD_PACKAGES, "python3-venv"),
        prepare=_skypilot_runtime,
        recipe=json.dumps(SKYPILOT_RUNTIME),
    )
