"""The simulator's side of dependencies and array throttles (``core.dependencies``).

The engine hands every arrival to ``Gatekeeper.arrive``; a gated job (dependencies, or an
array limit) is held there until ``core.dependencies.gate`` — the function the controller
calls too — lets it into the queue. The keeper remembers what ``gate`` needs: how the jobs
others wait for ended, and how many slots each throttled array has taken.

Ends are events: an on-prem end is reported by the cluster, but a cloud run's end is known
when it bursts, so the keeper keeps a heap of the cloud ends that matter (jobs someone waits
for, elements of throttled arrays) and the engine wakes at each. In a trace every job
succeeds, so ``afterok`` and ``afterany`` behave alike; the distinction is tested on the
controller, where jobs fail.

Invariants: a trace's dependencies name jobs of the trace and form no cycle (``check``); a
slot is taken when an element enters the queue and given back once, when it ends.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Sequence

from starburst.core.dependencies import find_cycle, gate, is_gated
from starburst.core.errors import ConfigError
from starburst.core.job import Job
from starburst.core.lifecycle import JobState


def check(jobs: Sequence[Job]) -> None:
    """A ConfigError for a dependency on a job not in the trace, or a dependency cycle."""
    ids = {j.id for j in jobs}
    for job in jobs:
        for dep in job.after:
            if dep.job_id not in ids:
                raise ConfigError(f"job {job.id} depends on job {dep.job_id}, not in the trace")
    cycle = find_cycle({j.id: [d.job_id for d in j.after] for j in jobs if j.after})
    if cycle is not None:
        raise ConfigError(f"dependency cycle: {' → '.join(cycle)}")


class Gatekeeper:
    """Held jobs, the ends that release them, and the slots of throttled arrays."""

    def __init__(self, jobs: Sequence[Job]) -> None:
        check(jobs)
        self._watched = {d.job_id for j in jobs for d in j.after}
        self._watched |= {j.id for j in jobs if j.array_limit is not None}
        self._throttled = {j.id: j.array for j in jobs if j.array_limit is not None}
        self._held: list[Job] = []
        self._ended: dict[str, JobState] = {}
        self._in_flight: dict[str, int] = {}
        self._cloud_ends: list[tuple[float, str]] = []
        self._changed = False

    def arrive(self, job: Job) -> bool:
        """Whether the job enters the queue now; a gated one is held until ``release``."""
        if not is_gated(job):
            return True
        self._held.append(job)
        self._changed = True
        return False

    def next_event(self, now: float) -> float:
        """When the keeper next has news: now, if an end it already knows may release a
        held job (a zero-length cloud run ends the instant it bursts), else the next cloud
        end it waits for."""
        if self._changed and self._held:
            return now
        return self._cloud_ends[0][0] if self._cloud_ends else math.inf

    def ended(self, job_id: str, at: float, now: float) -> None:
        """A job ends at ``at`` (in the future for a cloud run: it is noted when due)."""
        if job_id not in self._watched:
            return
        if at > now:
            heapq.heappush(self._cloud_ends, (at, job_id))
            return
        self._end(job_id)

    def release(self, now: float) -> list[Job]:
        """The held jobs that may enter the queue at ``now``, in (submit time, id) order."""
        while self._cloud_ends and self._cloud_ends[0][0] <= now:
            self._end(heapq.heappop(self._cloud_ends)[1])
        if not self._changed:
            return []
        self._changed = False
        result = gate(self._held, self._ended, self._in_flight)
        if result.cancelled:  # every trace job succeeds, so no afterok can fail
            raise RuntimeError(f"dependency cancelled a trace job: {result.cancelled[0][1]}")
        self._held = [job for job, _ in result.held]
        for job in result.eligible:
            if job.array is not None and job.array_limit is not None:
                self._in_flight[job.array] = self._in_flight.get(job.array, 0) + 1
        return result.eligible

    @property
    def holding(self) -> int:
        return len(self._held)

    def _end(self, job_id: str) -> None:
        self._ended[job_id] = JobState.SUCCEEDED
        array = self._throttled.get(job_id)
        if array is not None:
            self._in_flight[array] -= 1
        self._changed = True
