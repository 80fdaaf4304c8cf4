"""The offline optimum proven by constraint programming: OR-Tools CP-SAT.

The problem is ``sim.optimum``'s — every job runs in the cloud from its submit time (wait 0,
cost gpus × runtime) or on-prem from some start s ≥ submit (wait s − submit), the GPUs of the
on-prem jobs running at any instant never exceed the cluster's (GPUs pooled: node packing
relaxed), and Σ waits ≤ mean_wait_bound × n; minimise the cloud GPU-hours — but stated
exactly, in continuous time, instead of on check points:

- each job is an *optional interval* of fixed length (its runtime) whose start ranges over
  [submit, submit + W], W the whole wait budget; its presence literal says "on-prem", and a
  job in the cloud has its start pinned to its submit, so Σ (start − submit) is the total wait
  without a big-M link;
- one *cumulative* constraint holds the present intervals' GPUs under the cluster's at every
  instant.

*Whole seconds*: CP-SAT works on integers, so each time is rounded, in one of two ways:
- the *restricted* model rounds submit times and runtimes **up** and the budget down, less
  the fractions of a second the submits were rounded up by (it counts each wait from the
  rounded submit, up to a second short of the true one): every solution is a real schedule of
  the original jobs (its starts are no earlier than their submits, each occupies at least its
  true runtime, the true waits total at most the budget),
  so its best solution is an **upper** bound on the optimum;
- the *relaxed* model rounds submit times up, runtimes **down**, charges cloud jobs their
  whole seconds only, and grants the budget n − 1 seconds more (ceil(B + n) − 1): a real
  schedule, its starts rounded up, is a solution of it (it covers only integer instants the
  real one covers; each rounded wait is less than a second longer), so its proven bound is a
  **lower** bound on the optimum.
When every submit time and runtime is a whole number of seconds the two are one model (a
schedule can always be shifted left until each start is a submit or another job's end, a
whole second, without raising any wait or crowding any instant): one solve, exact. Otherwise
the time limit is split between the two solves.

Invariants: the problem is always feasible (everything in the cloud); jobs wider than the
cluster or of zero runtime are fixed (cloud, free); ``bound_gpu_hours`` ≤ the optimum ≤
``cloud_gpu_hours``, and ``status`` is "optimal" only when they are equal. Deterministic for
a given ``workers`` and time limit only where the search ends by proof; where the time limit
stops it, the bound and the incumbent depend on how far it got.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from starburst.core.errors import ConfigError
from starburst.core.job import Job


@dataclass(frozen=True, slots=True)
class ProvenOptimum:
    """The best schedule found (``cloud_gpu_hours``) and the proven lower bound."""

    cloud_gpu_hours: float
    bound_gpu_hours: float
    mean_wait_s: float
    burst_jobs: int
    #: "optimal" (bound = best); "rounding" (both whole-second models solved: the gap is the
    #: rounding of fractional seconds); "stopped" (the time limit or the relative gap ended it)
    status: str
    solve_seconds: float
    price_per_gpu_hour: float = 2.5
    #: the best schedule: each job's on-prem start, None for the cloud (empty: not kept)
    starts: tuple[float | None, ...] = ()

    @property
    def gap(self) -> float:
        """(best − bound) / best: 0 when proven optimal."""
        if self.cloud_gpu_hours <= 0:
            return 0.0
        return (self.cloud_gpu_hours - self.bound_gpu_hours) / self.cloud_gpu_hours

    @property
    def proven(self) -> bool:
        """Whether the bound meets the best schedule: the optimum itself."""
        return self.bound_gpu_hours >= self.cloud_gpu_hours

    @property
    def cloud_cost_usd(self) -> float:
        return self.cloud_gpu_hours * self.price_per_gpu_hour

    @property
    def bound_usd(self) -> float:
        return self.bound_gpu_hours * self.price_per_gpu_hour


@dataclass(frozen=True, slots=True)
class _Solved:
    """One model's answer, in GPU-seconds of that model's whole-second data."""

    best: float
    bound: float
    wait_s: int
    on_prem: int
    closed: bool  # the search proved this model's optimum (bound = best)
    starts: tuple[float | None, ...]  # per job: the start, None for the cloud


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
    if not jobs or cluster_gpus < 1 or not mean_wait_bound >= 0:
        raise ConfigError("the optimum needs jobs, a cluster of ≥ 1 GPU and a mean wait ≥ 0")
    if not math.isfinite(mean_wait_bound) or any(
        j.runtime is None or not math.isfinite(j.runtime) or j.runtime < 0 for j in jobs
    ):
        raise ConfigError("the optimum needs every job's runtime and a finite mean wait")
    budget = mean_wait_bound * len(jobs)
    whole = all(
        float(j.submit_time).is_integer() and float(j.runtime or 0).is_integer() for j in jobs
    )
    began = time.perf_counter()
    share = time_limit if whole else time_limit / 2
    solve = _Solver(cluster_gpus, share, relative_gap, workers)
    # the restricted model counts each wait from the submit rounded up: the fractions it
    # leaves out come off its budget, so its schedules keep the real waits within the bound
    fractions = math.fsum(math.ceil(j.submit_time) - j.submit_time for j in jobs)
    upper = solve(jobs, math.floor(budget - fractions + 1e-7), math.ceil, hint)
    lower = upper if whole else solve(jobs, math.ceil(budget + len(jobs)) - 1, math.floor, None)
    best_h, bound_h = upper.best / 3600.0, min(lower.bound / 3600.0, upper.best / 3600.0)
    proven = bound_h >= best_h
    status = "optimal" if proven else "rounding" if upper.closed and lower.closed else "stopped"
    return ProvenOptimum(
        cloud_gpu_hours=best_h,
        bound_gpu_hours=bound_h,
        mean_wait_s=upper.wait_s / len(jobs),
        burst_jobs=len(jobs) - upper.on_prem - sum(1 for j in jobs if j.gpus == 0),
        status=status,
        solve_seconds=time.perf_counter() - began,
        price_per_gpu_hour=price_per_gpu_hour,
        starts=upper.starts,
    )


def search_schedule(
    jobs: Sequence[Job],
    cluster_gpus: int,
    mean_wait_bound: float,
    *,
    time_limit: float,
    workers: int = 1,
    hint: Sequence[float | None] | None = None,
) -> tuple[float | None, ...]:
    """The best schedule the restricted model reaches in ``time_limit`` seconds (no bound is
    sought): a start per job, None for the cloud."""
    budget = mean_wait_bound * len(jobs)
    fractions = math.fsum(math.ceil(j.submit_time) - j.submit_time for j in jobs)
    solve = _Solver(cluster_gpus, time_limit, 0.0, workers)
    return solve(jobs, math.floor(budget - fractions + 1e-7), math.ceil, hint).starts


@dataclass(frozen=True, slots=True)
class _Solver:
    gpus: int
    time_limit: float
    relative_gap: float
    workers: int

    def __call__(
        self,
        jobs: Sequence[Job],
        budget: int,
        length: Any,
        hint: Sequence[float | None] | None,
    ) -> _Solved:
        """Solve with runtimes rounded by ``length`` (``math.ceil``: the restricted model,
        ``math.floor``: the relaxed one) and ``budget`` whole seconds of wait in all."""
        from ortools.sat.python import cp_model

        model = cp_model.CpModel()
        intervals, demands, present, waits, value = [], [], [], [], []
        placed: dict[int, tuple[Any, Any]] = {}
        fixed_cloud = 0
        for j, job in enumerate(jobs):
            runtime = int(length(job.runtime or 0.0))
            work = job.gpus * runtime
            if job.gpus == 0 or runtime == 0:
                continue
            if job.gpus > self.gpus:
                fixed_cloud += work
                continue
            submit = math.ceil(job.submit_time)
            on = model.new_bool_var(f"on{j}")
            start = model.new_int_var(submit, submit + budget, f"s{j}")
            model.add(start == submit).only_enforce_if(~on)  # a cloud job waits 0
            intervals.append(
                model.new_optional_fixed_size_interval_var(start, runtime, on, f"i{j}")
            )
            demands.append(job.gpus)
            present.append(on)
            placed[j] = (on, start)
            waits.append(start - submit)
            value.append(work)
            if hint is not None:
                h = hint[j]
                model.add_hint(on, h is not None)
                model.add_hint(
                    start, submit if h is None else min(max(math.ceil(h), submit), submit + budget)
                )
        model.add_cumulative(intervals, demands, self.gpus)
        model.add(sum(waits) <= budget)
        model.minimize(sum(value) - sum(v * p for v, p in zip(value, present, strict=True)))
        solver = cp_model.CpSolver()
        solver.parameters.max_time_in_seconds = self.time_limit
        solver.parameters.num_workers = self.workers
        solver.parameters.relative_gap_limit = self.relative_gap
        solver.parameters.linearization_level = 2  # the cumulative's energy cuts in the LP
        status = solver.solve(model)
        if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            raise ConfigError(f"CP-SAT found no schedule: {solver.status_name(status)}")
        return _Solved(
            best=solver.objective_value + fixed_cloud,
            bound=max(0.0, solver.best_objective_bound) + fixed_cloud,
            wait_s=sum(int(solver.value(w)) for w in waits),
            on_prem=sum(solver.value(p) for p in present),
            closed=status == cp_model.OPTIMAL
            and solver.best_objective_bound >= solver.objective_value,
            starts=tuple(_start(solver, placed.get(j), job) for j, job in enumerate(jobs)),
        )


def _start(solver: Any, placed: tuple[Any, Any] | None, job: Job) -> float | None:
    """The job's start in the solution; a free job (no GPUs or no runtime) runs at its submit,
    a job wider than the cluster in the cloud."""
    if placed is None:
        return job.submit_time if job.gpus == 0 or not job.runtime else None
    on, start = placed
    return float(solver.value(start)) if solver.value(on) else None
