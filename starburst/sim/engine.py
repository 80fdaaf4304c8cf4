"""The event loop: jump to the next event, finish, pass, apply — the controller's cycle on a
simulated clock.

Events are arrivals, on-prem completions, wait-budget expiries, Star-Wait pull-backs and the
cloud ends that held jobs wait for. At each event time the engine (1) collects jobs that
ended by then (freeing GPUs), (2) turns pull-backs, arrivals and held jobs the gate releases
(``sim.gating``: dependencies, array throttles) into queue entries, (3) calls
``schedule_pass`` — which bursts expired budgets before it schedules, as docs/scheduling.md orders —
and (4) applies the decisions through the in-memory cluster and cloud ports.

Invariants: time never goes backwards; all heaps break ties with a sequence number or the
job id, so a trace and a seed always give the same outcomes; a job ends exactly once.
"""

from __future__ import annotations

import gc
import heapq
import math
from collections.abc import Callable, Sequence
from typing import Any

from starburst.core.capacity import Node, Placement, describe_placement
from starburst.core.cycle import SchedulerConfig, admit, schedule_pass
from starburst.core.decisions import Burst, Start
from starburst.core.dependencies import is_gated
from starburst.core.errors import ConfigError
from starburst.core.job import Job, QueuedJob
from starburst.core.queue_facts import QueueFacts
from starburst.core.star import pull_back_at, pull_back_reason, requeue
from starburst.sim.clock import SimClock
from starburst.sim.cloud import SimCloud
from starburst.sim.cluster import SimCluster
from starburst.sim.gating import Gatekeeper
from starburst.sim.options import SimOptions as SimOptions
from starburst.sim.report import OutcomeColumns, SimResult


def perturb_estimates(jobs: Sequence[Job], error: float, seed: int) -> list[Job]:
    """Estimates = runtime × (1 + U(−error, +error)); jobs keep any estimate they had.

    Each job's draw depends only on the seed and its id, so the input order (or which other
    jobs are in the trace) never changes a job's estimate.
    """
    if error == 0:
        return list(jobs)
    import random  # (here: a run without estimate errors does not pay for its import)

    out = []
    for job in jobs:
        factor = 1.0 + random.Random(f"{seed}:{job.id}").uniform(-error, error)
        if job.estimate is None and job.runtime is not None:
            job = job.with_estimate(max(0.0, job.runtime * factor))
        out.append(job)
    return out


class _Track:
    """What the engine remembers about one job while it is in flight.

    (A plain class, not a dataclass: private and never compared or printed, and generating
    a dataclass's methods is a measurable part of ``starburst simulate``'s start-up.)"""

    __slots__ = (
        "budget",
        "cloud_gpu_seconds",
        "first_burst",
        "job",
        "placement",
        "pulled_back",
        "reasons",
        "started_at",
    )

    def __init__(self, job: Job) -> None:
        self.job = job
        self.budget = 0.0
        self.pulled_back = False
        self.cloud_gpu_seconds = 0.0
        self.first_burst: float | None = None
        self.placement: Placement = ()  # (described when the outcomes are built)
        self.started_at = 0.0
        self.reasons: list[str] = []


class Simulation:
    def __init__(
        self,
        jobs: Sequence[Job],
        nodes: Sequence[Node],
        config: SchedulerConfig,
        options: SimOptions | None = None,
    ) -> None:
        self.options = options or SimOptions()
        self.config = config
        self.clock = SimClock(min((j.submit_time for j in jobs), default=0.0))
        self.cluster = SimCluster(nodes, self.clock)
        self.cloud = SimCloud(
            self.clock, self.options.price_per_gpu_hour, self.options.cloud_startup_delay
        )
        jobs = perturb_estimates(jobs, self.options.estimate_error, self.options.seed)
        self._arrivals = sorted(jobs, key=Job.submission_order)
        if len({j.id for j in jobs}) != len(jobs):
            raise ConfigError("job ids must be unique within a trace")
        #: whether any job is gated (dependencies, array throttles); without one the gate
        #: never holds, releases or waits for anything, so the loop skips asking it (and it
        #: keeps nothing of the jobs: there are no dependencies to check or follow)
        self._gated = any(is_gated(j) for j in jobs)
        self._gate = Gatekeeper(jobs if self._gated else ())
        self._tracks: dict[str, _Track] = {}
        self._queue: list[QueuedJob] = []
        #: what the last pass learnt of ``_queue``, handed to the next (``QueueFacts``): the
        #: engine carries out every start before the next pass, as the facts assume
        self._facts: QueueFacts | None = None
        self._deadlines: list[tuple[float, str]] = []
        self._pullbacks: list[tuple[float, str]] = []
        #: each job's outcome as it ends, a row of ``_OUTCOME_COLUMNS`` (built at the end)
        self._outcomes: list[tuple[object, ...]] = []
        self._waiting_ids: set[str] = set()
        self.passes = 0
        self.queued_seen = 0  # Σ queue length over passes: what a pass's scan costs

    def run(self) -> SimResult:
        """Run every job to its end. The loop makes no reference cycles (its garbage goes as
        its references drop; ``tests/sim/test_engine.py`` checks), so the cyclic collector
        would only walk the growing heap of jobs and outcomes again and again: it is off
        for the run (a sixth of the engine's time), and on again after if it was before."""
        collecting = gc.isenabled()
        gc.disable()
        try:
            return self._run()
        finally:
            if collecting:
                gc.enable()

    def _run(self) -> SimResult:
        arrivals, i, n = self._arrivals, 0, len(self._arrivals)
        tracks, gate, gated, policy = self._tracks, self._gate, self._gated, self.config.policy
        while True:
            t = self._next_event(arrivals[i].submit_time if i < n else math.inf)
            if t == math.inf:
                break
            self.clock.advance_to(t)
            for job_id, at in self.cluster.finish_due():
                self._finish_onprem(job_id, at)
            pullbacks = self._pullbacks
            fresh = self._pulled_back(t) if pullbacks and pullbacks[0][0] <= t else []
            while i < n and arrivals[i].submit_time <= t:
                job = arrivals[i]
                tracks[job.id] = _Track(job)
                if not gated or gate.arrive(job):
                    fresh.append(admit(job, policy, t))
                i += 1
            if gated:
                fresh += [admit(job, policy, t) for job in gate.release(t)]
            self._step(t, fresh)
        if len(self._outcomes) != n:
            lost = sorted(self._tracks)[:5]
            raise RuntimeError(
                f"simulation ended with {n - len(self._outcomes)} unfinished "
                f"job(s), e.g. {lost}: a scheduling bug"
            )
        rows = self._outcomes
        columns: dict[str, Sequence[object]] = {name: () for name in _OUTCOME_COLUMNS}
        if rows:  # each column: one field of every outcome
            columns = dict(zip(_OUTCOME_COLUMNS, zip(*rows, strict=True), strict=True))
        return SimResult(
            OutcomeColumns(n, columns, _FINISH),
            self.cluster.total_gpus,
            self.options.price_per_gpu_hour,
            self.config.describe(),
        )

    # -- events ----------------------------------------------------------------------------
    def _next_event(self, next_arrival: float) -> float:
        t = next_arrival
        end = self.cluster.next_end()
        if end is not None and end < t:
            t = end
        deadlines = self._deadlines
        while deadlines and deadlines[0][1] not in self._waiting_ids:
            heapq.heappop(deadlines)
        if deadlines and deadlines[0][0] < t:
            t = deadlines[0][0]
        if self._pullbacks and self._pullbacks[0][0] < t:
            t = self._pullbacks[0][0]
        return min(t, self._gate.next_event(self.clock.now())) if self._gated else t

    def _pulled_back(self, t: float) -> list[QueuedJob]:
        fresh = []
        while self._pullbacks and self._pullbacks[0][0] <= t:
            at, job_id = heapq.heappop(self._pullbacks)
            track = self._tracks[job_id]
            track.pulled_back = True
            track.reasons.append(pull_back_reason(self.config.policy))
            fresh.append(requeue(track.job, self.config.policy, at))
        return fresh

    def _step(self, t: float, fresh: list[QueuedJob]) -> None:
        self.passes += 1
        waiting_ids = self._waiting_ids
        for entry in fresh:
            job_id = entry.job.id
            self._tracks[job_id].budget = entry.budget
            waiting_ids.add(job_id)
            if math.isfinite(entry.deadline) and entry.deadline > t:
                heapq.heappush(self._deadlines, (entry.deadline, job_id))
        capacity = self.cluster.capacity
        result = schedule_pass(
            t, self._queue, fresh, capacity, self.config, facts=self._facts, keep_starts=True
        )
        for start in result.starts:
            waiting_ids.discard(start.job_id)
            self._start(start, t)
        for burst in result.bursts:
            waiting_ids.discard(burst.job_id)
            self._burst(burst, t)
        self._queue, self._facts = result.waiting, result.facts
        self.queued_seen += len(result.waiting)

    # -- applying decisions ----------------------------------------------------------------
    def _start(self, start: Start, t: float) -> None:
        track = self._tracks[start.job_id]
        track.reasons.append(start.reason)
        self.cluster.start(start.job, start.placement, start.reason, allocated=True)
        track.placement = start.placement
        track.started_at = t

    def _burst(self, burst: Burst, t: float) -> None:
        track = self._tracks[burst.job_id]
        job = track.job
        track.reasons.append(burst.reason)
        if track.first_burst is None:
            track.first_burst = t
        runtime = job.runtime or 0.0
        pull_at = pull_back_at(self.config.policy, t, track.pulled_back)
        delay = self.options.cloud_startup_delay
        # as the controller does: pulled back the threshold after the burst (start-up
        # included) if still running then; it ran what the start-up left of the stint
        if pull_at is not None and delay + runtime > self.config.policy.star_threshold:
            stint = max(0.0, self.config.policy.star_threshold - delay)
            self.cloud.launch(job, burst.reason, run_for=stint)
            track.cloud_gpu_seconds += job.gpus * stint
            heapq.heappush(self._pullbacks, (pull_at, job.id))
            return
        handle = self.cloud.launch(job, burst.reason)
        track.cloud_gpu_seconds += job.gpus * runtime
        end = self.cloud.finish_time(handle)
        self._record(track, "cloud", t, end)

    def _finish_onprem(self, job_id: str, at: float) -> None:
        track = self._tracks[job_id]
        self._record(track, "onprem", track.started_at, at)

    def _record(self, track: _Track, where: str, start: float, end: float) -> None:
        if self._gated:
            self._gate.ended(track.job.id, end, self.clock.now())
        if track.pulled_back:
            where = f"cloud+{where}"
        self._outcomes.append(  # (one row of ``_OUTCOME_COLUMNS``)
            (
                track.job,
                where,
                start,
                end,
                track.budget,
                track.cloud_gpu_seconds,
                track.placement,
                track.reasons,
                track.first_burst,
            )
        )
        del self._tracks[track.job.id]


#: the fields of a ``JobOutcome`` the engine records for each job, in the order of its rows
_OUTCOME_COLUMNS = (
    "job",
    "where",
    "start",
    "end",
    "budget",
    "cloud_gpu_seconds",
    "placement",
    "reason",
    "first_burst",
)
#: the columns recorded raw, each made the outcome's field when the outcomes are built (a
#: summary reads neither): the placement described, the reasons joined
_FINISH: dict[str, Callable[[Any], object]] = {
    "placement": describe_placement,
    "reason": "; ".join,
}


def simulate(
    jobs: Sequence[Job],
    nodes: Sequence[Node],
    config: SchedulerConfig,
    options: SimOptions | None = None,
) -> SimResult:
    """Run ``jobs`` through the decision core on a cluster of ``nodes``."""
    for job in jobs:
        if job.runtime is None:
            raise ConfigError(f"job {job.id} has no runtime; a trace must give every runtime")
    return Simulation(jobs, nodes, config, options).run()
