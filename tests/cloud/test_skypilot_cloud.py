"""SkyPilotCloud against the fake SDK: restarts, failover, preemption, cancel, cost."""

from __future__ import annotations

from decimal import Decimal

import pytest

from starburst.adapters.skypilot import (
    Backoff,
    Phase,
    SkyPilotCloud,
    build_task,
    launch_name,
    launch_options,
)
from starburst.core.billing import charges
from starburst.core.errors import PermanentError
from starburst.core.failure import exit_code_in
from starburst.core.job import Job
from starburst.core.ports import CloudHandle, CloudStatus
from starburst.pricing import PriceTable, load_price_table
from tests.cloud.fake_sky import ApiServerConnectionError, FakeSky, InvalidCloudCredentials
from tests.support.clock import ManualClock

# A100:1 on-demand in the default table, cheapest first: azure 3.40, gcp 3.67, aws 4.10.


@pytest.fixture
def prices() -> PriceTable:
    return load_price_table()


@pytest.fixture
def fake() -> FakeSky:
    return FakeSky()


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(100.0)


def make_cloud(fake: FakeSky, clock: ManualClock, prices: PriceTable) -> SkyPilotCloud:
    return SkyPilotCloud(clock, prices, fake, sync_interval=0.0, backoff=Backoff(base=10.0))


def job(job_id: str = "team-a/train-1", **extra: str) -> Job:
    fields = {"command": "python train.py", "image": "pytorch/pytorch:2.3", **extra}
    return Job(job_id, 0.0, 1, gpu_type="A100", team="ml", extra=fields)


def passes(cloud: SkyPilotCloud, handle: CloudHandle, clock: ManualClock, n: int = 3) -> str:
    status = CloudStatus.PENDING
    for _ in range(n):
        clock.advance(1.0)
        status = cloud.poll(handle)
    return status.value


def running(cloud: SkyPilotCloud, fake: FakeSky, clock: ManualClock, j: Job) -> CloudHandle:
    handle = cloud.launch(j, "waited 30m of a 30m budget")
    passes(cloud, handle, clock)
    launch = cloud.launch_of(j.id)
    assert launch is not None and launch.cloud_job_id is not None
    fake.set_status(launch.cloud_job_id, "RUNNING")
    assert passes(cloud, handle, clock) == "running"
    return handle


def test_launch_is_a_managed_job_with_a_deterministic_name(
    fake: FakeSky, clock: ManualClock, prices: PriceTable
) -> None:
    cloud = make_cloud(fake, clock, prices)
    j = job()
    quote = cloud.quote(j)
    assert (quote.price_per_hour, quote.where, quote.accelerators) == (
        3.40,
        "azure:eastus",
        "A100:1",
    )
    handle = cloud.launch(j, "burst")
    assert fake.calls.launches == []  # first it looks for an earlier launch
    assert cloud.launch(j, "again") == handle
    passes(cloud, handle, clock)
    ((name, task),) = fake.calls.launches
    assert name == launch_name(j.id, 0) == f"{handle.name}-0"
    assert name.startswith("starburst-team-a-train-1-")
    assert task.kwargs["run"] == "python train.py"
    assert task.kwargs["envs"]["STARBURST_JOB_ID"] == j.id
    resources = task.kwargs["resources"].kwargs
    assert resources == {
        "infra": "azure",
        "accelerators": "A100:1",
        "use_spot": False,
        "image_id": "docker:pytorch/pytorch:2.3",
    }
    assert cloud.handle(j.id).cloud_job_id == "1"


def test_restart_finds_an_accepted_launch_by_name_instead_of_relaunching(
    fake: FakeSky, clock: ManualClock, prices: PriceTable
) -> None:
    fake.hold_launches = True
    before = make_cloud(fake, clock, prices)
    handle = before.launch(job(), "burst")
    assert passes(before, handle, clock) == "provisioning"
    assert len(fake.calls.launches) == 1  # accepted, still running on the API server
    # the controller dies here; the API server finishes the launch without it
    fake.run_pending()
    fake.set_status(1, "RUNNING")

    after = make_cloud(fake, clock, prices)
    handle = after.launch(job(), "burst (resumed after restart)")
    assert passes(after, handle, clock) == "running"
    assert len(fake.calls.launches) == 1
    launch = after.launch_of(job().id)
    assert launch is not None and launch.cloud_job_id == 1
    assert "found earlier launch" in launch.reason or launch.reason.endswith("running")


def test_restart_while_the_launch_request_is_still_in_flight_adopts_it(
    fake: FakeSky, clock: ManualClock, prices: PriceTable
) -> None:
    fake.hold_launches = True
    before = make_cloud(fake, clock, prices)
    passes(before, before.launch(job(), "burst"), clock)
    (request_id,) = [r for r in fake.requests if fake.requests[r].name == "sky.jobs.launch"]
    # restart: the managed job is not in the queue yet, but its launch request is on the server
    after = make_cloud(fake, clock, prices)
    handle = after.launch(job(), "burst (resumed after restart)")
    assert passes(after, handle, clock) == "provisioning"
    launch = after.launch_of(job().id)
    assert launch is not None and launch.request_id == request_id
    assert launch.phase is Phase.LAUNCHING and "adopted" in launch.reason
    fake.release()
    passes(after, handle, clock)
    assert launch.cloud_job_id == 1 and len(fake.calls.launches) == 1


def test_a_launch_request_the_server_forgot_is_looked_up_not_repeated(
    fake: FakeSky, clock: ManualClock, prices: PriceTable
) -> None:
    fake.hold_launches = True
    cloud = make_cloud(fake, clock, prices)
    handle = cloud.launch(job(), "burst")
    passes(cloud, handle, clock, 2)
    fake.run_pending()
    fake.forget_requests()  # API server restarted: the request id is unknown now
    assert passes(cloud, handle, clock, 4) == "pending"
    assert len(fake.calls.launches) == 1
    launch = cloud.launch_of(job().id)
    assert launch is not None and launch.cloud_job_id == 1 and launch.phase is Phase.TRACKING


def test_provisioning_failure_fails_over_to_the_next_cheapest_option(
    fake: FakeSky, clock: ManualClock, prices: PriceTable
) -> None:
    fake.no_capacity = {"azure"}
    cloud = make_cloud(fake, clock, prices)
    handle = cloud.launch(job(), "burst")
    passes(cloud, handle, clock, 4)
    assert [t.clouds for _, t in fake.calls.launches] == [{"azure"}, {"gcp"}]
    assert [n[-2:] for n, _ in fake.calls.launches] == ["-0", "-1"]
    billed = cloud.billed_launch(handle)
    assert billed is not None and billed.where == "gcp:us-central1"
    assert billed.price_per_hour == 3.67
    # the managed job on GCP then runs out of capacity too: AWS is last
    fake.set_status(1, "FAILED_NO_RESOURCE", failure_reason="no A100 in us-central1")
    passes(cloud, handle, clock, 4)
    assert [t.clouds for _, t in fake.calls.launches][-1] == {"aws"}
    fake.set_status(2, "FAILED_NO_RESOURCE")
    assert passes(cloud, handle, clock, 4) == "failed"
    assert "no capacity on any allowed option" in cloud.reason(handle)
    assert len(fake.calls.launches) == 3


def test_spot_preemption_and_recovery(
    fake: FakeSky, clock: ManualClock, prices: PriceTable
) -> None:
    cloud = make_cloud(fake, clock, prices)
    j = job(spot="true", clouds="aws")
    handle = running(cloud, fake, clock, j)
    assert fake.calls.launches[0][1].kwargs["resources"].kwargs["use_spot"] is True
    fake.set_status(1, "RECOVERING")
    assert passes(cloud, handle, clock) == "recovering"
    fake.set_status(1, "RUNNING", recovery_count=1)
    assert passes(cloud, handle, clock) == "running"
    assert "recovered 1×" in cloud.reason(handle)
    fake.set_status(1, "SUCCEEDED")
    assert passes(cloud, handle, clock) == "succeeded"
    assert len(fake.calls.launches) == 1  # SkyPilot recovered it; Starburst did not relaunch
    billed = cloud.billed_launch(handle)
    assert billed is not None and billed.where == "aws:us-east-1 (spot)"


def test_cancel_during_provisioning(fake: FakeSky, clock: ManualClock, prices: PriceTable) -> None:
    cloud = make_cloud(fake, clock, prices)
    handle = cloud.launch(job(), "burst")
    passes(cloud, handle, clock)
    fake.set_status(1, "STARTING")
    assert passes(cloud, handle, clock) == "provisioning"
    cloud.cancel(handle)
    assert fake.calls.cancels == [[1]]
    assert passes(cloud, handle, clock) == "provisioning"  # CANCELLING: still billed
    fake.set_status(1, "CANCELLED")
    assert passes(cloud, handle, clock) == "cancelled"
    assert fake.calls.cancels == [[1]]


def test_cancel_while_the_launch_request_is_in_flight(
    fake: FakeSky, clock: ManualClock, prices: PriceTable
) -> None:
    fake.hold_launches = True
    cloud = make_cloud(fake, clock, prices)
    handle = cloud.launch(job(), "burst")
    passes(cloud, handle, clock, 2)
    cloud.cancel(handle)
    assert fake.calls.cancels == []  # nothing to name yet
    fake.release()
    passes(cloud, handle, clock, 2)
    assert fake.calls.cancels == [[1]]


def test_cancel_before_anything_launched(
    fake: FakeSky, clock: ManualClock, prices: PriceTable
) -> None:
    cloud = make_cloud(fake, clock, prices)
    handle = cloud.launch(job(), "burst")
    cloud.cancel(handle)
    assert passes(cloud, handle, clock) == "cancelled"
    assert fake.calls.launches == []


def test_transient_errors_back_off_and_retry_the_same_option(
    fake: FakeSky, clock: ManualClock, prices: PriceTable
) -> None:
    fake.errors = [ApiServerConnectionError("API server unreachable")]
    cloud = make_cloud(fake, clock, prices)
    handle = cloud.launch(job(), "burst")
    passes(cloud, handle, clock, 2)
    launch = cloud.launch_of(job().id)
    assert launch is not None and launch.phase is Phase.WAITING
    assert "ApiServerConnectionError" in launch.reason
    retry_at = launch.retry_at
    while clock.t + 1.0 < retry_at:
        passes(cloud, handle, clock, 1)
    assert len(fake.calls.launches) == 1  # no retry before the backoff is over
    passes(cloud, handle, clock, 5)
    assert [n for n, _ in fake.calls.launches] == [launch_name(job().id, 0)] * 2
    assert launch.phase is Phase.TRACKING


def test_permanent_errors_fail_the_job_with_the_reason(
    fake: FakeSky, clock: ManualClock, prices: PriceTable
) -> None:
    fake.errors = [InvalidCloudCredentials("no Azure credentials")]
    cloud = make_cloud(fake, clock, prices)
    handle = cloud.launch(job(), "burst")
    assert passes(cloud, handle, clock) == "failed"
    assert cloud.reason(handle) == "InvalidCloudCredentials: no Azure credentials"
    with pytest.raises(PermanentError, match="no cloud prices GPU type B200"):
        cloud.quote(Job("b", 0.0, 1, gpu_type="B200", extra={"command": "x"}))
    with pytest.raises(PermanentError, match="no command"):
        build_task(FakeSky(), Job("c", 0.0, 1), launch_options(job(), prices)[0], "n")


#: SkyPilot's failure_reason for a FAILED managed job (sky.jobs.controller, 0.14)
EXITED = (
    "Job exited with exit code {} (user program failure). To see the details, run: "
    "sky jobs logs --controller 1"
)


@pytest.mark.parametrize(
    ("status", "detail", "limit", "cause", "code"),
    [
        ("FAILED", EXITED.format(7), None, "exit code 7", 7),
        ("FAILED", EXITED.format(124), "7200", "time limit 2h reached: killed", None),
        ("FAILED", EXITED.format(124), None, "exit code 124", 124),
        (
            "FAILED",
            "Job exited with exit codes [0, 3] (user program failure). …",
            None,
            "exit code 3 (nodes: 0, 3)",
            3,
        ),
        ("FAILED_SETUP", EXITED.format(2), None, "setup exit code 2", 2),
        (
            "FAILED",
            "Job failed (FAILED) (user program failure). To see the details, run: …",
            None,
            "failed, exit code unknown (SkyPilot could not read it from the cloud cluster): "
            "Job failed (FAILED) (user program failure). To see the details, run: …",
            None,
        ),
        (
            "FAILED",
            None,
            None,
            "failed, exit code unknown (SkyPilot gave no failure reason)",
            None,
        ),
    ],
)
def test_user_program_failure_is_reported_with_its_exit_code(
    fake: FakeSky,
    clock: ManualClock,
    prices: PriceTable,
    status: str,
    detail: str | None,
    limit: str | None,
    cause: str,
    code: int | None,
) -> None:
    cloud = make_cloud(fake, clock, prices)
    handle = running(cloud, fake, clock, job(**({"time_limit_s": limit} if limit else {})))
    fake.logs[1] = "Traceback: CUDA out of memory\n"
    assert cloud.logs(handle) == "Traceback: CUDA out of memory\n"
    fake.set_status(1, status, failure_reason=detail)
    assert passes(cloud, handle, clock) == "failed"
    assert cloud.reason(handle) == f"azure:eastus: {cause}"
    assert exit_code_in(cloud.reason(handle)) == code
    assert len(fake.calls.launches) == 1


def test_cost_entries_add_up_to_price_times_billed_time(
    fake: FakeSky, clock: ManualClock, prices: PriceTable
) -> None:
    cloud = make_cloud(fake, clock, prices)
    j = job()
    handle = cloud.launch(j, "burst")
    billed = None
    for _ in range(3):
        passes(cloud, handle, clock, 1)
        billed = billed or cloud.billed_launch(handle)
    assert billed is not None
    fake.set_status(1, "RUNNING")
    for _ in range(5):
        clock.advance(600.0)
        cloud.poll(handle)
    fake.set_status(1, "SUCCEEDED")
    assert passes(cloud, handle, clock) == "succeeded"
    launch = cloud.launch_of(j.id)
    assert launch is not None and launch.launched_at is not None and launch.ended_at is not None
    assert billed.launched_at == launch.launched_at  # provisioning is billed
    entries = charges(
        billed.launched_at,
        launch.ended_at,
        Decimal(str(billed.price_per_hour)),
        1,
        chunk=600,
        final=True,
    )
    billed_hours = (launch.ended_at - launch.launched_at) / 3600
    assert float(sum(e.amount for e in entries)) == pytest.approx(3.40 * billed_hours)
