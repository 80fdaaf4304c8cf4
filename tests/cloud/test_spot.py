"""Spot bursts: chosen per job or by the ``use_spot`` setting, priced and metered at the price
table's spot price, recovered by SkyPilot's managed jobs after a preemption and billed for the
whole run, recovery included, as one launch. Fake SDK, virtual time."""

from __future__ import annotations

from dataclasses import replace
from decimal import Decimal
from pathlib import Path

import pytest

from starburst.adapters.db.store import SqlStore
from starburst.adapters.local import EmulatedCloud, LocalCluster
from starburst.adapters.skypilot import SkyPilotCloud
from starburst.adapters.skypilot.task import SPOT_RECOVERY
from starburst.controller.wiring import wire_controller
from starburst.core.job import Job
from starburst.core.lifecycle import JobState
from starburst.core.records import JobSpec
from starburst.pricing import load_price_table
from starburst.settings import Settings
from tests.cloud.fake_sky import FakeSky
from tests.support.clock import ManualClock
from tests.support.databases import upgrade

# A100:1 spot in the default table, cheapest first: gcp 1.10, azure 1.36, aws 1.64;
# on-demand: azure 3.40.


def a100(**extra: str) -> Job:
    return Job("t/spot", 0.0, 1, gpu_type="A100", extra={"command": "python train.py", **extra})


@pytest.mark.parametrize(
    ("setting", "extra", "price", "where"),
    [
        (False, {}, 3.40, "azure:eastus"),
        (True, {}, 1.10, "gcp:us-central1 (spot)"),
        (False, {"use_spot": "true"}, 1.10, "gcp:us-central1 (spot)"),
        (True, {"use_spot": "false"}, 3.40, "azure:eastus"),
        (False, {"spot": "yes"}, 1.10, "gcp:us-central1 (spot)"),
    ],
)
def test_spot_per_job_or_by_policy_is_quoted_at_the_spot_price(
    setting: bool, extra: dict[str, str], price: float, where: str
) -> None:
    cloud = SkyPilotCloud(ManualClock(10_000.0), load_price_table(), FakeSky(), spot=setting)  # type: ignore[arg-type]
    quote = cloud.quote(a100(**extra))
    assert (quote.price_per_hour, quote.where) == (price, where)


def test_a_spot_task_asks_for_managed_job_recovery() -> None:
    fake, clock = FakeSky(), ManualClock(10_000.0)
    cloud = SkyPilotCloud(clock, load_price_table(), fake, sync_interval=0.0, spot=True)  # type: ignore[arg-type]
    handle = cloud.launch(a100(), "burst")
    for _ in range(3):
        clock.advance(1)
        cloud.poll(handle)
    ((_, task),) = fake.calls.launches
    resources = task.kwargs["resources"].kwargs
    assert resources["use_spot"] is True and resources["job_recovery"] == SPOT_RECOVERY


def test_a_preempted_and_recovered_spot_job_is_metered_as_one_run(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'sb.db'}"
    upgrade(url)
    clock, fake = ManualClock(10_000.0), FakeSky()
    settings = Settings(
        database_url=url,
        state_dir=tmp_path,
        cloud="skypilot",
        policy="no-wait",
        local_gpus=0,
        use_spot=True,
    )
    store = SqlStore.open(url, clock=clock)
    cloud = SkyPilotCloud(clock, load_price_table(), fake, sync_interval=0.0, spot=True)  # type: ignore[arg-type]
    controller = wire_controller(
        settings, store, LocalCluster(tmp_path / "c", 0, clock=clock), cloud, clock=clock
    )
    job = store.submissions.submit(
        JobSpec(gpus=1, gpu_type="A100", command="python train.py")
    ).job.id

    def run(seconds: float, step: float = 5.0) -> None:
        end = clock.t + seconds
        while clock.t < end:
            clock.advance(step)
            controller.run_pass()

    try:
        run(30)
        (record,) = store.ledger.launches(job)
        assert record.spot and record.region == "us-central1" and record.provider == "gcp"
        assert record.hourly_price == Decimal("1.1")
        (managed,) = fake.managed
        fake.set_status(managed["job_id"], "RUNNING")
        run(1200)
        assert store.jobs.get(job).state is JobState.RUNNING_CLOUD
        fake.set_status(managed["job_id"], "RECOVERING")  # the spot VM was preempted
        run(600)
        assert store.jobs.get(job).state is JobState.RUNNING_CLOUD  # not re-burst, not failed
        assert cloud.reason(cloud.handle(job)) == "gcp:us-central1 (spot): recovering"
        fake.set_status(managed["job_id"], "RUNNING", recovery_count=1)
        run(600)
        assert "recovered 1× from preemption" in cloud.reason(cloud.handle(job))
        fake.set_status(managed["job_id"], "SUCCEEDED", end_at=clock.t)
        run(10)
        assert store.jobs.get(job).state is JobState.SUCCEEDED
        (record,) = store.ledger.launches(job)  # one launch: recovery is SkyPilot's, not a relaunch
        assert len(fake.calls.launches) == 1 and record.ended_at is not None
        billed_s = record.ended_at - record.launched_at
        assert billed_s >= 2400  # running, the recovery, and running again
        (total,) = store.ledger.cost_report(0, clock.t + 60, by=("cloud",))
        assert total.amount == pytest.approx(
            Decimal("1.1") * Decimal(billed_s) / 3600, abs=Decimal("0.0001")
        )  # micro-dollar rounding per chunk
        assert total.gpu_hours == pytest.approx(billed_s / 3600)
    finally:
        store.close()


def test_spot_is_priced_and_metered_as_spot_on_the_emulated_cloud(tmp_path: Path) -> None:
    """Issue 33, finding 7: `use_spot: true` was billed at the on-demand price."""
    clock = ManualClock(0.0)
    cloud = EmulatedCloud(tmp_path, load_price_table(), clock=clock, grace=0.2)
    job = Job("s", 0.0, 1, gpu_type="A100", team="ml", extra={"command": "true"})
    on_demand = cloud.quote(job)
    spot_job = replace(job, id="t", extra={"command": "true", "use_spot": "true"})
    billed = cloud.billed_launch(cloud.launch(spot_job, "test"))
    assert (on_demand.price_per_hour, billed.price_per_hour) == (3.40, 1.10)
    assert billed.where == "emulated gcp:us-central1 (spot)"
    server_spot = EmulatedCloud(tmp_path / "b", load_price_table(), clock=clock, spot=True)
    assert server_spot.quote(job).price_per_hour == 1.10  # the server's use_spot setting
    with pytest.raises(Exception, match="must be true or false"):
        cloud.quote(Job("u", 0.0, 1, extra={"use_spot": "maybe"}))
