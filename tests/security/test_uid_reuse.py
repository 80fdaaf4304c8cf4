"""Issue 38, finding 3: the next job given a uid finds nothing of the one before.

At a job's end only the top-level entries of ``/tmp``, ``/var/tmp`` and ``/dev/shm`` that its
uid owned were removed. A file it wrote to ``/run/lock`` (world-writable too, as
``find / -xdev -perm -0002 -type d`` lists on a standard image), or into a world-writable
directory some other user made inside ``/tmp``, was still there — mode 0600, but owned by the
uid — for the next job given that uid to read. One uid in the pool makes the reuse certain.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from starburst.adapters.local import LocalCluster
from tests.security.local_jobs import outside, pool, run

__all__ = ["outside"]

ONLY = 60850  # a one-uid pool: the second job gets the first one's uid


def test_a_reused_uid_finds_no_file_of_its_previous_job(outside: Path, tmp_path: Path) -> None:
    shared = Path(tempfile.mkdtemp(prefix="starburst-shared-"))  # someone else's, 1777
    os.chmod(shared, 0o1777)
    lock = Path(f"/run/lock/starburst-left-{ONLY}")
    places = [lock, shared / "left", Path(f"/var/tmp/starburst-left-{ONLY}")]
    try:
        cluster = LocalCluster(tmp_path / "state", 1, users=pool(outside / "work", ONLY, ONLY))
        write = "".join(
            f"(umask 077; echo secret-{i} > {p}) && cat {p} && echo WROTE-{i}\n"
            for i, p in enumerate(places)
        )
        first = run(cluster, "first", write)
        assert first.succeeded, first.reason
        out = cluster.logs("first")
        assert all(f"WROTE-{i}" in out for i in range(len(places))), out  # the control
        read = "id -u\n" + "".join(f"cat {p} && echo READ-{i}\n" for i, p in enumerate(places))
        run(cluster, "second", read)
        out = cluster.logs("second")
        assert str(ONLY) in out  # the same uid
        for i, place in enumerate(places):
            assert f"READ-{i}" not in out and f"secret-{i}" not in out, out
            assert not place.exists(), place
        assert shared.is_dir()  # the other user's directory stays
    finally:
        for place in places:
            place.unlink(missing_ok=True)
        shutil.rmtree(shared, ignore_errors=True)
