"""A job running on-prem shows in the ledger while it runs, at its nodes' GPU type, and a
run across a month end is split there (the controller's ``OnpremMeter`` on virtual time)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from starburst.adapters.memory.store import MemoryStore
from starburst.controller.loop.scheduling import SchedulingLoop
from starburst.core.capacity import uniform_nodes
from starburst.core.cycle import SchedulerConfig
from starburst.core.lifecycle import JobState
from starburst.core.policy import PolicyKind, WaitPolicy
from starburst.core.records import JobSpec
from starburst.sim.cluster import SimCluster
from tests.support.clock import ManualClock

START = datetime(2026, 11, 30, 22, 0, tzinfo=UTC).timestamp()  # two hours before December
HOUR = 3600.0


def test_a_running_job_is_metered_by_its_nodes_type_and_split_at_the_month_end() -> None:
    clock = ManualClock(START)
    store = MemoryStore(clock=clock)
    cluster = SimCluster(uniform_nodes(1, 8, gpu_type="H100"), clock, {"long": 3 * HOUR})
    config = SchedulerConfig(WaitPolicy(PolicyKind.INFINITE), out_of_order=True)
    loop = SchedulingLoop(store, cluster, None, clock, config, metering_chunk_s=600.0)
    store.submissions.submit(JobSpec(id="long", gpus=4, command="true"))  # no GPU type asked for
    rates = {"H100": 3.0, "*": 1.0}

    def used() -> list[tuple[str | None, str | None, float, str]]:
        totals = store.ledger.cost_report(
            START - HOUR, START + 9 * HOUR, ("month", "gpu_type"), rates=rates
        )
        return [
            (t.key["month"], t.key["gpu_type"], t.onprem_gpu_hours, str(t.onprem_amount))
            for t in totals
        ]

    for _ in range(int(2.5 * HOUR / 60)):  # passes a minute apart, for 2.5 h
        loop.run_pass()
        clock.advance(60.0)
    assert store.jobs.get("long").state is JobState.RUNNING_ONPREM
    # by hand: November 22:00-24:00 = 4 GPUs × 2 h = 8 GPU-h at 3 $; December: 00:00 to the
    # last whole 10-minute chunk before 00:29 (00:20) = 4 × 1/3 h
    assert used() == [
        ("2026-11", "H100", 8.0, "24.000000"),
        ("2026-12", "H100", pytest.approx(4 / 3), "4.000000"),
    ]
    for _ in range(40):
        loop.run_pass()
        clock.advance(60.0)
    assert store.jobs.get("long").state is JobState.SUCCEEDED
    assert used() == [
        ("2026-11", "H100", 8.0, "24.000000"),
        ("2026-12", "H100", pytest.approx(4.0), "12.000000"),  # 00:00-01:00, to the end
    ]
