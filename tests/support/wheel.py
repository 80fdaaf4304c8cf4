"""This checkout's wheel, built as an install builds it: ``uv build`` on a copy of the sources.

The copy holds ``starburst/`` and ``migrations/`` (no bytecode caches, no extension built in
place), and the files the build reads beside them (``SOURCES``), so the checkout is left as it
was and the wheel is what a user's ``pip install .`` makes: its hot modules compiled by
``setup.py`` where a C compiler is (``setting``: more of the build's environment,
``STARBURST_PURE_PYTHON=1`` say), the migrations in the package.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: the files of the checkout's root a build reads
SOURCES = ("pyproject.toml", "setup.py", "README.md")


def build_wheel(
    uv: str, source: Path, out_dir: Path, setting: Mapping[str, str] | None = None
) -> tuple[Path, str]:
    """Copy the sources to ``source`` and build the wheel into ``out_dir`` (new folders both);
    the wheel and what the build wrote on stderr. Raises ``RuntimeError`` when the build fails."""
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.so")
    for folder in ("starburst", "migrations"):
        shutil.copytree(ROOT / folder, source / folder, ignore=ignore)
    for name in SOURCES:
        shutil.copy2(ROOT / name, source / name)
    env = {k: v for k, v in os.environ.items() if k != "STARBURST_PURE_PYTHON"}
    env.update(setting or {})
    done = subprocess.run(
        [uv, "build", "--wheel", "--out-dir", str(out_dir), str(source)],
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
    )
    if done.returncode != 0:
        raise RuntimeError(f"uv build failed:\n{done.stdout}\n{done.stderr}")
    (wheel,) = out_dir.glob("starburst-*.whl")  # (``out_dir`` is new: this build's alone)
    return wheel, done.stderr
