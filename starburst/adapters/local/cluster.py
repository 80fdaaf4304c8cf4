"""``LocalCluster``: the private cluster as this one machine, its GPUs as numbered slots.

The default cluster when none is configured (quick-start, demos, a lab workstation). It
implements the core's ``Cluster`` port with real processes (see ``processes.py`` for the
command/env convention in ``Job.extra`` and the state directory layout).

Terms:
- *node*: the single node ``node_name`` with ``gpus`` GPU slots (and optional CPU/memory
  totals; 0 means "not tracked", as in the capacity index).
- *slot*: a GPU index 0..gpus-1. A started job gets the lowest free slots, exported as
  ``CUDA_VISIBLE_DEVICES`` (through ``devices`` when the machine's device ids differ), so
  two jobs never see the same GPU. A job that asks for 0 GPUs sees none (the variable is empty).

Invariants: ``start`` is idempotent (a job id that is running or has run is not started
again) and returns as soon as the process exists; ``snapshot`` and ``ended`` only look at
process state and never wait; a job's slots are free again exactly when its end is reported
by ``ended`` (each end exactly once, cancelled jobs included, with reason); placements must
name this node, else ``PermanentError``; a stale placement that no longer fits raises
``TransientError`` (retry on the next pass).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from starburst.adapters.local.processes import JobProcess, spawn
from starburst.core.capacity import CapacityIndex, Node, Placement
from starburst.core.errors import PermanentError, TransientError
from starburst.core.job import Job
from starburst.core.ports import Clock, ClusterSnapshot, JobEnded, RunningJob


class WallClock:
    """The live clock: seconds since the epoch."""

    def now(self) -> float:
        return time.time()


@dataclass(slots=True)
class _Running:
    running: RunningJob
    process: JobProcess
    slots: tuple[int, ...]


class LocalCluster:
    """Runs on-prem jobs as process groups on this machine (``Cluster`` port)."""

    def __init__(
        self,
        state_dir: str | Path,
        gpus: int,
        *,
        cpus: float = 0.0,
        memory_mb: float = 0.0,
        gpu_type: str = "gpu",
        node_name: str = "local",
        devices: Sequence[str] | None = None,
        clock: Clock | None = None,
        grace: float = 5.0,
    ) -> None:
        if gpus < 0:
            raise PermanentError("a local cluster cannot have a negative number of GPU slots")
        if devices is not None and len(devices) != gpus:
            raise PermanentError(f"{len(devices)} device ids given for {gpus} GPU slots")
        self.state_dir = Path(state_dir)
        self.node = Node(node_name, gpus, cpus, memory_mb, gpu_type)
        self._devices = list(devices) if devices is not None else [str(i) for i in range(gpus)]
        self._clock: Clock = clock or WallClock()
        self._grace = grace
        self._slots: list[str | None] = [None] * gpus
        self._running: dict[str, _Running] = {}
        self._done: dict[str, JobProcess] = {}
        self._unreported: list[JobEnded] = []

    # -- the Cluster port --------------------------------------------------------------------
    def snapshot(self) -> ClusterSnapshot:
        self._reap()
        capacity = CapacityIndex([self.node])
        running = [r.running for r in self._running.values()]
        for job in running:
            capacity.allocate(job.placement)
        return ClusterSnapshot(capacity, running, self._clock.now())

    def start(self, job: Job, placement: Placement, reason: str) -> None:
        if job.id in self._running or job.id in self._done:
            return
        self._reap()
        self._check_placement(job, placement)
        free = [i for i, owner in enumerate(self._slots) if owner is None]
        if len(free) < job.gpus:
            raise TransientError(
                f"job {job.id} needs {job.gpus} GPU slots, {len(free)} are free on {self.node.name}"
            )
        slots = tuple(free[: job.gpus])
        visible = ",".join(self._devices[i] for i in slots)
        header = f"# starburst local: job {job.id} on {self.node.name} GPUs [{visible}]: {reason}"
        if image := job.extra.get("image"):
            header += f" (image {image} not used: runs on the host)"
        process = spawn(job, self.state_dir, {"CUDA_VISIBLE_DEVICES": visible}, header, self._grace)
        for i in slots:
            self._slots[i] = job.id
        started = RunningJob(job, placement, self._clock.now())
        self._running[job.id] = _Running(started, process, slots)

    def cancel(self, job_id: str) -> None:
        entry = self._running.get(job_id)
        if entry is not None:
            entry.process.kill()

    def ended(self) -> Sequence[JobEnded]:
        self._reap()
        reported, self._unreported = self._unreported, []
        return reported

    # -- more than the port: what the CLI and tests look at --------------------------------
    def logs(self, job_id: str) -> str:
        process = self.process(job_id)
        return process.logs() if process is not None else ""

    def process(self, job_id: str) -> JobProcess | None:
        entry = self._running.get(job_id)
        return entry.process if entry is not None else self._done.get(job_id)

    def slots_of(self, job_id: str) -> tuple[int, ...]:
        entry = self._running.get(job_id)
        return entry.slots if entry is not None else ()

    # -- internals --------------------------------------------------------------------------
    def _check_placement(self, job: Job, placement: Placement) -> None:
        wrong = [p.node_name for p in placement if p.node_name != self.node.name or p.node != 0]
        if wrong:
            raise PermanentError(
                f"job {job.id} was placed on {', '.join(wrong)}; this local cluster has only "
                f"node {self.node.name}"
            )
        placed = sum(p.gpus for p in placement)
        if placed != job.gpus:
            raise PermanentError(f"job {job.id} asks {job.gpus} GPUs but was placed on {placed}")

    def _reap(self) -> None:
        for job_id in list(self._running):
            entry = self._running[job_id]
            outcome = entry.process.poll()
            if outcome is None:
                continue
            del self._running[job_id]
            self._done[job_id] = entry.process
            for i in entry.slots:
                self._slots[i] = None
            self._unreported.append(
                JobEnded(job_id, self._clock.now(), outcome.succeeded, outcome.reason)
            )
