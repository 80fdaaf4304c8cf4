"""Build a costly test input once per run, not once per xdist worker.

Under ``pytest -n auto`` every worker is its own session, so a session fixture that trains a
model or generates a workload runs once per worker that needs it. ``once_per_run`` lets the
first worker build it into a directory every worker of this run shares (the parent of the
workers' base temporary directories, pytest-xdist's documented pattern) under a file lock;
the others wait on the lock and read what it wrote. A serial run builds it in its own
temporary directory, as before.

What is shared is what the builder writes to disk, so a fixture returns what it loads from
there — the same value whichever worker built it. A builder that fails leaves nothing behind
and fails every worker that asks, each with its own traceback.
"""

from __future__ import annotations

import fcntl
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest


def run_directory(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The temporary directory all workers of this run share (a serial run's own base)."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def once_per_run(
    tmp_path_factory: pytest.TempPathFactory, name: str, build: Callable[[Path], None]
) -> Path:
    """The directory ``name`` of this run, filled by ``build(directory)`` by the first worker
    that asks (every other worker waits for it, then finds it complete)."""
    root = run_directory(tmp_path_factory) / "shared"
    root.mkdir(exist_ok=True)
    target = root / name
    done = root / f"{name}.done"
    with open(root / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.exists():
            shutil.rmtree(target, ignore_errors=True)
            target.mkdir()
            try:
                build(target)
            except BaseException:
                shutil.rmtree(target, ignore_errors=True)
                raise
            done.touch()
    return target
