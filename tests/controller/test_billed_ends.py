"""Ends are stamped when they happened (or were first seen), never earlier (issue 39, 2).

A pass takes time. A cloud run that ended during a pass, after the pass began, was once
recorded ended — and billed — up to the pass's start: 69 of 360 emulated-cloud runs of the
fault run ended 0.05-0.80 s before they really did. Here the clock moves on at every read
(``PassClock``: time passes while the pass works), and on every backend the billed time is
at least the run as the backend dated it:
- emulated cloud (real processes): the launch, its job and its last cost entry end at the
  emulated cloud's own end, first seen during the pass;
- SkyPilot (the fake SDK): they end at the managed job's ``end_at``, stamped by the API
  server while the pass ran;
- local cluster (real processes): the job ends when its end was seen;
- Kubernetes: a Job's ``completionTime`` is cut down to the second, so its end is that
  second's end, or when the end was seen if sooner.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from starburst.adapters.db.convert import to_epoch
from starburst.adapters.db.models import CostEntryRow
from starburst.adapters.db.store import SqlStore
from starburst.adapters.kubernetes import conversion as conv
from starburst.adapters.kubernetes.jobbook import JobBook
from starburst.adapters.local import EmulatedCloud, LocalCluster
from starburst.adapters.skypilot import Backoff, SkyPilotCloud
from starburst.controller.loop.scheduling import SchedulingLoop
from starburst.core.cycle import SchedulerConfig
from starburst.core.lifecycle import JobState
from starburst.core.policy import PolicyKind, WaitPolicy
from starburst.core.ports import Cloud, Cluster
from starburst.core.records import JobSpec
from starburst.pricing import load_price_table
from tests.cloud.fake_sky import FakeRequest, FakeSky
from tests.kube.adapter_support import queued_job
from tests.local.lives import gone
from tests.support.clock import ManualClock
from tests.support.databases import upgrade
from tests.support.waiting import wait_for

CONFIG = SchedulerConfig(WaitPolicy(PolicyKind.NO_WAIT), out_of_order=True)
STEP = 0.05  # seconds of virtual time each clock read takes
US = 1e-6  # the store keeps times to the microsecond


class PassClock(ManualClock):
    """Time passes while a pass works: every read moves the clock on by ``step``."""

    def __init__(self, step: float = STEP) -> None:
        super().__init__()
        self.step = step

    def now(self) -> float:
        self.t += self.step
        return self.t


def open_store(tmp_path: Path, clock: ManualClock) -> SqlStore:
    url = f"sqlite:///{tmp_path / 'sb.db'}"
    upgrade(url)
    return SqlStore.open(url, clock=clock)


def loop_of(
    store: SqlStore, cluster: Cluster, cloud: Cloud | None, clock: ManualClock
) -> SchedulingLoop:
    return SchedulingLoop(store, cluster, cloud, clock, CONFIG, metering_chunk_s=1.0)


def billed_seconds(store: SqlStore, job_id: str, source: str) -> tuple[float, float, float]:
    """(first entry's start, last entry's end, the sum of the entries' lengths) of a job."""
    with store.engine.connect() as conn:
        c = CostEntryRow
        rows = conn.execute(
            sa.select(c.period_start, c.period_end)
            .where(c.job_id == job_id, c.source == source)
            .order_by(c.period_start)
        ).all()
    assert rows, f"{job_id} has no {source} cost entries"
    spans = [(_epoch(a), _epoch(b)) for a, b in rows]
    return spans[0][0], spans[-1][1], sum(b - a for a, b in spans)


def _epoch(value: datetime) -> float:
    return float(to_epoch(value))


def passes_until(loop: SchedulingLoop, done: Callable[[], bool], *, limit: int = 50) -> None:
    for _ in range(limit):
        loop.run_pass()
        if done():
            return
    raise AssertionError("the job did not end")


def test_an_emulated_run_that_ends_during_a_pass_is_billed_to_its_end(tmp_path: Path) -> None:
    clock = PassClock()
    store = open_store(tmp_path, clock)
    cloud = EmulatedCloud(tmp_path / "cloud", clock=clock)
    loop = loop_of(store, LocalCluster(tmp_path / "cluster", 0, clock=clock), cloud, clock)
    store.submissions.submit(JobSpec(id="j", gpus=1, command="true"))
    loop.run_pass()  # nothing on-prem: it bursts at once
    (launch,) = store.ledger.launches("j")
    pid = int(str(launch.cloud_job_id).rsplit("-", 1)[1])
    wait_for(lambda: gone(pid))  # it ended (a zombie, not reaped); nobody has looked yet
    loop.run_pass()  # the pass sees the end, a few clock reads after it began

    job = store.jobs.get("j")
    assert job.state is JobState.SUCCEEDED
    handle = cloud.launch(store.jobs.get("j").job, "look up")  # the same launch's handle
    ended = cloud.ended_at(handle)
    began = cloud.billed_launch(handle).launched_at
    assert ended is not None
    (launch,) = store.ledger.launches("j")
    assert launch.ended_at is not None and launch.ended_at >= ended - US
    assert job.ended_at is not None and job.ended_at >= ended - US
    first, last, billed = billed_seconds(store, "j", "cloud")
    assert first <= began + US and last >= ended - US and billed >= ended - began - 2 * US
    store.close()


class StampingSky(FakeSky):
    """The API server stamps a managed job's end when it happens: ``finish`` ends it at the
    server's next request, which a pass makes while it runs."""

    def __init__(self, clock: ManualClock) -> None:
        super().__init__()
        self.clock = clock
        self.finishing: list[int] = []

    def finish(self, job_id: int) -> None:
        self.finishing.append(job_id)

    def _execute(self, request: FakeRequest) -> None:
        for job_id in self.finishing:
            self.set_status(job_id, "SUCCEEDED", end_at=self.clock.now())
        self.finishing.clear()
        super()._execute(request)


def test_a_skypilot_run_is_billed_to_the_end_the_api_server_stamped(tmp_path: Path) -> None:
    clock = PassClock()
    store = open_store(tmp_path, clock)
    sky = StampingSky(clock)
    cloud = SkyPilotCloud(clock, load_price_table(), sky, sync_interval=0.0, backoff=Backoff())
    loop = loop_of(store, LocalCluster(tmp_path / "cluster", 0, clock=clock), cloud, clock)
    store.submissions.submit(JobSpec(id="j", gpus=1, gpu_type="A100", command="python train.py"))
    loop.run_pass()

    def managed() -> int | None:
        launch = cloud.launch_of("j")
        return launch.cloud_job_id if launch is not None else None

    passes_until(loop, lambda: managed() is not None)
    job_id = managed()
    assert job_id is not None
    sky.set_status(job_id, "RUNNING")
    passes_until(loop, lambda: store.jobs.get("j").state is JobState.RUNNING_CLOUD)
    sky.finish(job_id)
    passes_until(loop, lambda: store.jobs.get("j").state is JobState.SUCCEEDED)

    row = next(r for r in sky.managed if r["job_id"] == job_id)
    ended = float(row["end_at"])
    (launch,) = store.ledger.launches("j")
    assert launch.ended_at == pytest.approx(ended, abs=US)
    job = store.jobs.get("j")
    assert job.ended_at is not None and job.ended_at >= ended - US
    first, last, billed = billed_seconds(store, "j", "cloud")
    assert (
        first <= launch.launched_at + US
        and last == pytest.approx(ended, abs=US)
        and billed >= ended - launch.launched_at - 2 * US
    )
    store.close()


def test_a_local_run_ends_when_its_end_is_seen(tmp_path: Path) -> None:
    clock = PassClock()
    store = open_store(tmp_path, clock)
    cluster = LocalCluster(tmp_path / "cluster", 1, clock=clock)
    loop = loop_of(store, cluster, None, clock)
    store.submissions.submit(JobSpec(id="j", gpus=1, command="true"))
    loop.run_pass()
    process = cluster.process("j")
    assert process is not None
    wait_for(lambda: process.poll() is not None)  # ended; the cluster reports it at a look
    before = clock.t  # the run ended before this pass began
    loop.run_pass()

    job = store.jobs.get("j")
    assert job.state is JobState.SUCCEEDED
    assert job.started_at is not None and job.ended_at is not None and job.ended_at > before
    first, last, billed = billed_seconds(store, "j", "onprem")
    assert first <= job.started_at + US and last >= job.ended_at - US
    assert billed >= job.ended_at - job.started_at - 2 * US
    store.close()


def completed_job(completion: str) -> dict[str, Any]:
    obj = queued_job("train")
    obj["metadata"].update(namespace="ml", uid="uid-1", annotations={conv.STATE: "running"})
    obj["spec"]["suspend"] = False
    obj["status"] = {
        "startTime": "2026-06-01T10:00:00Z",
        "completionTime": completion,
        "succeeded": 1,
        "conditions": [{"type": "Complete", "status": "True"}],
    }
    return obj


@pytest.mark.parametrize(("seen_after", "ends_after"), [(0.7, 0.7), (30.0, 1.0)])
def test_a_kubernetes_end_is_never_before_its_whole_second(
    seen_after: float, ends_after: float
) -> None:
    stamped = "2026-06-01T10:05:00Z"  # the Job ended in [10:05:00, 10:05:01)
    at = conv.parse_time(stamped)
    clock = ManualClock(at + seen_after)
    book = JobBook(
        clock=clock,
        conventions=conv.Conventions(),
        notify=lambda: None,
        pods_of=lambda uid: 0,
        mark=lambda *a: None,
    )
    running = completed_job(stamped)
    running["status"] = {"startTime": "2026-06-01T10:00:00Z"}
    book.on_job("ADDED", running)
    book.on_job("MODIFIED", completed_job(stamped))
    (end,) = book.ended
    assert end.succeeded and end.at == pytest.approx(at + ends_after, abs=US)
