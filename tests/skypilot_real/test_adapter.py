"""``SkyPilotCloud`` and the controller through the real SDK against a real API server.

The server has no cloud enabled (``sky check``: no infra), so a burst must come back at
once as the permanent cause "no cloud enabled in SkyPilot: run `sky check`": the job waits
on-prem with that reason, readiness reports the cloud side degraded, and nothing loops.
"""

from __future__ import annotations

import time
from pathlib import Path
from types import ModuleType

from starburst.adapters.db.store import SqlStore
from starburst.adapters.local import LocalCluster
from starburst.adapters.skypilot import SkyPilotCloud
from starburst.adapters.skypilot.outcomes import NO_CLOUD
from starburst.api.serve import probes_app
from starburst.controller.wiring import wire_controller
from starburst.core.job import Job
from starburst.core.lifecycle import JobState
from starburst.core.ports import CloudHandle, CloudStatus
from starburst.core.records import JobSpec
from starburst.settings import Settings
from starburst.wallclock import WallClock
from tests.api.conftest import LiveServer
from tests.support import http
from tests.support.databases import upgrade
from tests.support.waiting import wait_for

PASS_TIMEOUT_S = 180.0  # a loaded 2-core machine answers in seconds, sometimes in minutes


def gpu_job(job_id: str) -> Job:
    return Job(job_id, 0.0, 1, gpu_type="A100", extra={"command": "python train.py"})


def test_a_launch_with_no_cloud_enabled_is_refused_with_the_fix(sky: ModuleType) -> None:
    cloud = SkyPilotCloud(WallClock(), sync_interval=0.0)
    handle = cloud.launch(gpu_job("real/refused"), "waited 1m of a 1m budget")
    statuses: list[CloudStatus] = []
    assert wait_for(
        lambda: statuses.append(cloud.poll(handle)) or statuses[-1] is CloudStatus.REFUSED,
        timeout=PASS_TIMEOUT_S,
    ), statuses
    assert cloud.reason(handle) == NO_CLOUD
    assert cloud.degraded() == NO_CLOUD
    assert cloud.billed_launch(handle) is None  # nothing launched, nothing to bill
    # no launch request ever reached the server
    names = {p.name for p in sky.api_status(all_status=True)}
    assert "sky.jobs.launch" not in names or all(
        "real-refused" not in (p.request_body or "") for p in sky.api_status(all_status=True)
    )
    # polling again changes nothing and sends nothing
    assert cloud.poll(handle) is CloudStatus.REFUSED
    cloud.cancel(handle)  # nothing to cancel: a no-op, not an error


def test_queue_cancel_and_logs_on_an_empty_server(sky: ModuleType) -> None:
    cloud = SkyPilotCloud(WallClock(), sync_interval=0.0)
    # logs of a managed job the server does not have: empty, not an exception
    assert cloud.logs(CloudHandle("real/none", "starburst-none", None, "7")) == ""
    # the lookup of a fresh launch reads the (not up) queue as empty and moves on
    handle = cloud.launch(gpu_job("real/lookup"), "burst")
    assert wait_for(lambda: cloud.poll(handle) is CloudStatus.REFUSED, timeout=PASS_TIMEOUT_S)
    launch = cloud.launch_of("real/lookup")
    assert launch is not None and launch.request_id is None  # refused before any launch


def test_the_controller_keeps_the_job_on_prem_and_reports_degraded(
    sky: ModuleType, tmp_path: Path
) -> None:
    url = f"sqlite:///{tmp_path / 'sb.db'}"
    upgrade(url)
    clock = WallClock()
    settings = Settings(
        database_url=url, state_dir=tmp_path, cloud="skypilot", policy="no-wait", local_gpus=0
    )
    store = SqlStore.open(url, clock=clock)
    cluster = LocalCluster(tmp_path / "cluster", 0, clock=clock)  # nothing fits on-prem
    cloud = SkyPilotCloud(clock, sync_interval=0.0)
    controller = wire_controller(settings, store, cluster, cloud, clock=clock)
    job = store.submissions.submit(
        JobSpec(gpus=1, gpu_type="A100", command="python train.py")
    ).job.id
    try:

        def refused() -> bool:
            controller.run_pass()
            return any("refused" in e.reason for e in store.jobs.events(job))

        assert wait_for(refused, timeout=PASS_TIMEOUT_S)
        stored = store.jobs.get(job)
        assert stored.state is JobState.QUEUED
        events = [e.reason for e in store.jobs.events(job)]
        assert any(NO_CLOUD in reason and "waiting on-prem" in reason for reason in events)
        (launch,) = store.ledger.launches(job)
        assert launch.ended_at == launch.launched_at  # refused: not a second billed
        assert store.ledger.cost_report(0, time.time() + 60, by=("cloud",)) == []
        # further passes hold it on-prem: no second burst, no loop
        for _ in range(5):
            report = controller.run_pass()
            assert report is not None and not report.burst
        assert [e.to_state for e in store.jobs.events(job)].count(JobState.BURSTING) == 1
        assert report.held and NO_CLOUD in report.held[0][1]
        health = controller.health()
        assert health.ready and health.degraded == NO_CLOUD
        served = LiveServer(probes_app(controller)).start()
        try:
            ready = http.get(f"{served.url}/readyz", timeout=10)
        finally:
            served.stop()
        assert ready.status_code == 200
        assert ready.json() == {"status": "degraded", "detail": NO_CLOUD}
    finally:
        store.close()
