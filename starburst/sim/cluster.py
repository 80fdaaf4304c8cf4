"""The simulator's private cluster: the core's ``Cluster`` port kept in memory.

Jobs run for their trace runtime. ``start`` is idempotent; ``ended()`` returns the jobs whose
runtime elapsed by the clock's current time, in end order (ties by job id), and frees their
GPUs. The capacity index is maintained incrementally, so no operation scans every node.
"""

from __future__ import annotations

import heapq
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from starburst.core.capacity import CapacityIndex, Node, Placement
from starburst.core.errors import ConfigError
from starburst.core.job import Job
from starburst.core.port_values import ClusterSnapshot, JobEnded, RunningJob

if TYPE_CHECKING:
    from starburst.core.ports import Clock


class SimCluster:
    def __init__(
        self, nodes: Sequence[Node], clock: Clock, runtimes: Mapping[str, float] | None = None
    ) -> None:
        """``runtimes`` supplies the trace runtime of jobs that arrive without one (the live
        controller's jobs, when it is driven over a trace)."""
        self.capacity = CapacityIndex(nodes)
        self._runtimes = runtimes if runtimes is not None else {}
        self._clock = clock
        #: job id → (job, placement, started at): a ``RunningJob``'s fields, made one only
        #: for a snapshot (a tuple per start, not a frozen value the engine never reads)
        self._running: dict[str, tuple[Job, Placement, float]] = {}
        self._ends: list[tuple[float, str]] = []
        self.gpu_seconds = 0.0

    @property
    def total_gpus(self) -> int:
        return self.capacity.total_gpus

    def snapshot(self) -> ClusterSnapshot:
        return ClusterSnapshot(self.capacity, _RunningView(self._running), self._clock.now())

    def start(
        self, job: Job, placement: Placement, reason: str = "", *, allocated: bool = False
    ) -> None:
        """Run the job on the placement. ``allocated``: the placement is taken on
        ``capacity`` already (a pass that kept its starts, ``schedule_pass(keep_starts=True)``)."""
        if job.id in self._running:
            return
        runtime = job.runtime
        if runtime is None:
            runtime = self._runtimes.get(job.id)
            if runtime is None:
                raise ConfigError(f"job {job.id} has no runtime; the simulator needs one")
            job = replace(job, runtime=runtime)
        now = self._clock.now()
        if not allocated:
            self.capacity.allocate(placement)
        self._running[job.id] = (job, placement, now)
        heapq.heappush(self._ends, (now + runtime, job.id))

    def cancel(self, job_id: str) -> None:
        running = self._running.pop(job_id, None)
        if running is not None:
            self.capacity.release(running[1])

    def next_end(self) -> float | None:
        while self._ends and self._ends[0][1] not in self._running:
            heapq.heappop(self._ends)
        return self._ends[0][0] if self._ends else None

    def ended(self) -> list[JobEnded]:
        return [JobEnded(job_id, at, True) for job_id, at in self.finish_due()]

    def finish_due(self) -> list[tuple[str, float]]:
        """``ended`` as (job id, end time) pairs: the engine's loop, which needs no more."""
        now = self._clock.now()
        done: list[tuple[str, float]] = []
        ends = self._ends
        while ends and ends[0][0] <= now:
            at, job_id = heapq.heappop(ends)
            running = self._running.pop(job_id, None)
            if running is None:
                continue  # cancelled earlier
            job, placement, started_at = running
            self.capacity.release(placement)
            self.gpu_seconds += job.gpus * (at - started_at)
            done.append((job_id, at))
        return done

    def running_count(self) -> int:
        return len(self._running)


class _RunningView(Collection[RunningJob]):
    """The running jobs as ``RunningJob`` values, each made as it is read (the cluster keeps
    their fields as tuples); live, as the dict's values view it stands for."""

    __slots__ = ("_running",)

    def __init__(self, running: Mapping[str, tuple[Job, Placement, float]]) -> None:
        self._running = running

    def __len__(self) -> int:
        return len(self._running)

    def __iter__(self) -> Iterator[RunningJob]:
        return (RunningJob(*fields) for fields in self._running.values())

    def __contains__(self, item: object) -> bool:
        if not isinstance(item, RunningJob):
            return False
        return self._running.get(item.job.id) == (item.job, item.placement, item.started_at)
