"""Replaying a trace through the live controller on virtual time.

The controller's own pass (``SchedulingLoop``: its store transitions, queue view, cloud
follower and Star-Wait pull-backs) runs over a fresh store, the simulator's cluster and cloud
(``SimCluster``, ``SimCloud``) and a virtual clock (``SimClock``). Nothing is simulated
around the controller: jobs are submitted to the store as users would, and the controller
decides and carries out everything itself.

Terms:
- *event*: an instant at which something may change: a job's arrival (it is submitted to the
  store then), an on-prem job's end, a cloud run's end, or the instant the controller asked to
  be woken (``PassReport.next_wakeup``: the next budget expiry or Star-Wait pull-back, or at
  once when more submissions wait than one pass admits).
- *virtual time*: the clock jumps from one event to the next; one pass runs at each event, so
  the controller sees every instant the simulator sees, and no other.

Invariants: time never goes backwards; every job of the trace ends (the replay raises
otherwise, as ``sim.engine`` does); the outcomes are read back from the controller's store
(its event log, placements and cloud launches), so they are what the controller recorded,
not a second bookkeeping of the decisions.

Parity: on the same trace, cluster and configuration, every start (instant and nodes), every
burst (instant) and every Star-Wait pull-back is the one ``starburst.sim.engine.simulate``
makes, for every policy, in and out of order (``tests/controller/test_parity.py`` checks it
over random traces; ``tests/controller/test_dependencies.py`` with dependencies and array
limits). The store is ``MemoryStore``: it keeps times as the floats they are, so instants
compare exactly.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from starburst.adapters.memory.store import MemoryStore
from starburst.controller.loop.report import PassReport
from starburst.controller.loop.scheduling import SchedulingLoop
from starburst.core.capacity import Node, describe_placement
from starburst.core.cycle import SchedulerConfig
from starburst.core.errors import ConfigError
from starburst.core.job import Job
from starburst.core.lifecycle import JobState
from starburst.core.ports import Estimate, JobReads, Ledger, Submissions
from starburst.core.records import JobEvent, JobSpec
from starburst.sim.clock import SimClock
from starburst.sim.cloud import SimCloud
from starburst.sim.cluster import SimCluster
from starburst.sim.engine import SimOptions, perturb_estimates
from starburst.sim.gating import check as check_dependencies
from starburst.sim.report import JobOutcome, SimResult

#: states a job has once it is decided and carried out: where it runs
_RUNS = {JobState.RUNNING_ONPREM: "onprem", JobState.BURSTING: "cloud"}
#: passes at one instant without the clock moving before the replay calls it a livelock
_STALL = 1_000


class TraceEstimator:
    """The controller's runtime estimator for a replay: what the trace says the policy sees
    (a job's estimate and band if it has them, else its runtime), as ``sim.engine`` uses."""

    def __init__(self, jobs: Sequence[Job]) -> None:
        self._jobs = {j.id: j for j in jobs}

    def estimate(self, jobs: Sequence[Job]) -> list[Estimate]:
        return [self._one(self._jobs[j.id]) for j in jobs]

    @staticmethod
    def _one(job: Job) -> Estimate:
        value = job.believed_runtime
        low = job.estimate_low if job.estimate_low is not None else value
        high = job.estimate_high if job.estimate_high is not None else value
        return Estimate(value, low, high, "trace")


class _Runtimes(Mapping[str, float]):
    """Trace runtimes by job id. A job's later cloud attempt (after a Star-Wait pull-back)
    is launched under ``cloudside.cloud_id``'s name ``<job id>~<attempt>``: the job's runtime."""

    def __init__(self, runtimes: dict[str, float]) -> None:
        self._runtimes = runtimes

    def __getitem__(self, key: str) -> float:
        if key in self._runtimes:
            return self._runtimes[key]
        job_id, mark, attempt = key.rpartition("~")
        if mark and attempt.isdigit() and job_id in self._runtimes:
            return self._runtimes[job_id]
        raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        return iter(self._runtimes)

    def __len__(self) -> int:
        return len(self._runtimes)


@dataclass(slots=True)
class ReplayStats:
    """How much work a replay did: the controller passes it ran."""

    passes: int = 0


def replay(
    jobs: Sequence[Job],
    nodes: Sequence[Node],
    config: SchedulerConfig,
    options: SimOptions | None = None,
    stats: ReplayStats | None = None,
) -> SimResult:
    """Run ``jobs`` through the live controller on virtual time; the simulator's result type.

    Same arguments and validation as ``starburst.sim.engine.simulate``.
    """
    options = options or SimOptions()
    jobs = _validated(perturb_estimates(jobs, options.estimate_error, options.seed))
    clock = SimClock(min((j.submit_time for j in jobs), default=0.0))
    runtimes = _Runtimes({j.id: j.runtime or 0.0 for j in jobs})
    cluster = SimCluster(nodes, clock, runtimes)
    cloud = SimCloud(clock, options.price_per_gpu_hour, options.cloud_startup_delay, runtimes)
    store = MemoryStore(clock=clock)
    loop = SchedulingLoop(
        store,
        cluster,
        cloud,
        clock,
        config,
        estimator=TraceEstimator(jobs),
        admissions_per_pass=max(len(jobs), 1),  # an instant's arrivals in one pass
        metering_chunk_s=3600.0,  # fewer ledger rows, the same amounts (``core.billing``)
    )
    VirtualTime(
        clock, cluster, cloud, store.submissions, loop.run_pass, stats or ReplayStats()
    ).run(jobs)
    outcomes = [_outcome(store.jobs, store.ledger, job) for job in jobs]
    return SimResult(outcomes, cluster.total_gpus, options.price_per_gpu_hour, config.describe())


def _validated(jobs: Sequence[Job]) -> list[Job]:
    for job in jobs:
        if job.runtime is None:
            raise ConfigError(f"job {job.id} has no runtime; a trace must give every runtime")
    if len({j.id for j in jobs}) != len(jobs):
        raise ConfigError("job ids must be unique within a trace")
    check_dependencies(jobs)  # as the simulator checks them
    return sorted(jobs, key=lambda j: (j.submit_time, j.id))


@dataclass(slots=True)
class VirtualTime:
    """A controller's passes over a trace, on a virtual clock: the event loop of ``replay``,
    for any pass (``SchedulingLoop.run_pass``, or the whole daemon's ``Controller.run_pass``
    where a test needs its metering and recalibration too). ``run`` may be called again with
    later jobs: the clock goes on from where it stopped."""

    clock: SimClock
    cluster: SimCluster
    cloud: SimCloud
    submissions: Submissions
    run_pass: Callable[[], PassReport]
    stats: ReplayStats = field(default_factory=ReplayStats)

    def run(self, jobs: Sequence[Job]) -> None:
        """Jump from event to event, submitting arrivals (``JobSpec.from_job``) and running
        one pass at each, until nothing is left to happen."""
        jobs = sorted(jobs, key=lambda j: (j.submit_time, j.id))
        i, wake, stalled, last = 0, math.inf, 0, math.nan
        while True:
            t = self._next_event(jobs[i].submit_time if i < len(jobs) else math.inf, wake)
            if t == math.inf:
                return
            stalled = stalled + 1 if t == last else 0  # passes at one instant in a row
            if stalled > _STALL:
                raise RuntimeError(f"the controller keeps asking to run again at {t}: a bug")
            self.clock.advance_to(t)
            arrived = i
            while arrived < len(jobs) and jobs[arrived].submit_time <= t:
                arrived += 1
            if arrived > i:
                self.submissions.submit_many([JobSpec.from_job(j) for j in jobs[i:arrived]], at=t)
                i = arrived
            wake, last = self.run_pass().next_wakeup, t
            self.stats.passes += 1

    def _next_event(self, arrival: float, wake: float) -> float:
        """The next instant anything happens; an end at or before now that the controller
        has not seen yet (a run of zero seconds) is now."""
        ends = (self.cluster.next_end(), self.cloud.next_finish())
        t = min(arrival, wake, *(math.inf if e is None else e for e in ends))
        return t if t == math.inf else max(t, self.clock.now())


def _outcome(jobs: JobReads, ledger: Ledger, job: Job) -> JobOutcome:
    """One job's outcome as the controller recorded it."""
    stored = jobs.get(job.id)
    if stored.state is not JobState.SUCCEEDED or stored.ended_at is None:
        raise RuntimeError(f"replay ended with job {job.id} {stored.state.value}: a bug")
    events = jobs.events(job.id)
    runs = [e for e in events if e.to_state in _RUNS]
    last = runs[-1]
    where = _RUNS[last.to_state]
    pulled_back = any(_pulled_back(e) for e in events)
    launches = ledger.launches(job.id)
    cloud_seconds = math.fsum((x.ended_at or x.launched_at) - x.launched_at for x in launches)
    placement = describe_placement(jobs.placement(job.id)) if where == "onprem" else ""
    bursts = [e.at for e in runs if e.to_state is JobState.BURSTING]
    return JobOutcome(
        job=job,
        where=f"cloud+{where}" if pulled_back else where,
        start=last.at,
        end=stored.ended_at,
        budget=stored.wait_budget if stored.wait_budget is not None else 0.0,
        cloud_gpu_seconds=job.gpus * cloud_seconds,
        placement=placement,
        reason="; ".join(_reasons(events)),
        first_burst=bursts[0] if bursts else None,
    )


def _pulled_back(event: JobEvent) -> bool:
    cloud = (JobState.BURSTING, JobState.RUNNING_CLOUD)
    return event.from_state in cloud and event.to_state is JobState.QUEUED


def _reasons(events: Sequence[JobEvent]) -> Iterator[str]:
    """The decisions' reasons (admission, starts, bursts, pull-backs), in order."""
    for e in events:
        if e.to_state in _RUNS or _pulled_back(e):
            yield e.reason
