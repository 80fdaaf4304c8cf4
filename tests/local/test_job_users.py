"""Job users (``jobusers.py``): a uid of its own per running job, given back at its end.

As root (skipped otherwise, failed under CI): two pools on one machine (two controllers)
never hand out one uid; a full range makes a start wait (``TransientError``) until a job
ends; a job's end kills what it left running — even a process that escaped its group with
``setsid`` — and removes its home and its files in ``/tmp``, so the next job given the uid
finds nothing; a job adopted by a new life (the earlier one killed -9) keeps its uid until
its end is seen.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from starburst.adapters.local import LocalCluster, procfs
from starburst.adapters.local.jobusers import JobUsers, default_lock_dir, resolve_job_users
from starburst.core.errors import TransientError
from starburst.core.ports import JobEnded
from tests.local.lives import earlier_life, job, on_local
from tests.security.served import require_root
from tests.support.waiting import wait_for

# corners of the default range that the suite's servers (lowest free first) rarely reach;
# PAIR and LONE are ranges no other test here uses, so their claims are deterministic
RANGE = (60900, 60989)
PAIR = (60990, 60991)
LONE = 60999
REISSUED = 60998


@pytest.fixture
def work() -> Iterator[Path]:
    require_root()
    outside = Path(tempfile.mkdtemp(prefix="starburst-work-"))  # pytest's tmp_path is 0700
    os.chmod(outside, 0o711)
    yield outside / "work"
    shutil.rmtree(outside, ignore_errors=True)


def pool(work: Path, first: int = RANGE[0], last: int = RANGE[1]) -> JobUsers:
    users = resolve_job_users((first, last), work, default_lock_dir())
    assert users is not None
    return users


def ended(cluster: LocalCluster) -> list[JobEnded]:
    seen: list[JobEnded] = []

    def probe() -> list[JobEnded] | None:
        seen.extend(cluster.ended())
        return seen or None

    return wait_for(probe)


def test_two_pools_on_one_machine_never_share_a_uid(work: Path) -> None:
    first, second = pool(work, *PAIR), pool(work, *PAIR)
    a = first.claim("a")
    b = second.claim("b")
    assert a.uid != b.uid and a.gid == a.uid and b.gid == b.uid
    assert (a.home.stat().st_uid, a.home.stat().st_mode & 0o777) == (a.uid, 0o700)
    assert work.stat().st_mode & 0o777 == 0o711
    first.release(a)
    again = second.claim("c")
    assert again.uid == a.uid  # given back, and taken by the other pool
    assert not a.home.exists()
    second.release(b)
    second.release(again)


def test_a_full_range_makes_a_start_wait_until_a_job_ends(work: Path) -> None:
    users = pool(work, LONE, LONE)
    held = users.claim("one")
    with pytest.raises(TransientError, match=f"all 1 job uids of local_job_uids .*{LONE}"):
        users.claim("two")
    users.release(held)
    users.release(users.claim("two"))


def test_a_jobs_end_kills_its_escaped_processes_and_removes_its_files(
    work: Path, tmp_path: Path
) -> None:
    users = pool(work)
    cluster = LocalCluster(tmp_path / "state", 1, users=users)
    escape = (
        'echo "uid $(id -u)"; echo left > /tmp/starburst-left-$(id -u); '
        "setsid sleep 300 < /dev/null > /dev/null 2>&1 &"
    )
    cluster.start(job("escapee", escape), on_local(1), "fits")
    (end,) = ended(cluster)
    assert end.succeeded, end.reason
    uid = int(cluster.logs("escapee").split("uid ", 1)[1].split()[0])
    assert RANGE[0] <= uid <= RANGE[1]
    assert wait_for(lambda: uid not in procfs.uids_running())  # the setsid sleep went too
    assert not Path(f"/tmp/starburst-left-{uid}").exists()
    assert uid not in users.held() and list(work.iterdir()) == []


ADOPTING_LIFE = """
from pathlib import Path
from starburst.adapters.local import LocalCluster
from starburst.adapters.local.jobusers import resolve_job_users, default_lock_dir
from starburst.core.capacity import Part
from starburst.core.job import Job
users = resolve_job_users(tuple(uids), Path(work), default_lock_dir())
cluster = LocalCluster(Path(state), gpus=1, users=users)
cluster.start(Job("long", 0.0, 1, extra={"command": "id -u; sleep 2"}),
              (Part(0, "local", 1, 0.0, 0.0),), "first life")
print("ready", json.dumps(sorted(users.held())), flush=True)
import time
time.sleep(60)
"""


def test_an_adopted_job_keeps_its_uid_until_its_end_is_seen(work: Path, tmp_path: Path) -> None:
    (uid,) = earlier_life(ADOPTING_LIFE, uids=RANGE, work=str(work), state=str(tmp_path / "s"))
    users = pool(work)
    second = LocalCluster(tmp_path / "s", 1, users=users)  # the first life was killed -9
    assert [r.job.id for r in second.snapshot().running] == ["long"]
    assert users.held() == {uid}
    with pytest.raises(TransientError):  # the uid is this life's: no other pool takes it
        pool(work, uid, uid).claim("x")
    (end,) = ended(second)
    assert end.succeeded and str(uid) in second.logs("long")
    assert users.held() == set() and list(work.iterdir()) == []


def test_an_adopted_record_of_a_uid_given_out_again_leaves_its_new_job_alone(
    work: Path,
) -> None:
    """A life killed -9 whose job then ended frees its uid (the kernel drops the lock, no
    process runs as it); another controller on the machine gives it to a new job. A later
    life adopting the old record must not kill that job, nor sweep its files, at the old
    job's end (it once did: a crash-restart test killed the quick-start's jobs beside it)."""
    import subprocess

    other = pool(work, REISSUED, REISSUED)
    theirs = other.claim("theirs", "theirs")
    victim = subprocess.Popen([*theirs.command_prefix(other.setpriv), "sleep", "60"])
    try:
        marker = Path(f"/tmp/starburst-theirs-{REISSUED}")
        marker.write_text("theirs\n")
        os.chown(marker, REISSUED, REISSUED)
        assert wait_for(lambda: REISSUED in procfs.uids_running())
        adopting = pool(work, REISSUED, REISSUED)
        old = adopting.reclaim(REISSUED, work / "old-home", "old")  # the lock is the other's
        adopting.release(old)  # the adopted job's end is seen
        assert victim.poll() is None and marker.exists()
        assert other.held() == {REISSUED}
    finally:
        victim.kill()
        victim.wait()
        Path(f"/tmp/starburst-theirs-{REISSUED}").unlink(missing_ok=True)
        other.release(theirs)


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"local_job_uids": "60000-"}, "not a uid range"),
        ({"local_job_uids": "7-3"}, "the first not above the last"),
        ({"local_job_uids": "0-10"}, "uids from 1"),
        ({"local_run_as": "nobody"}, "local_run_as is gone"),
    ],
)
def test_settings_refuse_a_bad_range_and_the_old_setting(
    values: dict[str, str], message: str, tmp_path: Path
) -> None:
    from starburst.settings import SettingsError, load_settings

    config = tmp_path / "settings.yaml"
    config.write_text("".join(f"{k}: {v!r}\n" for k, v in values.items()))
    with pytest.raises(SettingsError, match=message):
        load_settings(config)
    assert load_settings(local_job_uids=" 60000 ").job_uid_range() == (60000, 60000)
    assert load_settings(local_job_uids="").job_uid_range() is None


def test_the_old_setting_in_the_environment_is_refused_too(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from starburst.settings import SettingsError, load_settings

    monkeypatch.setenv("STARBURST_LOCAL_RUN_AS", "nobody")
    with pytest.raises(SettingsError, match="local_run_as is gone"):
        load_settings()
