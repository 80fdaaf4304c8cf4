"""Helpers for the attack tests on the local executor: a pool of job uids and a
``LocalCluster`` that runs real processes as them (root only: ``require_root``).

``RANGE`` is a corner of the default ``local_job_uids`` that no other test claims from, so
the uids these tests see are deterministic enough to name in assertions; the machine-wide
lock directory keeps them apart from any other controller's all the same.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from starburst.adapters.local import LocalCluster
from starburst.adapters.local.jobusers import JobUsers, default_lock_dir, resolve_job_users
from starburst.core.ports import JobEnded
from tests.local.lives import job, on_local
from tests.security.served import require_root
from tests.support.waiting import wait_for

RANGE = (60800, 60849)


@pytest.fixture
def outside() -> Iterator[Path]:
    """A directory other uids can pass through (pytest's tmp_path is 0700), removed after."""
    require_root()
    path = Path(tempfile.mkdtemp(prefix="starburst-attack-"))
    os.chmod(path, 0o711)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def pool(work: Path, first: int = RANGE[0], last: int = RANGE[1]) -> JobUsers:
    users = resolve_job_users((first, last), work, default_lock_dir())
    assert users is not None
    return users


def run(cluster: LocalCluster, job_id: str, command: str, **extra: str) -> JobEnded:
    """Start ``command`` as job ``job_id`` and return its end, once seen."""
    cluster.start(job(job_id, command, **extra), on_local(1), "fits")
    seen: list[JobEnded] = []

    def ended() -> JobEnded | None:
        seen.extend(e for e in cluster.ended() if e.job_id == job_id)
        return seen[0] if seen else None

    return wait_for(ended, timeout=60)
