"""A job larger than any cloud instance bursts onto several nodes and is billed for all of them."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from starburst.adapters.db.store import SqlStore
from starburst.adapters.local import EmulatedCloud, LocalCluster
from starburst.controller.loop.scheduling import SchedulingLoop
from starburst.core.cycle import SchedulerConfig
from starburst.core.lifecycle import JobState
from starburst.core.policy import PolicyKind, WaitPolicy
from starburst.core.records import JobSpec
from starburst.pricing import load_price_table
from starburst.wallclock import WallClock
from tests.support.databases import upgrade
from tests.support.waiting import wait_for


def test_a_sixteen_gpu_job_bursts_as_two_eight_gpu_nodes(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 's.db'}"
    upgrade(url)
    clock = WallClock()
    store = SqlStore.open(url, clock=clock)
    cluster = LocalCluster(tmp_path / "cluster", 0, clock=clock)  # nothing fits on-prem
    cloud = EmulatedCloud(tmp_path / "cloud", clock=clock)
    loop = SchedulingLoop(
        store,
        cluster,
        cloud,
        clock,
        SchedulerConfig(WaitPolicy(PolicyKind.NO_WAIT), out_of_order=True),
    )
    store.submissions.submit(JobSpec(id="big", gpus=16, gpu_type="H100", command="sleep 0.3"))

    def succeeded() -> bool:
        loop.run_pass()
        return store.jobs.get("big").state is JobState.SUCCEEDED

    wait_for(succeeded, interval=0.05)
    (launch,) = store.ledger.launches("big")
    per_gpu = load_price_table().options("H100", 1)[0].price_per_hour
    assert launch.accelerators == "2xH100:8"
    assert float(launch.hourly_price) == pytest.approx(16 * per_gpu)
    (total,) = store.ledger.cost_report(launch.launched_at - 60, time.time() + 60, by=("cloud",))
    hours = float(total.amount) / float(launch.hourly_price)  # billed time, provisioning included
    assert hours > 0 and total.gpu_hours == pytest.approx(16 * hours, rel=1e-3)
    store.close()
