"""One contract for every ``Cloud`` port implementation: the same scenarios, each backend.

Backends (each behind a harness that can also move a launch along):
- ``emulated``: ``EmulatedCloud``, the default cloud: every burst a real local process priced
  from the price table; a job's command waits for a file that ``finish`` creates;
- ``sim``: the simulator's ``SimCloud`` on a hand-moved clock: a launch provisions for its
  start-up delay, then runs for the job's runtime (``finish`` moves the clock past it);
- ``skypilot``: ``SkyPilotCloud`` on the checked SDK fake (``tests/cloud/fake_sky.py``, whose
  behaviour ``tests/skypilot_real`` checks against a real API server): ``finish`` sets the
  managed job's status, as SkyPilot's jobs controller would.

The contract (what the scheduling loop relies on):
- ``quote`` gives a positive price per hour, where and what would run, the same twice;
- ``launch`` returns a handle for the job at once, while the job has not finished (a launch
  that waited for the job would never return here: the job ends only when the test says);
- ``poll`` follows the launch to ``RUNNING`` and then to the terminal state the job reached
  (``SUCCEEDED``, or ``FAILED`` for a job that exits non-zero), and a terminal state stays;
- ``cancel`` of a running launch ends it as ``CANCELLED``;
- ``logs`` returns the job's output;
- a backend that dates ends (``LaunchEnds``) dates each one once: asked again later, the same;
- launching the same job again returns the same handle and runs nothing more (a controller
  that restarted mid-launch may ask twice);
- a cloud with nowhere to run refuses: ``poll`` says ``REFUSED`` and nothing runs.

Where a backend cannot take part, the test says why: the simulator's jobs never fail, it bills
a cancelled stint as run until the cancel (``SUCCEEDED``), and every ``launch`` is a new stint
(a Star-Wait job pulled back and burst again); the emulated cloud and the simulator always
have somewhere to run.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, ClassVar, Protocol

import pytest

from starburst.core.job import Job
from starburst.core.ports import Cloud, CloudHandle, CloudStatus, LaunchEnds
from starburst.pricing import load_price_table
from tests.support.clock import ManualClock
from tests.support.waiting import wait_for

TERMINAL = {CloudStatus.SUCCEEDED, CloudStatus.FAILED, CloudStatus.CANCELLED}


class Harness(Protocol):
    cloud: Cloud
    cannot: dict[str, str]  # scenario → why this backend does not take part

    def job(self, name: str, *, fails: bool = False) -> Job: ...

    def tick(self) -> None:
        """Let time pass between two polls (a pass interval)."""
        ...

    def running(self, job: Job) -> None:
        """Make the launched job run (the cloud's side of provisioning)."""
        ...

    def finish(self, job: Job) -> None:
        """Let the job's own work end (with the exit status ``job`` was made with)."""
        ...

    def cancelled(self, job: Job) -> None:
        """The cloud's side of a cancel the port asked for (checks it was asked)."""
        ...

    def runs(self, job: Job) -> int:
        """How many times the job was really started in the cloud."""
        ...

    def printed(self, job: Job, handle: CloudHandle) -> str:
        """Text the job's logs must contain."""
        ...

    def no_cloud(self) -> Cloud | None:
        """The same backend with nowhere to run (None: it always has somewhere)."""
        ...


class EmulatedHarness:
    """``EmulatedCloud`` on a state directory; a job runs until its gate file exists."""

    cannot: ClassVar[dict[str, str]] = {"no-cloud": "the emulated cloud always runs here"}

    def __init__(self, root: Path) -> None:
        from starburst.adapters.local import EmulatedCloud

        self.root = root
        self.cloud = EmulatedCloud(
            root / "state", load_price_table(), clock=ManualClock(1_800_000_000.0), grace=1.0
        )
        self.jobs: list[str] = []

    def job(self, name: str, *, fails: bool = False) -> Job:
        self.jobs.append(name)
        gate, runs = self.root / f"{name}.finish", self.root / "runs.log"
        command = (
            f"echo {name} >> {runs}; echo 'hello from {name}'; "
            f"until [ -e {gate} ]; do sleep 0.02; done; exit {1 if fails else 0}"
        )
        return Job(name, 0.0, 1, gpu_type="A100", team="ml", extra={"command": command})

    def tick(self) -> None:
        pass  # real processes: wall time passes on its own

    def running(self, job: Job) -> None:
        pass  # the process runs as soon as it is launched

    def finish(self, job: Job) -> None:
        (self.root / f"{job.id}.finish").touch()

    def cancelled(self, job: Job) -> None:
        pass  # the process group was signalled by ``cancel`` itself

    def runs(self, job: Job) -> int:
        log = self.root / "runs.log"
        return log.read_text().split().count(job.id) if log.exists() else 0

    def printed(self, job: Job, handle: CloudHandle) -> str:
        return f"hello from {job.id}"

    def no_cloud(self) -> Cloud | None:
        return None

    def close(self) -> None:
        """Let every job end and reap its process (none outlives the test)."""
        handles = [CloudHandle(name, "") for name in self.jobs]
        for name in self.jobs:
            (self.root / f"{name}.finish").touch()
        wait_for(lambda: all(self.cloud.poll(h) in TERMINAL for h in handles))


class SimHarness:
    """``SimCloud`` on a hand-moved clock: 30 s to provision, then the job's runtime."""

    cannot: ClassVar[dict[str, str]] = {
        "fails": "the simulator's jobs never fail",
        "cancel": "the simulator bills a cancelled stint as run until the cancel (SUCCEEDED)",
        "idempotent": "every simulator launch is a new stint (Star-Wait relaunches)",
        "no-cloud": "the simulator's cloud has unlimited capacity",
    }
    STARTUP_S, RUNTIME_S = 30.0, 600.0

    def __init__(self) -> None:
        from starburst.sim.cloud import SimCloud

        self.clock = ManualClock(0.0)
        self.cloud = SimCloud(self.clock, price_per_gpu_hour=2.0, startup_delay=self.STARTUP_S)

    def job(self, name: str, *, fails: bool = False) -> Job:
        return Job(name, 0.0, 1, runtime=self.RUNTIME_S)

    def tick(self) -> None:
        self.clock.advance(1.0)

    def running(self, job: Job) -> None:
        self.clock.advance(self.STARTUP_S)

    def finish(self, job: Job) -> None:
        self.clock.advance(self.RUNTIME_S)

    def cancelled(self, job: Job) -> None:
        pass

    def runs(self, job: Job) -> int:
        return self.cloud.launches

    def printed(self, job: Job, handle: CloudHandle) -> str:
        return handle.name

    def no_cloud(self) -> Cloud | None:
        return None


class SkyHarness:
    """``SkyPilotCloud`` on ``FakeSky``: the test plays SkyPilot's jobs controller."""

    cannot: ClassVar[dict[str, str]] = {}

    def __init__(self) -> None:
        from tests.cloud.fake_sky import FakeSky

        self.fake = FakeSky()
        self.clock = ManualClock(1_800_000_000.0)
        self.cloud = self._make(self.fake)

    def _make(self, fake: Any) -> Any:
        from starburst.adapters.skypilot import Backoff, SkyPilotCloud

        return SkyPilotCloud(
            self.clock, load_price_table(), fake, sync_interval=0.0, backoff=Backoff(base=10.0)
        )

    def job(self, name: str, *, fails: bool = False) -> Job:
        return Job(
            f"team-a/{name}",
            0.0,
            1,
            gpu_type="A100",
            team="ml",
            extra={"command": "python train.py", "fails": "yes" if fails else "no"},
        )

    def tick(self) -> None:
        self.clock.advance(1.0)

    def _managed_id(self, job: Job) -> int:
        def accepted() -> int | None:
            self.tick()
            self.cloud.poll(self.cloud.handle(job.id))
            launch = self.cloud.launch_of(job.id)
            return launch.cloud_job_id if launch is not None else None

        return wait_for(accepted, interval=0.0, what=f"SkyPilot to accept {job.id}")

    def running(self, job: Job) -> None:
        managed = self._managed_id(job)
        self.fake.logs[managed] = f"hello from {job.id}\n"
        self.fake.set_status(managed, "RUNNING")

    def finish(self, job: Job) -> None:
        failed = job.extra["fails"] == "yes"
        self.fake.set_status(self._managed_id(job), "FAILED" if failed else "SUCCEEDED")

    def cancelled(self, job: Job) -> None:
        managed = self._managed_id(job)
        assert [managed] in self.fake.calls.cancels, "no cancel reached SkyPilot"
        self.fake.set_status(managed, "CANCELLED")

    def runs(self, job: Job) -> int:
        from starburst.adapters.skypilot.task import base_name

        return sum(name.startswith(base_name(job.id)) for name, _ in self.fake.calls.launches)

    def printed(self, job: Job, handle: CloudHandle) -> str:
        return f"hello from {job.id}"

    def no_cloud(self) -> Cloud | None:
        from tests.cloud.fake_sky import FakeSky

        nowhere = FakeSky()
        nowhere.enabled = []  # `sky check` enabled no cloud
        self.fake = nowhere
        self.cloud = self._make(nowhere)
        return self.cloud  # type: ignore[no-any-return]


@pytest.fixture(params=["emulated", "sim", "skypilot"])
def harness(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Harness]:
    if request.param == "sim":
        yield SimHarness()
    elif request.param == "skypilot":
        yield SkyHarness()
    else:
        emulated = EmulatedHarness(tmp_path)
        try:
            yield emulated
        finally:
            emulated.close()


def takes_part(h: Harness, scenario: str) -> None:
    if scenario in h.cannot:
        pytest.skip(h.cannot[scenario])


def poll_until(h: Harness, handle: CloudHandle, wanted: set[CloudStatus]) -> CloudStatus:
    def reached() -> CloudStatus | None:
        h.tick()
        status = h.cloud.poll(handle)
        return status if status in wanted else None

    return wait_for(reached, what=f"{handle.name} to reach one of {sorted(wanted)}")


def returns_at_once(call: Callable[[], CloudHandle]) -> CloudHandle:
    """``call()``'s result; fails (instead of hanging) when it waits for the job to end."""
    result: list[CloudHandle] = []
    thread = threading.Thread(target=lambda: result.append(call()), daemon=True)
    thread.start()
    thread.join(timeout=30)
    assert result, "launch did not return while the job was still running"
    return result[0]


def launched_and_running(h: Harness, name: str, *, fails: bool = False) -> tuple[Job, Any]:
    job = h.job(name, fails=fails)
    handle = h.cloud.launch(job, "waited 30m of a 30m budget")
    h.running(job)
    assert poll_until(h, handle, {CloudStatus.RUNNING} | TERMINAL) is CloudStatus.RUNNING
    return job, handle


def test_a_quote_prices_the_job_and_says_where(harness: Harness) -> None:
    job = harness.job("quoted")
    quote = harness.cloud.quote(job)
    assert quote.price_per_hour > 0 and quote.where and quote.accelerators
    assert harness.cloud.quote(job) == quote
    assert quote.emulated == isinstance(harness, EmulatedHarness)


def test_launch_returns_at_once_with_a_handle_for_the_job(harness: Harness) -> None:
    job = harness.job("quick")
    handle = returns_at_once(lambda: harness.cloud.launch(job, "burst"))
    assert handle.job_id == job.id and handle.name
    harness.tick()
    assert harness.cloud.poll(handle) not in TERMINAL  # nothing has ended: the job cannot yet


def test_poll_follows_a_launch_to_running_then_succeeded_for_good(harness: Harness) -> None:
    job, handle = launched_and_running(harness, "ok")
    harness.finish(job)
    assert poll_until(harness, handle, TERMINAL) is CloudStatus.SUCCEEDED
    harness.tick()
    assert harness.cloud.poll(handle) is CloudStatus.SUCCEEDED


def test_an_end_once_dated_is_dated_the_same_later(harness: Harness) -> None:
    # ``LaunchEnds``: a controller bills up to the end it was told; asked again (by the next
    # pass, or the next life after a crash) the backend must not move it
    cloud = harness.cloud
    if not isinstance(cloud, LaunchEnds):
        pytest.skip("this backend cannot date an end: the loop bills to the poll")
    job, handle = launched_and_running(harness, "dated")
    harness.finish(job)
    poll_until(harness, handle, TERMINAL)
    first = cloud.ended_at(handle)
    assert first is not None
    harness.tick()
    assert cloud.ended_at(handle) == first


def test_a_job_that_fails_polls_as_failed(harness: Harness) -> None:
    takes_part(harness, "fails")
    job, handle = launched_and_running(harness, "broken", fails=True)
    harness.finish(job)
    assert poll_until(harness, handle, TERMINAL) is CloudStatus.FAILED


def test_cancel_ends_a_running_launch_as_cancelled(harness: Harness) -> None:
    takes_part(harness, "cancel")
    job, handle = launched_and_running(harness, "stopped")
    harness.cloud.cancel(handle)
    harness.cancelled(job)
    assert poll_until(harness, handle, TERMINAL) is CloudStatus.CANCELLED


def test_logs_show_the_jobs_output(harness: Harness) -> None:
    job, handle = launched_and_running(harness, "talks")
    expected = harness.printed(job, handle)
    wait_for(lambda: expected in harness.cloud.logs(handle), what="the job's output in its logs")


def test_launching_a_job_again_returns_its_launch_and_runs_nothing_more(
    harness: Harness,
) -> None:
    takes_part(harness, "idempotent")
    job, handle = launched_and_running(harness, "twice")
    again = harness.cloud.launch(job, "again, after a restart")
    assert (again.job_id, again.name) == (handle.job_id, handle.name)  # ids may have filled in
    harness.tick()
    assert harness.cloud.poll(handle) is CloudStatus.RUNNING
    wait_for(lambda: harness.runs(job) >= 1)  # a process writes its line when it gets to it
    assert harness.runs(job) == 1


def test_a_cloud_with_nowhere_to_run_refuses_and_runs_nothing(harness: Harness) -> None:
    takes_part(harness, "no-cloud")
    cloud = harness.no_cloud()
    assert cloud is not None
    job = harness.job("nowhere")
    handle = cloud.launch(job, "burst")
    assert poll_until(harness, handle, {CloudStatus.REFUSED} | TERMINAL) is CloudStatus.REFUSED
    assert harness.runs(job) == 0
