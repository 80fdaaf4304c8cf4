"""``LocalCluster``: the private cluster as this one machine, its GPUs as numbered slots.

The default cluster when none is configured (quick-start, demos, a lab workstation). It
implements the core's ``Cluster`` port with real processes (see ``processes.py`` for the
command/env convention in ``Job.extra`` and ``statedir.py`` for the state directory layout).

Terms:
- *node*: the single node ``node_name`` with ``gpus`` GPU slots (and optional CPU/memory
  totals; 0 means "not tracked", as in the capacity index).
- *slot*: a GPU index 0..gpus-1. A started job gets the lowest free slots, exported as
  ``CUDA_VISIBLE_DEVICES`` (through ``devices`` when the machine's device ids differ), so
  two jobs never see the same GPU. A job that asks for 0 GPUs sees none (the variable is empty).
  The slots are in the spawn record, so an adopted job keeps its GPUs.
- *life*: one ``LocalCluster`` object. The controller may be SIGKILLed and a new life built
  on the same ``state_dir`` while the jobs (each in its own session) run on.
- *adopt*: take over a job an earlier life spawned, from its spawn record.
- *output cap*: a job keeps at most ``output_max_bytes`` of output in its log, the rest is
  dropped with a line saying so (``outputcap.py``).
- *job users*: given ``users`` (the controller is root), every job runs as a uid of its own
  for as long as it runs (``jobusers.py``), recorded in its spawn record so an adopted job
  keeps it; without, jobs run as this process's user (``isolation.py``).

Restart safety — a job is never run twice and never lost:
- A job is *spawned* iff its directory holds a spawn record whose process ran the command
  (``processes.adopt``). ``start`` adopts such a job — running, or ended while nobody
  watched (then its real outcome is reported by ``ended``) — and spawns only otherwise.
- A new life adopts at once every job of an earlier life that still runs, so ``snapshot``
  shows it and its slots are never given to another job; jobs that already ended wait for
  the controller's ``start`` (it re-issues the starts its database records), so an old end is
  reported only to a controller that still thinks the job runs.
- ``started_at`` is the recorded spawn time; an end found (not seen) is dated by when its
  exit status was written.

Prompt ends: once the controller subscribes, an ``EndWatch`` calls its listener as soon as a
running job's process ends, so the next pass (which reports the end and frees the GPUs) comes
at once instead of at the next tick.

Invariants: ``start`` is idempotent (a job id that is running or has run is not started
again) and returns as soon as the process exists; ``snapshot`` and ``ended`` only look at
process state and never wait; a job's slots are free again exactly when its end is reported
by ``ended`` (each end exactly once per life, cancelled jobs included, with reason);
placements must name this node, else ``PermanentError``; a stale placement that no longer
fits raises ``TransientError`` (retry on the next pass).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from starburst.adapters.local.jobusers import JobUsers
from starburst.adapters.local.processes import (
    DEFAULT_OUTPUT_MAX,
    JobProcess,
    adopt,
    spawn,
    spawn_record,
)
from starburst.adapters.local.statedir import (
    LOG,
    job_dirname,
    job_from_json,
    job_to_json,
    read_tail,
)
from starburst.adapters.local.watch import EndWatch
from starburst.core import time_limit
from starburst.core.capacity import CapacityIndex, Node, Part, Placement
from starburst.core.errors import PermanentError, TransientError
from starburst.core.failure import with_output
from starburst.core.job import Job
from starburst.core.ports import Clock, ClusterSnapshot, JobEnded, RunningJob
from starburst.wallclock import WallClock

BACKEND = "local-cluster"


@dataclass(slots=True)
class _Running:
    running: RunningJob
    process: JobProcess
    slots: tuple[int, ...]
    timed_out: bool = False


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
        users: JobUsers | None = None,
        output_max_bytes: int = DEFAULT_OUTPUT_MAX,
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
        self._users = users
        self._output_max = output_max_bytes
        self._slots: list[str | None] = [None] * gpus
        self._running: dict[str, _Running] = {}
        self._done: dict[str, JobProcess] = {}
        self._unreported: list[JobEnded] = []
        self._watch = EndWatch()
        self._adopt_still_running()

    def subscribe(self, listener: Callable[[], None]) -> None:
        """``ChangeNotifier``: call ``listener`` (from a watcher thread) soon after a running
        job's process ends."""
        running = self._running.values()
        self._watch.listen(listener, ((r.process.pid, r.process.token) for r in running))

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
        record = spawn_record(self.state_dir, job.id)
        if record is not None and record.get("backend") == BACKEND and self._adopt(record):
            return
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
        started = RunningJob(job, placement, self._clock.now())
        record = {
            "backend": BACKEND,
            "job": job_to_json(job),
            "placement": [asdict(part) for part in placement],
            "slots": list(slots),
            "visible": visible,
            "spawned_at": started.started_at,
        }
        env = {"CUDA_VISIBLE_DEVICES": visible}
        process = spawn(
            job,
            self.state_dir,
            env,
            header,
            record,
            self._grace,
            self._users,
            output_max=self._output_max,
        )
        self._track(started, process, slots)

    def cancel(self, job_id: str) -> None:
        entry = self._running.get(job_id)
        if entry is not None:
            entry.process.kill()

    def ended(self) -> Sequence[JobEnded]:
        self._reap()
        reported, self._unreported = self._unreported, []
        return reported

    # -- more than the port: what the CLI and tests look at --------------------------------
    def job_logs(self, job: Job, tail: int | None = None) -> str:
        """``LogSource``: the job's output file; with ``tail``, its newest lines, read from
        the file's end (a tail costs what those lines are, not what the log is)."""
        return self.logs(job.id, tail)

    def logs(self, job_id: str, tail: int | None = None) -> str:
        process = self.process(job_id)
        if process is not None:
            return process.logs(tail)
        return read_tail(self.state_dir / job_dirname(job_id) / LOG, tail)

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

    def _adopt_still_running(self) -> None:
        """Take over every job an earlier life spawned that still runs (see the docstring)."""
        if not self.state_dir.is_dir():
            return
        for directory in sorted(self.state_dir.iterdir()):
            record = spawn_record(self.state_dir, directory.name)
            if record is None or record.get("backend") != BACKEND:
                continue
            job = job_from_json(record["job"])
            if job_dirname(job.id) == directory.name and job.id not in self._running:
                self._adopt(record, if_ended=False)

    def _adopt(self, record: Mapping[str, Any], *, if_ended: bool = True) -> bool:
        """Take over the earlier spawn in ``record``; False if it never ran (or ended and
        ``if_ended`` is False)."""
        job = job_from_json(record["job"])
        process = adopt(self.state_dir, job.id, record, self._grace, self._users)
        if process is None:
            return False
        placement = tuple(Part(**part) for part in record["placement"])
        started = RunningJob(job, placement, float(record["spawned_at"]))
        outcome = process.poll()
        if outcome is None:
            self._track(started, process, tuple(int(i) for i in record["slots"]))
            return True
        if not if_ended:
            return False
        self._done[job.id] = process
        at = max(started.started_at, self._clock.now() - process.ended_ago)
        self._unreported.append(JobEnded(job.id, at, outcome.succeeded, process.failure(outcome)))
        return True

    def _track(self, started: RunningJob, process: JobProcess, slots: tuple[int, ...]) -> None:
        for i in slots:
            if i < len(self._slots):  # an earlier life may have had more slots
                self._slots[i] = started.job.id
        self._running[started.job.id] = _Running(started, process, slots)
        self._watch.add(process.pid, process.token)

    def _reap(self) -> None:
        now = self._clock.now()
        for job_id in list(self._running):
            entry = self._running[job_id]
            running = entry.running
            if not entry.timed_out and time_limit.expired(running.job, running.started_at, now):
                entry.timed_out = True  # killed like a cancel; reported as its own failure
                entry.process.kill()
            outcome = entry.process.poll()
            if outcome is None:
                continue
            del self._running[job_id]
            self._done[job_id] = entry.process
            for i in entry.slots:
                if i < len(self._slots):
                    self._slots[i] = None
            why = entry.process.failure(outcome)
            if entry.timed_out:
                why = with_output(time_limit.reason(running.job), entry.process.output_tail())
            ended = JobEnded(
                job_id, self._clock.now(), outcome.succeeded and not entry.timed_out, why
            )
            self._unreported.append(ended)
