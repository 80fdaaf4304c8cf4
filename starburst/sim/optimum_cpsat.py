"""The offline optimum proven by constraint programming: OR-Tools CP-SAT.

The problem is ``sim.optimum``'s — every job runs in the cloud from its submit time (wait 0,
cost gpus × runtime) or on-prem from some start s ≥ submit (wait s − submit), the GPUs of the
on-prem jobs running at any instant never exceed the cluster's (GPUs pooled: node packing
relaxed), and Σ waits ≤ mean_wait_bound × n; minimise the cloud GPU-hours — but stated
exactly, in continuous time, instead of on check points:

- each job is an *optional interval* of fixed length (its runtime) whose start ranges over
  [submit, submit + W], W the whole wait budget; its presence literal says "on-prem";
- one *cumulative* constraint holds the present intervals' GPUs under the cluster's at every
  instant;
- a wait variable per job equals start − submit when present and 0 otherwise; their sum is
  at most the budget.

*Whole seconds*: CP-SAT works on integers. Submit times and runtimes are rounded **up** to
whole seconds and the budget down, so every solution is a real schedule of the original jobs
(their starts are no earlier than their submits, they occupy at least their true runtimes and
their true waits total at most the budget, less than a second per job above the counted one);
the optimum proven is that of this whole-second problem, and ``bound_gpu_hours`` is CP-SAT's
proven lower bound of it.

Invariants: the problem is always feasible (everything in the cloud); jobs wider than the
cluster or of zero runtime are fixed (cloud, free). Deterministic for a given ``workers`` and
time limit only where the search ends by proof; where the time limit stops it, the bound and
the incumbent depend on how far it got.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass

from starburst.core.errors import ConfigError
from starburst.core.job import Job


@dataclass(frozen=True, slots=True)
class ProvenOptimum:
    """The best schedule found (``cloud_gpu_hours``) and the proven lower bound."""

    cloud_gpu_hours: float
    bound_gpu_hours: float
    mean_wait_s: float
    burst_jobs: int
    status: str  # "optimal", "feasible" (time limit) or CP-SAT's status name
    solve_seconds: float
    price_per_gpu_hour: float = 2.5

    @property
    def gap(self) -> float:
        """(best − bound) / best: 0 when proven optimal."""
        if self.cloud_gpu_hours <= 0:
            return 0.0
        return (self.cloud_gpu_hours - self.bound_gpu_hours) / self.cloud_gpu_hours

    @property
    def cloud_cost_usd(self) -> float:
        return self.cloud_gpu_hours * self.price_per_gpu_hour

    @property
    def bound_usd(self) -> float:
        return self.bound_gpu_hours * self.price_per_gpu_hour


def prove_optimum(
    jobs: Sequence[Job],
    cluster_gpus: int,
    mean_wait_bound: float,
    *,
    time_limit: float = 600.0,
    relative_gap: float = 0.01,
    workers: int = 2,
    price_per_gpu_hour: float = 2.5,
    hint: Sequence[float | None] | None = None,
) -> ProvenOptimum:
    """Minimum cloud spend of ``jobs`` on ``cluster_gpus`` pooled GPUs with mean wait ≤
    ``mean_wait_bound`` seconds; stops once within ``relative_gap`` of the bound or at
    ``time_limit`` seconds. ``hint``: a start time per job (None: cloud), e.g. a heuristic's
    schedule, to start the search from."""
    from ortools.sat.python import cp_model

    if not jobs or cluster_gpus < 1 or not mean_wait_bound >= 0:
        raise ConfigError("the optimum needs jobs, a cluster of ≥ 1 GPU and a mean wait ≥ 0")
    budget = math.floor(mean_wait_bound * len(jobs))
    model = cp_model.CpModel()
    intervals, demands, present, waits, value = [], [], [], [], []
    fixed_cloud = 0
    for j, job in enumerate(jobs):
        runtime = math.ceil(job.runtime or 0.0)
        work = job.gpus * runtime
        if job.gpus == 0 or runtime == 0:
            continue
        if job.gpus > cluster_gpus:
            fixed_cloud += work
            continue
        submit = math.ceil(job.submit_time)
        on = model.new_bool_var(f"on{j}")
        start = model.new_int_var(submit, submit + budget, f"s{j}")
        wait = model.new_int_var(0, budget, f"w{j}")
        model.add(wait == start - submit).only_enforce_if(on)
        model.add(wait == 0).only_enforce_if(~on)
        intervals.append(model.new_optional_fixed_size_interval_var(start, runtime, on, f"i{j}"))
        demands.append(job.gpus)
        present.append(on)
        waits.append(wait)
        value.append(work)
        if hint is not None:
            h = hint[j]
            model.add_hint(on, h is not None)
            if h is not None:
                model.add_hint(start, min(max(math.ceil(h), submit), submit + budget))
    model.add_cumulative(intervals, demands, cluster_gpus)
    model.add(sum(waits) <= budget)
    total = sum(value)
    model.minimize(total - sum(v * p for v, p in zip(value, present, strict=True)))
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = time_limit
    solver.parameters.num_workers = workers
    solver.parameters.relative_gap_limit = relative_gap
    solver.parameters.linearization_level = 2  # the cumulative's energy cuts in the LP
    began = time.perf_counter()
    status = solver.solve(model)
    seconds = time.perf_counter() - began
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        raise ConfigError(f"CP-SAT found no schedule: {solver.status_name(status)}")
    on_prem = [solver.value(p) for p in present]
    wait_total = sum(solver.value(w) for w in waits)
    gpu_h = (solver.objective_value + fixed_cloud) / 3600.0
    bound_h = (solver.best_objective_bound + fixed_cloud) / 3600.0
    proven = status == cp_model.OPTIMAL and solver.best_objective_bound >= solver.objective_value
    return ProvenOptimum(
        cloud_gpu_hours=gpu_h,
        bound_gpu_hours=min(bound_h, gpu_h),
        mean_wait_s=wait_total / len(jobs),
        burst_jobs=len(jobs) - sum(on_prem) - sum(1 for j in jobs if j.gpus == 0),
        status="optimal" if proven else solver.status_name(status).lower(),
        solve_seconds=seconds,
        price_per_gpu_hour=price_per_gpu_hour,
    )
