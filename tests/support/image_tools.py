"""The tools that build Starburst's image: buildah, debootstrap, uv and pip, as root.

``ensure_tools()`` installs ``buildah`` and ``debootstrap`` with ``apt-get`` when missing
(``--no-install-recommends``: the chroot isolation needs no runc) and returns the ``uv`` to use;
``Buildah`` runs buildah on a storage of its own, removed with everything in it afterwards.

Errors: ``NoImageTools`` when this machine cannot build the image at all (not root, no apt,
no uv): the tests skip then, or fail under ``CI``. ``ImageBuildError`` when a step failed: a
failed test, with the tool's output.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

TOOLS = ("buildah", "debootstrap")


class NoImageTools(RuntimeError):
    """The image cannot be built on this machine (not root, no apt, no uv)."""


class ImageBuildError(RuntimeError):
    """A build step failed (the message carries the tool's output)."""


def run(
    command: Sequence[str], *, cwd: Path | None = None, timeout: float = 1800
) -> subprocess.CompletedProcess[str]:
    """Run a build tool; its failure is an ``ImageBuildError`` with its output."""
    done = subprocess.run(
        list(command), cwd=cwd, capture_output=True, text=True, check=False, timeout=timeout
    )
    if done.returncode != 0:
        raise ImageBuildError(
            f"`{' '.join(command)}` failed (exit {done.returncode}):\n"
            f"{done.stdout[-3000:]}{done.stderr[-3000:]}"
        )
    return done


def ensure_tools() -> str:
    """The ``uv`` to use, after installing buildah and debootstrap when missing."""
    if os.geteuid() != 0:
        raise NoImageTools("not root: debootstrap and buildah build the image as root")
    uv = shutil.which("uv")
    if uv is None:
        raise NoImageTools("no uv on PATH (the README's install step puts it there)")
    missing = [tool for tool in TOOLS if shutil.which(tool) is None]
    if missing:
        if shutil.which("apt-get") is None:
            raise NoImageTools(f"{', '.join(missing)} missing and no apt-get to install them")
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        install = ["apt-get", "install", "-y", "-qq", "--no-install-recommends", *TOOLS]
        for command in (["apt-get", "update", "-qq"], install):
            done = subprocess.run(
                command, capture_output=True, text=True, env=env, check=False, timeout=1800
            )
            if done.returncode != 0:
                raise NoImageTools(f"{' '.join(command)} failed: {done.stderr[-500:]}")
    return uv


@contextmanager
def building(target: Path) -> Iterator[Path]:
    """A scratch directory beside ``target``, renamed to it when the block completes and
    removed when it fails: a half-built cache entry is never seen, a failed one leaves
    nothing behind."""
    scratch = target.with_name(target.name + ".building")
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir(parents=True)
    try:
        yield scratch
    except BaseException:
        shutil.rmtree(scratch, ignore_errors=True)
        raise
    shutil.rmtree(target, ignore_errors=True)
    scratch.rename(target)


@dataclass(frozen=True)
class Buildah:
    """``buildah`` on a storage of its own (``root``), as root."""

    root: Path

    def options(self) -> list[str]:
        return [
            "--root", str(self.root / "storage"),
            "--runroot", str(self.root / "run"),
            "--storage-driver", "overlay",
        ]  # fmt: skip

    def __call__(self, *args: str, timeout: float = 1800) -> str:
        return run(["buildah", *self.options(), *args], timeout=timeout).stdout.strip()

    def remove(self) -> None:
        """Drop every container and image of this storage, then the storage itself."""
        for args in (("rm", "--all"), ("rmi", "--all", "--force")):
            subprocess.run(
                ["buildah", *self.options(), *args], capture_output=True, check=False, timeout=300
            )
        shutil.rmtree(self.root, ignore_errors=True)


@dataclass(frozen=True)
class Container:
    """A container of an image archive, run as the image says (its user, environment, working
    directory; ``run`` puts the image's entrypoint before the arguments, as a runtime does)."""

    buildah: Buildah
    name: str
    entrypoint: tuple[str, ...]

    def run(
        self, *args: str, entrypoint: bool = True, timeout: float = 600
    ) -> subprocess.CompletedProcess[str]:
        command = [*self.entrypoint, *args] if entrypoint else list(args)
        return subprocess.run(
            ["buildah", *self.buildah.options(), "run", "--isolation", "chroot", self.name,
             "--", *command],
            capture_output=True, text=True, check=False, timeout=timeout,
        )  # fmt: skip


@contextmanager
def container_of(archive: Path, *, workdir: Path) -> Iterator[Container]:
    """A container of the OCI ``archive`` in a buildah storage under ``workdir``, removed
    with it afterwards. No OCI runtime is involved (``--isolation chroot``)."""
    buildah = Buildah(workdir)
    try:
        name = buildah("from", "--name", "starburst-smoke", f"oci-archive:{archive}")
        config = json.loads(buildah("inspect", "--type", "container", name))
        entrypoint = config["OCIv1"]["config"].get("Entrypoint") or []
        yield Container(buildah=buildah, name=name, entrypoint=tuple(entrypoint))
    finally:
        buildah.remove()
