"""Star-Wait live: a job pulled back from the cloud and burst again gets a new launch, not its
own cancelled one (cloud backends find earlier launches by name, so attempts are named apart).
"""

from __future__ import annotations

from pathlib import Path

from starburst.adapters.db.store import SqlStore
from starburst.adapters.local import EmulatedCloud, LocalCluster
from starburst.controller.loop.scheduling import SchedulingLoop
from starburst.core.cycle import SchedulerConfig
from starburst.core.lifecycle import JobState
from starburst.core.policy import PolicyKind, WaitPolicy
from starburst.core.records import JobSpec
from starburst.wallclock import WallClock
from tests.support.databases import upgrade
from tests.support.waiting import wait_for


def test_a_pulled_back_job_bursts_again_as_a_new_launch(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 's.db'}"
    upgrade(url)
    clock = WallClock()
    store = SqlStore.open(url, clock=clock)
    cluster = LocalCluster(tmp_path / "cluster", 0, clock=clock)  # no local GPUs at all
    cloud = EmulatedCloud(tmp_path / "cloud", clock=clock)
    star = WaitPolicy(PolicyKind.STAR, coefficient=0.0, star_threshold=0.4)
    loop = SchedulingLoop(store, cluster, cloud, clock, SchedulerConfig(star, out_of_order=True))
    store.submissions.submit(JobSpec(id="s1", gpus=1, command="sleep 1.2", image="python:3.11"))
    pulled: list[str] = []

    def succeeded() -> bool:
        pulled.extend(loop.run_pass().pulled_back)
        return store.jobs.get("s1").state is JobState.SUCCEEDED

    wait_for(succeeded, interval=0.05)
    assert pulled
    first, second = store.ledger.launches("s1")
    assert first.name != second.name
    assert first.status == "pulled back" and second.status == "succeeded"
    assert second.ended_at is not None and second.ended_at - second.launched_at >= 1.0
    store.close()
