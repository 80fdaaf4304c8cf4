"""A launch that ended while no controller watched is billed to its real end, not to the moment
a restarted controller first polls it (the ledger keeps a chunk once written, so billing past
the end could never be taken back)."""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from pathlib import Path

from starburst.adapters.db.store import SqlStore
from starburst.adapters.local import LocalCluster
from starburst.controller.loop.scheduling import SchedulingLoop
from starburst.core.cycle import SchedulerConfig
from starburst.core.job import Job
from starburst.core.lifecycle import JobState
from starburst.core.policy import PolicyKind, WaitPolicy
from starburst.core.ports import CloudHandle, CloudStatus, Quote
from starburst.core.records import JobSpec
from tests.support.clock import ManualClock
from tests.support.databases import upgrade

PRICE = 3.6  # $/h: one cent for every 10 s


class EndsUnseen:
    """A cloud whose launch runs from when it is asked to until ``end``, then has ended."""

    def __init__(self, clock: ManualClock) -> None:
        self.clock = clock
        self.end: float | None = None

    def quote(self, job: Job) -> Quote:
        return Quote(PRICE, "aws:us-east-1", "A100:1")

    def launch(self, job: Job, reason: str) -> CloudHandle:
        return CloudHandle(job.id, f"sb-{job.id}")

    def poll(self, handle: CloudHandle) -> CloudStatus:
        ended = self.end is not None and self.clock.now() >= self.end
        return CloudStatus.SUCCEEDED if ended else CloudStatus.RUNNING

    def cancel(self, handle: CloudHandle) -> None:
        return None

    def logs(self, handle: CloudHandle) -> str:
        return ""

    def ended_at(self, handle: CloudHandle) -> float | None:
        return self.end if self.end is not None and self.clock.now() >= self.end else None


def bursting(
    tmp_path: Path, chunk: float
) -> tuple[SqlStore, EndsUnseen, ManualClock, Callable[[], SchedulingLoop]]:
    """A SQLite store, the cloud, the clock, and a maker of fresh controllers (as after a
    restart) with no GPUs on-prem, so every job bursts at once, metering ``chunk`` s chunks."""
    url = f"sqlite:///{tmp_path / 's.db'}"
    upgrade(url)
    clock = ManualClock(1_800_000_000.0)
    store = SqlStore.open(url, clock=clock)
    cloud = EndsUnseen(clock)
    config = SchedulerConfig(WaitPolicy(PolicyKind.NO_WAIT), out_of_order=True)

    def loop() -> SchedulingLoop:
        cluster = LocalCluster(tmp_path / "cluster", 0, clock=clock)
        return SchedulingLoop(store, cluster, cloud, clock, config, metering_chunk_s=chunk)

    return store, cloud, clock, loop


def test_a_launch_that_ended_unseen_is_billed_to_its_end(tmp_path: Path) -> None:
    store, cloud, clock, loop = bursting(tmp_path, 10.0)
    store.submissions.submit(JobSpec(id="j1", gpus=1, command="true"))
    loop().run_pass()  # bursts at once: nothing on-prem
    (launch,) = store.ledger.launches("j1")
    cloud.end = launch.launched_at + 25.0  # it runs 25 s …
    clock.advance(100.0)  # … and the controller is back 100 s after the launch
    loop().run_pass()

    assert store.jobs.get("j1").state is JobState.SUCCEEDED
    (launch,) = store.ledger.launches("j1")
    assert launch.ended_at == launch.launched_at + 25.0
    billed = sum(store.ledger.job_costs(["j1"])["j1"].values(), Decimal(0))
    assert billed == Decimal("0.025000")  # 25 s at 3.6 $/h, not 100 s
    store.close()
