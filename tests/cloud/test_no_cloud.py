"""The cloud side cannot burst: SkyPilot has no (suitable) cloud enabled. Fake SDK, virtual
time; the same behaviour against a real API server is in ``tests/skypilot_real``."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from starburst.adapters.db.store import SqlStore
from starburst.adapters.local import LocalCluster
from starburst.adapters.skypilot import Backoff, SkyPilotCloud
from starburst.adapters.skypilot.outcomes import NO_CLOUD
from starburst.api.serve import server_app
from starburst.controller.wiring import wire_controller
from starburst.core.job import Job
from starburst.core.lifecycle import JobState
from starburst.core.ports import CloudStatus
from starburst.core.records import JobSpec
from starburst.pricing import load_price_table
from starburst.settings import Settings
from tests.api.conftest import LiveServer
from tests.cloud.fake_sky import ClusterNotUpError, FakeSky
from tests.support import http
from tests.support.clock import ManualClock
from tests.support.databases import upgrade


def readyz(app: object) -> httpx.Response:
    served = LiveServer(app).start()
    try:
        return http.get(f"{served.url}/readyz", timeout=10)
    finally:
        served.stop()


def gpu_job(job_id: str = "t/no-cloud") -> Job:
    return Job(job_id, 0.0, 1, gpu_type="A100", extra={"command": "python train.py"})


def make(fake: FakeSky, clock: ManualClock, ttl: float = 60.0) -> SkyPilotCloud:
    return SkyPilotCloud(
        clock,
        load_price_table(),
        fake,
        sync_interval=0.0,
        backoff=Backoff(base=10.0),
        clouds_ttl=ttl,
    )


def poll_n(cloud: SkyPilotCloud, job_id: str, clock: ManualClock, n: int = 3) -> CloudStatus:
    handle = cloud.handle(job_id)
    status = CloudStatus.PENDING
    for _ in range(n):
        clock.advance(1.0)
        status = cloud.poll(handle)
    return status


def test_no_cloud_enabled_is_refused_once_with_the_fix_and_nothing_launched() -> None:
    fake, clock = FakeSky(), ManualClock(1_000.0)
    fake.enabled = []
    cloud = make(fake, clock)
    cloud.launch(gpu_job(), "burst")
    assert poll_n(cloud, "t/no-cloud", clock) is CloudStatus.REFUSED
    assert cloud.reason(cloud.handle("t/no-cloud")) == NO_CLOUD
    assert cloud.degraded() == NO_CLOUD
    assert fake.calls.launches == []
    assert cloud.billed_launch(cloud.handle("t/no-cloud")) is None


def test_only_options_on_enabled_clouds_are_launched() -> None:
    fake, clock = FakeSky(), ManualClock(1_000.0)
    fake.enabled = ["GCP"]  # A100: azure is cheapest, then gcp
    cloud = make(fake, clock)
    cloud.launch(gpu_job(), "burst")
    poll_n(cloud, "t/no-cloud", clock)
    ((name, task),) = fake.calls.launches
    assert task.clouds == {"gcp"} and name.endswith("-1")  # option 1, named as such


def test_failover_skips_clouds_that_are_not_enabled() -> None:
    fake, clock = FakeSky(), ManualClock(1_000.0)
    fake.enabled = ["Azure"]  # A100: azure, then gcp, then aws
    fake.no_capacity = {"azure"}
    cloud = make(fake, clock)
    cloud.launch(gpu_job(), "burst")
    assert poll_n(cloud, "t/no-cloud", clock, n=5) is CloudStatus.FAILED
    assert [task.clouds for _, task in fake.calls.launches] == [{"azure"}]
    reason = cloud.reason(cloud.handle("t/no-cloud"))
    assert reason.startswith("no capacity on any allowed option; last: azure")


def test_enabled_clouds_that_price_nothing_for_the_job_refuse_it_naming_both() -> None:
    fake, clock = FakeSky(), ManualClock(1_000.0)
    fake.enabled = ["Kubernetes"]
    cloud = make(fake, clock)
    cloud.launch(gpu_job(), "burst")
    assert poll_n(cloud, "t/no-cloud", clock) is CloudStatus.REFUSED
    reason = cloud.reason(cloud.handle("t/no-cloud"))
    assert "azure, gcp, aws" not in reason and "(aws, azure, gcp)" in reason
    assert "enabled: kubernetes" in reason and "sky check" in reason


def test_a_launch_failing_with_no_cloud_access_is_refused_not_failed() -> None:
    fake, clock = FakeSky(), ManualClock(1_000.0)
    cloud = make(fake, clock)
    cloud.launch(gpu_job(), "burst")
    poll_n(cloud, "t/no-cloud", clock, n=1)  # clouds known: aws, azure, gcp
    fake.enabled = []  # an admin removed the credentials meanwhile
    assert poll_n(cloud, "t/no-cloud", clock) is CloudStatus.REFUSED
    assert len(fake.calls.launches) == 1
    assert cloud.reason(cloud.handle("t/no-cloud")) == NO_CLOUD


def test_after_sky_check_enables_a_cloud_a_refused_job_launches_afresh() -> None:
    fake, clock = FakeSky(), ManualClock(1_000.0)
    fake.enabled = []
    cloud = make(fake, clock, ttl=30.0)
    cloud.launch(gpu_job(), "burst")
    assert poll_n(cloud, "t/no-cloud", clock) is CloudStatus.REFUSED
    fake.enabled = ["AWS"]
    clock.advance(30.0)
    cloud.degraded()  # asks again: the answer is older than the ttl
    clock.advance(1.0)
    assert cloud.degraded() is None
    cloud.launch(gpu_job(), "burst again")
    poll_n(cloud, "t/no-cloud", clock)
    ((_, task),) = fake.calls.launches
    assert task.clouds == {"aws"}


def test_a_cancel_answered_not_up_is_not_retried_forever() -> None:
    fake, clock = FakeSky(), ManualClock(1_000.0)
    cloud = make(fake, clock)
    cloud.launch(gpu_job(), "burst")
    poll_n(cloud, "t/no-cloud", clock)
    launch = cloud.launch_of("t/no-cloud")
    assert launch is not None and launch.cloud_job_id is not None
    fake.controller_up = False  # SkyPilot stopped its idle jobs controller
    cloud.cancel(cloud.handle("t/no-cloud"))
    poll_n(cloud, "t/no-cloud", clock, n=4)
    assert len(fake.calls.cancels) == 1
    with pytest.raises(ClusterNotUpError):
        fake.require_controller()


def test_the_controller_holds_jobs_on_prem_while_no_cloud_is_enabled(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'sb.db'}"
    upgrade(url)
    clock, fake = ManualClock(1_000.0), FakeSky()
    fake.enabled = []
    settings = Settings(
        database_url=url, state_dir=tmp_path, cloud="skypilot", policy="no-wait", local_gpus=0
    )
    store = SqlStore.open(url, clock=clock)
    cloud = make(fake, clock, ttl=30.0)
    controller = wire_controller(
        settings, store, LocalCluster(tmp_path / "c", 0, clock=clock), cloud, clock=clock
    )
    job = store.submissions.submit(
        JobSpec(gpus=1, gpu_type="A100", command="python train.py")
    ).job.id
    try:
        for _ in range(6):
            clock.advance(1.0)
            controller.run_pass()
        assert store.jobs.get(job).state is JobState.QUEUED
        states = [e.to_state for e in store.jobs.events(job)]
        assert states.count(JobState.BURSTING) == 1  # refused once, then held: no loop
        assert controller.health().degraded == NO_CLOUD
        assert fake.calls.launches == []
        ready = readyz(server_app(settings, controller))
        assert ready.status_code == 200
        assert ready.json()["status"] == "degraded" and ready.json()["checks"]["cloud"] == NO_CLOUD
        fake.enabled = ["AWS"]  # `sky check` found credentials
        for _ in range(35):
            clock.advance(1.0)
            controller.run_pass()
        assert store.jobs.get(job).state is JobState.BURSTING
        assert controller.health().degraded is None
        assert readyz(server_app(settings, controller)).json()["status"] == "ready"
        ((_, task),) = fake.calls.launches
        assert task.clouds == {"aws"}
    finally:
        store.close()
