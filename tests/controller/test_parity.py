"""The live controller makes exactly the simulator's decisions on the same trace.

The controller runs with the SQL store (SQLite), the simulator's in-memory cluster and cloud,
and a clock the test steps from event to event (arrival, on-prem completion, or the instant the
controller asks to be woken: a budget expiry or a Star-Wait pull-back). Every start (time and
nodes) and every burst (time) must match ``starburst.sim.engine.simulate`` job by job.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from starburst.adapters.db import migrate
from starburst.adapters.db.store import SqlStore
from starburst.controller.scheduling import SchedulingLoop
from starburst.core.capacity import describe_placement, uniform_nodes
from starburst.core.cycle import SchedulerConfig
from starburst.core.job import Job
from starburst.core.lifecycle import JobState
from starburst.core.policy import PolicyKind, WaitPolicy
from starburst.core.ports import Estimate
from starburst.core.records import JobSpec
from starburst.sim.cloud import SimCloud
from starburst.sim.cluster import SimCluster
from starburst.sim.engine import simulate
from starburst.sim.synthetic import Workload, generate

EPOCH = 1_780_000_000.0  # the store keeps datetimes; keep the trace in this century


class SteppedClock:
    def __init__(self) -> None:
        self.t = EPOCH

    def now(self) -> float:
        return self.t


class Oracle:
    def __init__(self, runtimes: dict[str, float]) -> None:
        self.runtimes = runtimes

    def estimate(self, jobs: list[Job]) -> list[Estimate]:  # type: ignore[override]
        return [
            Estimate(self.runtimes[j.id], self.runtimes[j.id], self.runtimes[j.id], "oracle")
            for j in jobs
        ]


def band_factor(job_id: str) -> float:
    """A job-specific p90/p50 ratio (1.5 … 7.5), so the band changes budgets job by job."""
    return 1.5 + 2.0 * (sum(map(ord, job_id)) % 4)


class BandedOracle(Oracle):
    """The true runtime with a band around it: what ``compute-expected`` budgets from."""

    def estimate(self, jobs: list[Job]) -> list[Estimate]:  # type: ignore[override]
        return [
            Estimate(
                self.runtimes[j.id],
                self.runtimes[j.id] / band_factor(j.id),
                self.runtimes[j.id] * band_factor(j.id),
                "banded",
            )
            for j in jobs
        ]


def banded(job: Job) -> Job:
    runtime, factor = job.runtime or 0.0, band_factor(job.id)
    return job.with_estimate(runtime, runtime / factor, runtime * factor)


def trace(seed: int) -> list[Job]:
    raw = generate(Workload(120, 24, load=1.3, cv=2.0, mean_runtime=1800, seed=seed))
    # millisecond times: the store keeps microseconds; instants are compared to 0.1 ms, the
    # float resolution of epoch seconds
    return [
        Job(j.id, EPOCH + round(j.submit_time, 3), j.gpus, runtime=round(j.runtime or 1, 3))
        for j in raw
    ]


def drive(
    jobs: list[Job],
    config: SchedulerConfig,
    tmp: Path,  # type: ignore[type-arg]
    oracle: type[Oracle] = Oracle,
) -> dict[str, tuple]:
    url = f"sqlite:///{tmp / 'parity.db'}"
    migrate.upgrade(url)
    clock = SteppedClock()
    store = SqlStore.open(url, clock=clock)
    runtimes = {j.id: j.runtime or 0.0 for j in jobs}
    cluster = SimCluster(uniform_nodes(3, 8), clock, runtimes)
    cloud = SimCloud(clock, 2.5, runtimes=runtimes)
    loop = SchedulingLoop(store, cluster, cloud, clock, config, estimator=oracle(runtimes))
    pending = sorted(jobs, key=lambda j: (j.submit_time, j.id))
    decisions: dict[str, tuple] = {}  # type: ignore[type-arg]
    wake = math.inf
    try:
        while True:
            candidates = [wake, cluster.next_end() or math.inf, cloud.next_finish() or math.inf]
            if pending:
                candidates.append(pending[0].submit_time)
            t = min(candidates)
            if t == math.inf:
                break
            clock.t = t
            while pending and pending[0].submit_time <= t:
                job = pending.pop(0)
                store.submit(JobSpec(id=job.id, gpus=job.gpus), at=job.submit_time)
            report = loop.run_pass()
            for job_id in report.started:
                placement = describe_placement(store.placement(job_id))
                decisions[job_id] = ("onprem", round(t - EPOCH, 4), placement)
            for job_id in report.burst:  # the last burst is where the job ran
                decisions[job_id] = ("cloud", round(t - EPOCH, 4), "")
            wake = report.next_wakeup
        assert store.count(JobState.QUEUED) == 0 and store.count(JobState.SUBMITTED) == 0
        return decisions
    finally:
        store.close()


def expected(
    jobs: list[Job],
    config: SchedulerConfig,  # type: ignore[type-arg]
    band: bool = False,
) -> dict[str, tuple]:
    shifted = [Job(j.id, j.submit_time - EPOCH, j.gpus, runtime=j.runtime) for j in jobs]
    shifted = [banded(j) for j in shifted] if band else shifted
    out = {}
    for o in simulate(shifted, uniform_nodes(3, 8), config).outcomes:
        if o.where.endswith("onprem"):
            out[o.job.id] = ("onprem", round(o.start, 4), o.placement)
        else:
            out[o.job.id] = ("cloud", round(o.start, 4), "")
    return out


CONFIGS = {
    "starburst": lambda jobs: SchedulerConfig(
        WaitPolicy.from_budget(PolicyKind.COMPUTE, 0.25, jobs), out_of_order=True, queue_cap=6
    ),
    "constant-in-order": lambda jobs: SchedulerConfig(
        WaitPolicy.from_budget(PolicyKind.CONSTANT, 0.3, jobs)
    ),
    "no-wait": lambda jobs: SchedulerConfig(WaitPolicy(PolicyKind.NO_WAIT)),
    "star-wait": lambda jobs: SchedulerConfig(
        WaitPolicy.from_budget(PolicyKind.STAR, 1.0, jobs), out_of_order=True
    ),
}


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_controller_decisions_match_the_simulator(name: str, tmp_path: Path) -> None:
    jobs = trace(seed=7)
    config = CONFIGS[name]([j.with_estimate(j.runtime or 0) for j in jobs])
    live = drive(jobs, config, tmp_path)
    sim = expected(jobs, config)
    assert live.keys() == sim.keys()
    mismatched = {j: (live[j], sim[j]) for j in sim if live[j] != sim[j]}
    assert not mismatched
    assert any(d[0] == "cloud" for d in sim.values()) and any(
        d[0] == "onprem" for d in sim.values()
    )


def test_controller_passes_the_estimate_band_to_compute_expected(tmp_path: Path) -> None:
    jobs = trace(seed=7)
    config = SchedulerConfig(
        WaitPolicy.from_budget(PolicyKind.COMPUTE_EXPECTED, 0.25, [banded(j) for j in jobs]),
        out_of_order=True,
        queue_cap=6,
    )
    live = drive(jobs, config, tmp_path, BandedOracle)
    sim = expected(jobs, config, band=True)
    assert live == sim
    # the band matters: without it (plain Compute-Wait budgets) the decisions differ
    assert sim != expected(jobs, config)
