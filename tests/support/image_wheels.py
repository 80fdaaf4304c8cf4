"""The image's wheelhouse: the locked dependencies as wheels for the base's interpreter.

``wheelhouse()`` returns a directory of wheels and the ``requirements.txt`` that installs them
(``pip install --no-index --require-hashes -r``), building it when missing:
1. ``uv export --frozen`` writes ``uv.lock``'s pins (with their hashes) for the image's extras;
   its environment markers (``python_full_version >= '3.12'``, ``sys_platform == 'win32'``)
   are evaluated here for the base image's interpreter, not for whichever Python runs the
   tests, and the requirements keep only what applies there, without markers;
2. ``pip download --no-deps --only-binary=:all:`` for that interpreter's tags (CPython X.Y,
   manylinux up to the base's glibc) fetches exactly those files, checking every hash.

Invariants: the wheelhouse's cache key covers ``uv.lock``, the extras and the interpreter's
environment; nothing in it is built from source; the project's own wheel is not in it (it is
built with every product image).
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from packaging.markers import Marker

from tests.support.image_tools import ImageBuildError, building, run

ROOT = Path(__file__).resolve().parents[2]
LOCK = ROOT / "uv.lock"


@dataclass(frozen=True)
class Wheelhouse:
    """A built wheelhouse: the directory (wheels + ``requirements.txt``) and its cache key."""

    directory: Path
    key: str

    def files(self) -> list[Path]:
        """What goes into the build context: the wheels and ``requirements.txt``."""
        return [*sorted(self.directory.glob("*.whl")), self.directory / "requirements.txt"]


def wheelhouse(
    *, uv: str, environment: dict[str, str], cache: Path, extras: tuple[str, ...], log: bool
) -> Wheelhouse:
    """The wheelhouse for these extras and this interpreter (built first when missing)."""
    recipe = json.dumps([sorted(extras), environment], sort_keys=True).encode()
    key = hashlib.sha256(LOCK.read_bytes() + b"\0" + recipe).hexdigest()[:12]
    target = cache / f"wheelhouse-{key}"
    if not (target / "requirements.txt").is_file():
        _build(uv=uv, environment=environment, extras=extras, target=target, log=log)
    return Wheelhouse(directory=target, key=key)


def requirements_for(exported: str, environment: dict[str, str]) -> list[str]:
    """``uv export``'s requirements that apply in ``environment``, without their markers:
    one line each, ``name==version --hash=sha256:... ...``."""
    entries = re.split(r"\n(?=\S)", re.sub(r"\s*\\\n\s*", " ", exported))
    kept = []
    for entry in (e.strip() for e in entries):
        if not entry or entry.startswith("#"):
            continue
        pin, _, rest = entry.partition(" --hash")
        requirement, _, marker = pin.partition(";")
        if marker.strip() and not Marker(marker.strip()).evaluate(environment):
            continue
        if "==" not in requirement:
            raise ImageBuildError(f"uv export gave an unpinned requirement: {entry!r}")
        kept.append(f"{requirement.strip()} --hash{rest}".rstrip())
    return kept


def platform_tags(glibc: str, machine: str) -> list[str]:
    """The manylinux platform tags a glibc ``2.N`` system accepts, newest first."""
    major, minor = (int(part) for part in glibc.split(".")[:2])
    return [f"manylinux_{major}_{m}_{machine}" for m in range(minor, 4, -1)] + [
        f"manylinux2014_{machine}",  # pip expands these legacy names to 2010 and 1 too
    ]


def _build(
    *, uv: str, environment: dict[str, str], extras: tuple[str, ...], target: Path, log: bool
) -> None:
    if log:
        print(f"\nfilling the image's wheelhouse {target} from uv.lock (pip download)", flush=True)
    began = time.monotonic()
    with building(target) as scratch:
        _download(uv=uv, environment=environment, extras=extras, scratch=scratch)
        (scratch / "BUILD_SECONDS").write_text(f"{time.monotonic() - began:.1f}\n")


def _download(
    *, uv: str, environment: dict[str, str], extras: tuple[str, ...], scratch: Path
) -> None:
    wanted = [arg for extra in extras for arg in ("--extra", extra)]
    exported = run(
        [uv, "export", "--frozen", "--no-dev", "--no-emit-project", "--format",
         "requirements-txt", "--no-header", "--no-annotate", "--quiet", *wanted],
        cwd=ROOT,
    ).stdout  # fmt: skip
    requirements = scratch / "requirements.txt"
    requirements.write_text("\n".join(requirements_for(exported, environment)) + "\n")
    version = environment["python_version"]
    platforms = platform_tags(environment["glibc"], environment["platform_machine"])
    run(
        [sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check",
         "--no-deps", "--only-binary=:all:", "--require-hashes",
         "--implementation", "cp", "--python-version", version,
         "--abi", f"cp{version.replace('.', '')}", "--abi", "abi3", "--abi", "none",
         *(arg for tag in platforms for arg in ("--platform", tag)),
         "--dest", str(scratch), "-r", str(requirements)],
        timeout=3600,
    )  # fmt: skip
