"""A deliberately naive second implementation of the scheduling semantics.

It shares nothing with the decision core but the ``Job``/``Node`` values and the policy's
budget formula: placement scans every node for every job, the queue is re-sorted at every
event, and finished jobs are found by scanning everything that runs — the cost profile of the
published artifact's simulator (queue length × running jobs per event). It exists for two
reasons: differential tests check that the fast engine makes exactly the same decisions on
random traces, and ``bench/sim_speed.py`` uses it as the in-process baseline.

Dependencies and array throttles (``core.dependencies``) are re-derived from the outcomes
decided so far: a job is released once every job it waits for has an outcome that ended by
now, and while fewer than its array's limit of admitted elements have not ended.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

from starburst.core.capacity import Node
from starburst.core.job import Job
from starburst.core.policy import PolicyKind, WaitPolicy


@dataclass(slots=True)
class RefOutcome:
    job_id: str
    where: str
    start: float
    end: float
    cloud_gpu_seconds: float
    nodes: tuple[str, ...]


#: one part of a placement: (node index, GPUs, CPUs)
Parts = list[tuple[int, int, float]]


class Queued(NamedTuple):
    """A job in the queue; entries sort as the queue is ordered (arrival, then submission:
    submit time, array index, id)."""

    queued_at: float
    tie: tuple[float, int, str]
    job: Job
    deadline: float  # when its budget runs out and it bursts (inf: never)


def _tie(job: Job) -> tuple[float, int, str]:
    return (job.submit_time, -1 if job.array_index is None else job.array_index, job.id)


class Running(NamedTuple):
    end: float
    job: Job
    parts: Parts
    start: float


def _split(gpus: int, largest: int) -> list[int]:
    if gpus <= largest or largest == 0:
        return [gpus]
    parts = [largest] * (gpus // largest)
    return [*parts, gpus % largest] if gpus % largest else parts


def _place(
    job: Job, nodes: Sequence[Node], free: list[int], free_cpu: list[float], best_fit: bool
) -> Parts | None:
    eligible = [
        i
        for i, n in enumerate(nodes)
        if n.schedulable and (job.gpu_type is None or n.gpu_type == job.gpu_type)
    ]
    largest = max((nodes[i].gpus for i in eligible), default=0)
    trial, trial_cpu = list(free), list(free_cpu)
    parts = []
    for size in _split(job.gpus, largest):
        cpus = job.cpus * size / job.gpus if job.gpus else job.cpus
        fits = [
            i
            for i in eligible
            if trial[i] >= size and (not cpus or not nodes[i].cpus or trial_cpu[i] + 1e-9 >= cpus)
        ]
        if not fits:
            return None
        i = min(fits, key=lambda i: (trial[i] - size, i)) if best_fit else fits[0]
        trial[i] -= size
        trial_cpu[i] -= cpus
        parts.append((i, size, cpus))
    return parts


def reference_simulate(  # noqa: C901 - one readable loop is the point of this module
    jobs: Sequence[Job],
    nodes: Sequence[Node],
    policy: WaitPolicy,
    out_of_order: bool = False,
    queue_cap: int | None = None,
    best_fit: bool = False,
) -> dict[str, RefOutcome]:
    free = [n.gpus if n.schedulable else 0 for n in nodes]
    free_cpu = [n.cpus for n in nodes]
    pending = sorted(jobs, key=_tie)
    queue: list[Queued] = []
    running: list[Running] = []
    pullbacks: list[tuple[float, Job]] = []
    pulled: set[str] = set()
    cloud: dict[str, float] = {}
    out: dict[str, RefOutcome] = {}
    star = policy.kind is PolicyKind.STAR

    def burst(job: Job, t: float) -> None:
        runtime = job.runtime or 0.0
        if star and job.id not in pulled and runtime > policy.star_threshold:
            cloud[job.id] = cloud.get(job.id, 0.0) + job.gpus * policy.star_threshold
            pullbacks.append((t + policy.star_threshold, job))
            return
        cloud[job.id] = cloud.get(job.id, 0.0) + job.gpus * runtime
        where = "cloud+cloud" if job.id in pulled else "cloud"
        out[job.id] = RefOutcome(job.id, where, t, t + runtime, cloud[job.id], ())

    def never_fits(job: Job) -> bool:
        if not any(n.schedulable for n in nodes):
            return False  # no node takes work: nothing is proven about the future
        empty = [n.gpus if n.schedulable else 0 for n in nodes]
        return _place(job, nodes, empty, [n.cpus for n in nodes], best_fit) is None

    held: list[Job] = []
    admitted: list[Job] = []  # throttled array elements that entered the queue
    t = -math.inf

    def ended_by(job_id: str, when: float) -> bool:
        return job_id in out and out[job_id].end <= when

    def busy(array: str | None, when: float) -> list[str]:
        return [j.id for j in admitted if j.array == array and not ended_by(j.id, when)]

    def free_at(job: Job) -> float | None:
        """The earliest time the job could be released, as far as outcomes tell yet."""
        ends = [out[d.job_id].end if d.job_id in out else None for d in job.after]
        if any(e is None for e in ends):
            return None
        at = max([e for e in ends if e is not None], default=-math.inf)
        if job.array_limit is not None:
            taken = busy(job.array, max(at, t))
            if len(taken) >= job.array_limit:
                known = sorted(out[i].end for i in taken if i in out)
                extra = len(taken) - job.array_limit
                if len(known) <= extra:
                    return None
                at = max(at, known[extra])
        return max(at, t)

    while pending or running or queue or pullbacks or held:
        candidates = [e.deadline for e in queue if math.isfinite(e.deadline)]
        candidates += [r.end for r in running] + [at for at, _ in pullbacks]
        candidates += [a for a in map(free_at, held) if a is not None]
        if pending:
            candidates.append(pending[0].submit_time)
        t = min(candidates)
        for run in [r for r in running if r.end <= t]:
            running.remove(run)
            for i, size, cpus in run.parts:
                free[i] += size
                free_cpu[i] += cpus
        queue.sort()
        for entry in [e for e in queue if e.deadline <= t]:
            queue.remove(entry)
            burst(entry.job, t)
        arrived: list[Queued] = []
        for at, job in sorted([p for p in pullbacks if p[0] <= t], key=lambda p: p[1].id):
            pullbacks.remove((at, job))
            pulled.add(job.id)
            if never_fits(job):
                burst(job, t)
                continue
            budget = policy.star_requeue_budget(job, at)
            arrived.append(Queued(at, _tie(job), job, at + budget))
        while pending and pending[0].submit_time <= t:
            held.append(pending.pop(0))
        held.sort(key=_tie)
        for job in list(held):
            deps_met = all(ended_by(d.job_id, t) for d in job.after)
            limit = job.array_limit
            if not deps_met or (limit is not None and len(busy(job.array, t)) >= limit):
                continue
            held.remove(job)
            if limit is not None:
                admitted.append(job)
            if never_fits(job):  # waiting cannot help a job the empty cluster cannot hold
                burst(job, t)
                continue
            budget = policy.budget(job)
            arrived.append(
                Queued(t, _tie(job), job, t + budget if math.isfinite(budget) else math.inf)
            )
        queue = sorted(queue + arrived)
        waiting = []
        blocked = False
        for entry in queue:
            job = entry.job
            parts = None if blocked else _place(job, nodes, free, free_cpu, best_fit)
            if parts is None:
                never = (
                    _place(
                        job,
                        nodes,
                        [n.gpus if n.schedulable else 0 for n in nodes],
                        [n.cpus for n in nodes],
                        best_fit,
                    )
                    is None
                )
                if not blocked and never and math.isinf(entry.deadline):
                    burst(job, t)
                    continue
                waiting.append(entry)
                blocked = blocked or not out_of_order
                continue
            for i, size, cpus in parts:
                free[i] -= size
                free_cpu[i] -= cpus
            end = t + (job.runtime or 0.0)
            running.append(Running(end, job, parts, t))
            where = "cloud+onprem" if job.id in pulled else "onprem"
            out[job.id] = RefOutcome(
                job.id,
                where,
                t,
                end,
                cloud.get(job.id, 0.0),
                tuple(nodes[i].name for i, _, _ in parts),
            )
        queue = []
        for entry in waiting:
            if entry.deadline <= t:
                burst(entry.job, t)
            else:
                queue.append(entry)
        if queue_cap is not None:
            for entry in queue[queue_cap:]:
                burst(entry.job, t)
            queue = queue[:queue_cap]
    return out
