"""A takeover releases only what belongs to the job it releases (issue 39, finding 1).

The exact interleaving of the fault run, with the real scheduling loop, local cluster and job
uids (as root; skipped otherwise, failed under CI), on a range of one uid so its reuse is
certain:

1. the leader starts job ``x``; its end is seen (the uid is released) …
2. … the uid is handed to a new job ``y``, which starts …
3. … and the leader dies (SIGKILL) before recording ``x``'s end: the store says both run.
4. A new leader reconciles: it adopts ``y`` (running) and ``x`` (ended) and records ``x``'s
   end. Releasing ``x``'s uid must leave ``y`` — the uid's job now — running. It once ran
   ``kill_user`` on the uid and ``y`` failed "exit code 137 … Killed".
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from starburst.adapters.db.store import SqlStore
from starburst.adapters.local import LocalCluster, procfs
from starburst.adapters.local.jobusers import JobUsers, default_lock_dir, resolve_job_users
from starburst.controller.loop.scheduling import SchedulingLoop
from starburst.core.cycle import SchedulerConfig
from starburst.core.lifecycle import JobState
from starburst.core.policy import PolicyKind, WaitPolicy
from starburst.wallclock import WallClock
from tests.local.lives import earlier_life
from tests.security.served import require_root
from tests.support.databases import upgrade
from tests.support.waiting import wait_for

#: a uid no other test uses (``tests/local/test_job_users.py`` keeps to 60900-60999 but these)
UID = 60997
CONFIG = SchedulerConfig(WaitPolicy(PolicyKind.NO_WAIT), out_of_order=True)

#: the dying leader: x starts and ends (seen, never recorded), y starts under x's uid
LEADER = """
import time
from pathlib import Path
from starburst.adapters.db.store import SqlStore
from starburst.adapters.local import LocalCluster
from starburst.adapters.local.jobusers import default_lock_dir, resolve_job_users
from starburst.controller.loop.scheduling import SchedulingLoop
from starburst.core.cycle import SchedulerConfig
from starburst.core.policy import PolicyKind, WaitPolicy
from starburst.core.records import JobSpec
from starburst.wallclock import WallClock

store = SqlStore.open(url)
users = resolve_job_users((uid, uid), Path(work), default_lock_dir())
cluster = LocalCluster(Path(state), 2, users=users)
config = SchedulerConfig(WaitPolicy(PolicyKind.NO_WAIT), out_of_order=True)
loop = SchedulingLoop(store, cluster, None, WallClock(), config)
store.submissions.submit(JobSpec(id="x", gpus=1, command="id -u"))
loop.run_pass()
seen = []
while not seen:  # 1. the end is seen (and the uid released), not recorded
    seen = list(cluster.ended())
    time.sleep(0.02)
store.submissions.submit(JobSpec(id="y", gpus=1, command="id -u; sleep 120"))
loop.run_pass()  # 2. y takes the uid
print("ready", json.dumps(sorted(users.held())), flush=True)
time.sleep(120)  # 3. killed -9 here
"""


@pytest.fixture
def work() -> Iterator[Path]:
    require_root()
    outside = Path(tempfile.mkdtemp(prefix="starburst-work-"))  # pytest's tmp_path is 0700
    os.chmod(outside, 0o711)
    yield outside / "work"
    shutil.rmtree(outside, ignore_errors=True)


def pool(work: Path) -> JobUsers:
    users = resolve_job_users((UID, UID), work, default_lock_dir())
    assert users is not None
    return users


def test_a_takeover_never_kills_the_job_a_released_uid_was_given_to(
    work: Path, tmp_path: Path
) -> None:
    url = f"sqlite:///{tmp_path / 'sb.db'}"
    upgrade(url)
    state = tmp_path / "cluster"
    held = earlier_life(LEADER, url=url, uid=UID, work=str(work), state=str(state))
    assert held == [UID]  # y runs under the uid x had
    store = SqlStore.open(url)
    assert store.jobs.get("x").state is JobState.RUNNING_ONPREM  # x's end never recorded
    users = pool(work)
    cluster = LocalCluster(state, 2, users=users)
    loop = SchedulingLoop(store, cluster, None, WallClock(), CONFIG)
    try:
        loop.reconcile()  # 4. the new leader adopts y (running) and x (ended)
        loop.run_pass()
        assert store.jobs.get("x").state is JobState.SUCCEEDED
        y = store.jobs.get("y")
        assert y.state is JobState.RUNNING_ONPREM, store.jobs.events("y")[-1].reason
        process = cluster.process("y")
        assert process is not None and process.poll() is None  # y was not killed
        # y's wrapper may still be dropping to the uid (a private /proc, then setpriv) on a
        # loaded machine: wait for its process under the uid, which a kill would prevent
        assert wait_for(lambda: UID in procfs.uids_running()) and users.held() == {UID}
    finally:
        cluster.cancel("y")
        wait_for(lambda: cluster.process("y") is None or cluster.process("y").poll())  # type: ignore[union-attr]
        loop.run_pass()
        store.close()
    assert users.held() == set()  # y's own end released the uid
